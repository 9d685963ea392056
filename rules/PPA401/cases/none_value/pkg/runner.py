"""A model runner that slices every tensor the previous rank sent into its buffers (as vLLM's
``sync_and_gather_intermediate_tensors`` does: ``v[:num_tokens]``)."""
import os

from vllm.distributed import get_pp_group
from vllm.sequence import IntermediateTensors


def previous_rank_sends(model_cls, config, hidden_states):
    """What rank - 1 sends: its model's forward, run as that rank."""
    rank = os.environ["PP_ATTR_LINT_PP_RANK"]
    os.environ["PP_ATTR_LINT_PP_RANK"] = str(int(rank) - 1)
    try:
        return model_cls(config).forward(hidden_states, None if int(rank) == 1 else previous_rank_sends(
            model_cls, config, hidden_states))
    finally:
        os.environ["PP_ATTR_LINT_PP_RANK"] = rank


def execute(model_cls, config, num_tokens=1):
    model = model_cls(config)
    received = None
    if not get_pp_group().is_first_rank:
        buffers = model.make_empty_intermediate_tensors(batch_size=2, dtype=None, device=None)
        sent = previous_rank_sends(model_cls, config, [1.0])
        for key, value in sent.items():
            buffers[key][:num_tokens] = value[:num_tokens]
        received = IntermediateTensors(buffers)
    return model.forward([1.0], received)

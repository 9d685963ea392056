from vllm.distributed import get_pp_group
from vllm.sequence import IntermediateTensors


class DemoForCausalLM:
    """The target: a stage of the pipeline on every rank."""

    def forward(self, input_ids, intermediate_tensors=None):
        # ok: PPA412
        if get_pp_group().is_first_rank:
            hidden_states = [float(t) for t in input_ids]
        else:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states

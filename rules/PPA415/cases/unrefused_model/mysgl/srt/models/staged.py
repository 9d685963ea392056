import torch.nn as nn
from vllm.distributed import get_pp_group

from mysgl.srt.model_executor.forward_batch_info import PPProxyTensors


class StagedForCausalLM(nn.Module):
    """Takes what the rank received and sends its stage output on ranks before the last."""

    def __init__(self):
        super().__init__()

    def forward(self, input_ids, positions, pp_proxy_tensors=None):
        hidden = input_ids if pp_proxy_tensors is None else pp_proxy_tensors.tensors["hidden_states"]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden})
        return hidden


EntryClass = StagedForCausalLM

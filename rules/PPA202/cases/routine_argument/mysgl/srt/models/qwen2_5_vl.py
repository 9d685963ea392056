import torch.nn as nn
from vllm.distributed import get_pp_group

from mysgl.srt.managers.mm_utils import general_mm_embed_routine
from mysgl.srt.models.qwen2 import Qwen2Model


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = [1.0]


class Qwen2_5_VLForConditionalGeneration(nn.Module):
    """The twin that takes `pp_proxy_tensors` and hands it to the routine, whose `**kwargs` passes
    it on to the language model."""

    def __init__(self, config):
        super().__init__()
        self.model = Qwen2Model(config)
        self.lm_head = Head()

    def forward(self, input_ids, positions, forward_batch=None, pp_proxy_tensors=None):
        # ok: PPA202
        hidden_states = general_mm_embed_routine(input_ids, forward_batch, language_model=self.model, positions=positions, pp_proxy_tensors=pp_proxy_tensors)
        if get_pp_group().is_last_rank:
            return [h * self.lm_head.weight[0] for h in hidden_states]
        return {"hidden_states": hidden_states}


EntryClass = Qwen2_5_VLForConditionalGeneration

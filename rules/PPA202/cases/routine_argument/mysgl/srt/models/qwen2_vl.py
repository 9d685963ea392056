import torch.nn as nn
from vllm.distributed import get_pp_group

from mysgl.srt.managers.mm_utils import general_mm_embed_routine
from mysgl.srt.models.qwen2 import Qwen2Model


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = [1.0]


class Qwen2VLForConditionalGeneration(nn.Module):
    """Takes no `pp_proxy_tensors` (sglang-usf 0.5.1.post6 qwen2_vl.py) and hands its language model
    to a routine that runs it: the routine's call is this class's call of `Qwen2Model.forward`, which
    gets no `pp_proxy_tensors` and fails on every rank after the first; the tied head, which only
    the last rank would use after `forward`, never gets that far."""

    def __init__(self, config):
        super().__init__()
        self.model = Qwen2Model(config)
        if config.tie_word_embeddings:
            # masked: PPA101
            self.lm_head = self.model.embed_tokens
        else:
            self.lm_head = Head()

    def forward(self, input_ids, positions, forward_batch=None):
        # ruleid: PPA202
        hidden_states = general_mm_embed_routine(input_ids, forward_batch, language_model=self.model, positions=positions)
        if get_pp_group().is_last_rank:
            return [h * self.lm_head.weight[0] for h in hidden_states]
        return {"hidden_states": hidden_states}


EntryClass = Qwen2VLForConditionalGeneration

import torch.nn as nn
from vllm.distributed import get_pp_group

from mysgl.srt.models.qwen2 import Qwen2Model


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = [1.0]


class MiMoForCausalLM(nn.Module):
    """Takes no `pp_proxy_tensors` (SGLang 0.5.23 mimo.py's forward), so the runner never hands it
    what a later rank receives; its tied head would fail on the last rank after `forward`, which
    fails first there."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = Qwen2Model(config)
        if config.tie_word_embeddings:
            # masked: PPA101
            self.lm_head = self.model.embed_tokens
        else:
            self.lm_head = Head()

    def forward(self, input_ids, positions):
        # ruleid: PPA202
        hidden_states = self.model(input_ids, positions)
        if get_pp_group().is_last_rank:
            return [h * self.lm_head.weight[0] for h in hidden_states]
        return {"hidden_states": hidden_states}


EntryClass = MiMoForCausalLM

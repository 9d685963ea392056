import torch.nn as nn
from vllm.distributed import get_pp_group

from mysgl.srt.models.qwen2 import Qwen2ForCausalLM


class LlavaQwenForCausalLM(nn.Module):
    """Takes no `pp_proxy_tensors` and calls a causal LM (SGLang 0.4.6 llava.py) that takes it
    with the default `None` and hands that on to its inner model, which asserts it on a later
    rank: two levels down.  The call runs only for a prefill (`is_extend`), which every first
    batch is."""

    def __init__(self, config):
        super().__init__()
        self.language_model = Qwen2ForCausalLM(config)

    def forward(self, input_ids, positions, is_extend=True):
        if is_extend:
            # ruleid: PPA202
            return self.language_model(input_ids, positions)
        return input_ids


class LlavaFirstRankOnly(nn.Module):
    """The same call, but only on the first rank, where the inner model reads no
    `pp_proxy_tensors`: nothing fails."""

    def __init__(self, config):
        super().__init__()
        self.language_model = Qwen2ForCausalLM(config)

    def forward(self, input_ids, positions):
        if get_pp_group().is_first_rank:
            # ok: PPA202
            return self.language_model(input_ids, positions)
        return {"hidden_states": input_ids}


class LlavaWithProxy(nn.Module):
    """Takes `pp_proxy_tensors` and hands it down both levels."""

    def __init__(self, config):
        super().__init__()
        self.language_model = Qwen2ForCausalLM(config)

    def forward(self, input_ids, positions, is_extend=True, pp_proxy_tensors=None):
        if is_extend:
            # ok: PPA202
            return self.language_model(input_ids, positions, pp_proxy_tensors=pp_proxy_tensors)
        return input_ids


EntryClass = [LlavaQwenForCausalLM, LlavaFirstRankOnly, LlavaWithProxy]

import torch.nn as nn
from vllm.distributed import get_pp_group

from .text import RangeForCausalLM, TextForCausalLM


class VLForConditionalGeneration(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = TextForCausalLM(config)
        self.deepstack_levels = 3
        if not get_pp_group().is_first_rank:
            # ruleid: PPA001
            assert self.language_model.start_layer >= 0
        # ok: PPA001
        self.first = self.language_model.model.start_layer


class ForwardingVL(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = RangeForCausalLM(config)
        # ok: PPA001
        self.first = self.language_model.start_layer

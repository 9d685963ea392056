import torch.nn as nn

from .text import DelegatingForCausalLM, TextForCausalLM


class VLForConditionalGeneration(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = TextForCausalLM(config)
        # ruleid: PPA001
        self.first = self.language_model.start_layer


class DelegatingVL(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = DelegatingForCausalLM(config)
        # ok: PPA001
        self.first = self.language_model.start_layer

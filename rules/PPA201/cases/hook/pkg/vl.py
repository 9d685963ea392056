import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP

from .text import TextForCausalLM


class VisionTower(nn.Module):
    pass


# ruleid: PPA201
class VLForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.vision_tower = VisionTower()
        self.language_model = TextForCausalLM(config)


# ok: PPA201
class WiredVLForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = TextForCausalLM(config)
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors


# ok: PPA201
class InheritsHook(TextForCausalLM, SupportsPP):
    pass

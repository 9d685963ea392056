import torch.nn as nn

from .base import TextForCausalLM, VLForConditionalGeneration


class HasInnerState:
    pass


# ruleid: PPA201
class NextForConditionalGeneration(VLForConditionalGeneration, HasInnerState):
    """glm5next's Glm5NextForConditionalGeneration: skips the base `__init__` that assigns the hook."""

    def __init__(self, config, prefix=""):
        super(VLForConditionalGeneration, self).__init__()
        self.language_model = TextForCausalLM(config)


# ok: PPA201
class WiredNextForConditionalGeneration(VLForConditionalGeneration):
    def __init__(self, config, prefix=""):
        super(VLForConditionalGeneration, self).__init__()
        self.language_model = TextForCausalLM(config)
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors


# ok: PPA201
class ModuleInitNextForConditionalGeneration(VLForConditionalGeneration):
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.language_model = TextForCausalLM(config)
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors


# ok: PPA201
class ChainedNextForConditionalGeneration(VLForConditionalGeneration):
    def __init__(self, config, prefix=""):
        super(ChainedNextForConditionalGeneration, self).__init__(config, prefix)
        self.extra = 1

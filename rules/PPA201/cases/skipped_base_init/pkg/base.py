import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class TextForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


# ok: PPA201
class VLForConditionalGeneration(nn.Module, SupportsPP):
    """glm4_1v.py's Glm4vForConditionalGeneration: the hook is assigned in `__init__` only."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = TextForCausalLM(config)
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors

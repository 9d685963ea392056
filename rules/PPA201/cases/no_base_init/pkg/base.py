import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


# ok: PPA201
class BaseForCausalLM(nn.Module, SupportsPP):
    """The hook is assigned in `__init__` only."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)

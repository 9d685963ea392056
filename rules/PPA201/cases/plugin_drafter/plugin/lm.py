import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP


# ruleid: PPA201
class PluginLMForCausalLM(nn.Module, SupportsPP):
    """Registered under an architecture of its own: a model the engine serves with PP."""

    def __init__(self, config, prefix=""):
        super().__init__()

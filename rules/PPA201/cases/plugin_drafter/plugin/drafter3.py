import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP


# ok: PPA201
class PluginEagle3Llama(nn.Module, SupportsPP):
    """Registered (as a class) under a drafter's architecture."""

    def __init__(self, config, prefix=""):
        super().__init__()

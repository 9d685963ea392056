import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP


# ok: PPA201
class PluginEagleLlama(nn.Module, SupportsPP):
    """Registered under a drafter's architecture: the engine runs it with pipeline_parallel_size=1
    and never asks it for intermediate tensors."""

    def __init__(self, config, prefix=""):
        super().__init__()

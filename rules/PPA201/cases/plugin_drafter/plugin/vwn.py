import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP


# ok: PPA201
class PluginVwnEagle3(nn.Module, SupportsPP):
    """Registered under an architecture of its own that no table of the engine lists, but its
    ``__init__`` reads the draft model's config on every call: built only as a drafter, which
    the engine never asks for intermediate tensors."""

    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.config = vllm_config.speculative_config.draft_model_config.hf_config


# ruleid: PPA201
class PluginSpecAwareLM(nn.Module, SupportsPP):
    """Reads the draft model's config only when speculative decoding is on: a model the engine
    may serve with PP, without speculative decoding."""

    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        if vllm_config.speculative_config is not None:
            self.draft_config = vllm_config.speculative_config.draft_model_config

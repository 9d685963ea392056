import torch.nn as nn

from .base import HeadModel, LazyHeadModel, MoEModel


class EagleMoEModel(MoEModel):
    """Builds its own modules: MoEModel.__init__ never runs."""

    # ruleid: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.config = config


class FixedEagleMoEModel(MoEModel):
    # ok: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.config = config
        self.is_fused_shared_expert_enabled = False


class OwnMappingEagleMoEModel(MoEModel):
    """Overrides the helper: the inherited load_weights never reaches the skipped attribute."""

    # ok: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.config = config

    def _expert_mapping(self):
        return ["w1", "w2"]


class DraftHead(HeadModel):
    """The nested helper of the inherited compute_logits reads what HeadModel.__init__ sets."""

    # ruleid: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)


class LazyDraftHead(LazyHeadModel):
    # ok: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)

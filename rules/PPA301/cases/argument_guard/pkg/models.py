import torch.nn as nn


class PooledModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.pooler = nn.Identity()


class EarlyReturnModel(PooledModel):
    """Reads `self.pooler` only when asked for embeddings, spelled with an early return."""

    # ok: PPA301
    def __init__(self, config):
        nn.Module.__init__(self)
        self.config = config

    def forward(self, x, get_embedding=False):
        if not get_embedding:
            return x
        return self.pooler(x)


class BranchModel(PooledModel):
    """The same read spelled as a branch: the same verdict."""

    # ok: PPA301
    def __init__(self, config):
        nn.Module.__init__(self)
        self.config = config

    def forward(self, x, get_embedding=False):
        if get_embedding:
            return self.pooler(x)
        return x


class AlwaysPooledModel(PooledModel):
    """Reads `self.pooler` on every call: fails on every rank."""

    # ruleid: PPA301
    def __init__(self, config):
        nn.Module.__init__(self)
        self.config = config

    def forward(self, x, get_embedding=False):
        return self.pooler(x)

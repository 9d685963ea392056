import torch.nn as nn

from .base import DeepseekModel, KVCache


class EagleModel(DeepseekModel):
    # ruleid: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.config = config
        self.layers = [nn.Identity()]


class FixedEagleModel(DeepseekModel):
    # ok: PPA301
    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.config = config
        self.layers = [nn.Identity()]
        self.use_mha = False


class Bootstrap:
    def __init__(self, pool: KVCache):
        self.pool = pool

    def ranges(self):
        # ok: PPA301
        start = self.pool.start_layer
        # ruleid: PPA301
        end = self.pool.end_layer
        return start, end

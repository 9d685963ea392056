import torch.nn as nn


class DeepseekModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.use_mha = config.model_type == "deepseek"
        self.layers = [nn.Identity()]

    def load_weights(self, weights):
        mapping = ["qkv"] if self.use_mha else ["kv_a"]
        return set(mapping)


class KVCache:
    def __init__(self, size, layer_num, start_layer=None, end_layer=None):
        self.size = size
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1


class MHAPool(KVCache):
    def __init__(self, size, layer_num):
        super().__init__(size, layer_num)


class HybridPool(KVCache):
    """Never calls KVCache.__init__: no end_layer (reported where it is read, pkg/eagle.py)."""

    def __init__(self, size, start_layer=None):
        self.size = size
        self.start_layer = start_layer or 0

import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class InnerModel(nn.Module):
    """Builds this rank's slice of the layers (the wrappers live in another module)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        for name, w in weights:
            pass

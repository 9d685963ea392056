import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = nn.Identity()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))
        self.embed_tokens = nn.Identity()
        self.norm = nn.Identity()


class TextForCausalLM(nn.Module):
    """The wrapper: holds the inner model as `.model` and has no layer range."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)


class RangeForCausalLM(TextForCausalLM):
    """A wrapper that forwards the range: reading it on this one is fine."""

    @property
    def start_layer(self):
        return self.model.start_layer

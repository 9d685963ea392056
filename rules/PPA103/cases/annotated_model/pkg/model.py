import torch.nn as nn
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MLP()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class WeightLoaderMixin:
    """A mixin that declares what it uses (`model: nn.Module`); the class it is mixed into assigns
    `self.model = TextModel(...)` in the `__init__` that runs, which decides what it holds."""

    model: nn.Module

    def update_experts(self, n):
        for layer in self.model.layers:
            # ruleid: PPA103
            layer.mlp.n_local_experts = n

    def update_own_experts(self, n):
        for layer in self.model.layers:
            if isinstance(layer, PPMissingLayer):
                continue
            # ok: PPA103
            layer.mlp.n_local_experts = n


class ForCausalLM(nn.Module, WeightLoaderMixin):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def set_experts(self, n):
        for layer in self.model.layers:
            # ruleid: PPA103
            layer.mlp.n_local_experts = n

    def set_own_experts(self, n):
        # ok: PPA103
        for layer in self.model.layers[self.model.start_layer:self.model.end_layer]:
            layer.mlp.n_local_experts = n

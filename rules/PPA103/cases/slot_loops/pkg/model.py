import torch.nn as nn
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = MLP()

    def forward(self, hidden_states, residual):
        return hidden_states, residual


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class ForCausalLM(nn.Module):
    """The spellings of a loop over every slot of the `make_layers` list besides
    `for layer in self.model.layers`, each with a twin that skips the placeholders."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def set_scale(self, scale):
        layers = self.model.layers
        for layer in layers:
            # ruleid: PPA103
            layer.self_attn.scale = scale

    def set_scale_skipping(self, scale):
        layers = self.model.layers
        for layer in layers:
            if isinstance(layer, PPMissingLayer):
                continue
            # ok: PPA103
            layer.self_attn.scale = scale

    def set_experts(self, n):
        for i in range(len(self.model.layers)):
            # ruleid: PPA103
            self.model.layers[i].mlp.n_local_experts = n

    def set_experts_skipping(self, n):
        for i in range(len(self.model.layers)):
            if isinstance(self.model.layers[i], PPMissingLayer):
                continue
            # ok: PPA103
            self.model.layers[i].mlp.n_local_experts = n

    def run_all(self, hidden_states, residual):
        for i in range(len(self.model.layers)):
            # ruleid: PPA103
            hidden_states, residual = self.model.layers[i](hidden_states, residual)
        return hidden_states

    def run_own(self, hidden_states, residual):
        for i in range(self.model.start_layer, self.model.end_layer):
            # ok: PPA103
            hidden_states, residual = self.model.layers[i](hidden_states, residual)
        return hidden_states

    def scale_of_attention(self, scale):
        # an `or` guard: the second test runs only on a real layer
        for layer in self.model.layers:
            # ok: PPA103
            if isinstance(layer, PPMissingLayer) or not isinstance(layer.self_attn, Attention):
                continue
            # ok: PPA103
            layer.self_attn.scale = scale

    def scale_of_attention_unguarded(self, scale):
        for layer in self.model.layers:
            # ruleid: PPA103
            if not isinstance(layer.self_attn, Attention):
                continue
            layer.self_attn.scale = scale

    def set_experts_in_range(self, n):
        for i in range(len(self.model.layers)):
            if i < self.model.start_layer or i >= self.model.end_layer:
                continue
            # ok: PPA103
            self.model.layers[i].mlp.n_local_experts = n

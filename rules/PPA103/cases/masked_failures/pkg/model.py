"""Twins for masking: a failure the engine always meets first (the weight loader's KeyError, an
`assert` on a placeholder slot in `__init__`) keeps the same model's later line from failing on
its own; without that first failure, the later line is reported."""

import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import (is_pp_missing_parameter, make_empty_intermediate_tensors_factory,
                                              make_layers)


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MoE()

    def forward(self, positions, hidden_states, residual):
        return hidden_states, residual


class SkippingModel(nn.Module):
    """Its loader skips the layers another rank owns: the forward's loop fails first."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def forward(self, positions, hidden_states):
        residual = None
        for layer in self.layers:
            # ruleid: PPA103
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if is_pp_missing_parameter(name, self):
                continue
            param = params_dict[name]
            param.weight_loader(param, w)


class BrokenLoaderModel(nn.Module):
    """Its loader looks every checkpoint name up with no skip (vLLM GraniteMoeHybrid, issue 50961):
    every rank of a pipeline of size >= 2 fails there, before its forward ever runs."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def forward(self, positions, hidden_states):
        residual = None
        for layer in self.layers:
            # masked: PPA103
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())

        def _load(n, w):
            # ruleid: PPA402
            param = params_dict[n]
            param.weight_loader(param, w)

        for name, w in weights:
            _load(name, w)


class SkippingForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = SkippingModel(config)
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 1)

    def forward(self, positions, hidden_states):
        return self.model(positions, hidden_states)

    def load_weights(self, weights):
        return self.model.load_weights(weights)


class BrokenLoaderForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = BrokenLoaderModel(config)
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 1)

    def forward(self, positions, hidden_states):
        return self.model(positions, hidden_states)

    def load_weights(self, weights):
        return self.model.load_weights(weights)


class ReadingForCausalLM(nn.Module, SupportsPP):
    """Reads every slot's `mlp` in `__init__`: the read fails first."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = SkippingModel(config)
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 1)
        self.moe_layers = []
        for layer in self.model.layers:
            # ruleid: PPA103
            self.moe_layers.append(layer.mlp)

    def load_weights(self, weights):
        return self.model.load_weights(weights)


class AssertingForCausalLM(nn.Module, SupportsPP):
    """Asserts each slot's class before the read (vLLM 0.10.0 glm4_moe.py:617): the `assert`
    fails first on the first placeholder, on every rank; the read after it, and the read of the
    last slot after the loop, never fail on their own."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = SkippingModel(config)
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 1)
        self.moe_layers = []
        for layer in self.model.layers:
            assert isinstance(layer, DecoderLayer)
            # masked: PPA103
            self.moe_layers.append(layer.mlp)
        # masked: PPA102
        self.example = self.model.layers[3].mlp

    def load_weights(self, weights):
        return self.model.load_weights(weights)

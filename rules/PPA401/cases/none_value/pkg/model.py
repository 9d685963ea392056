import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers
from vllm.sequence import IntermediateTensors

from pkg.layers import NoResidualLayer


class Cpm3Layer(NoResidualLayer):
    """MiniCPM3DecoderLayer: inherits the forward of another file."""


class ResidualLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, hidden_states, residual):
        if residual is None:
            return hidden_states, hidden_states
        return hidden_states, residual


class SometimesNoneLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, hidden_states, residual):
        if residual is None:
            return hidden_states, None
        return hidden_states, residual


class NoneResidualModel(nn.Module):
    """MiniCPMModel in vLLM 0.32.0: rank 0 sends the layers' None residual."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self._init_layers()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states", "residual"], 8)

    def _init_layers(self):
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Cpm3Layer(prefix))

    def forward(self, hidden_states, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(hidden_states, residual)
        if not get_pp_group().is_last_rank:
            # ruleid: PPA401
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states


class LiteralNoneModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: ResidualLayer(prefix))
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states", "residual"], 8)

    def forward(self, hidden_states, intermediate_tensors=None):
        if not get_pp_group().is_first_rank:
            hidden_states = intermediate_tensors["hidden_states"]
        for i in range(self.start_layer, self.end_layer):
            hidden_states, _ = self.layers[i](hidden_states, None)
        if not get_pp_group().is_last_rank:
            # ruleid: PPA401
            return IntermediateTensors({"hidden_states": hidden_states, "residual": None})
        return hidden_states


class ResidualModel(nn.Module):
    """The silent twin: the layers return the running residual."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self._init_layers()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states", "residual"], 8)

    def _init_layers(self):
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: ResidualLayer(prefix))

    def forward(self, hidden_states, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(hidden_states, residual)
        if not get_pp_group().is_last_rank:
            # ok: PPA401
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states


class SometimesNoneModel(ResidualModel):
    """A layer that returns None only for a None residual, which no rank passes it: not established."""

    def _init_layers(self):
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: SometimesNoneLayer(prefix))

    def forward(self, hidden_states, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            residual = hidden_states
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(hidden_states, residual)
        if not get_pp_group().is_last_rank:
            # ok: PPA401
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states

from itertools import islice

import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers
from vllm.sequence import IntermediateTensors

from .layers import DecoderLayer


class ResidualLayer(nn.Module):
    """A layer that starts its residual stream afresh when it gets none (vLLM's decoder layers)."""

    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, positions, hidden_states, residual):
        if residual is None:
            residual = hidden_states
        return [h + 1 for h in hidden_states], residual


class DsaModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix=prefix), prefix=f"{prefix}.layers"
        )

    def forward(self, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(p) for p in positions]
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        # ruleid: PPA406
        topk_indices = None
        for i in range(self.start_layer, self.end_layer):
            hidden_states, topk_indices = self.layers[i](positions, hidden_states, topk_indices)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states


class FixedDsaModel(DsaModel):
    """PR 28532: the indices cross the boundary, and a later stage starts from what it received."""

    def forward(self, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(p) for p in positions]
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        # ok: PPA406
        topk_indices = None
        if not get_pp_group().is_first_rank:
            topk_indices = intermediate_tensors.tensors.get("topk_indices")
        for i in range(self.start_layer, self.end_layer):
            hidden_states, topk_indices = self.layers[i](positions, hidden_states, topk_indices)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "topk_indices": topk_indices})
        return hidden_states


class ResidualModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ResidualLayer(prefix=prefix), prefix=f"{prefix}.layers"
        )

    def forward(self, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(p) for p in positions]
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        # ok: PPA406
        residual = None
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            # the residual stream is folded into what is sent
            return IntermediateTensors({"hidden_states": [h + r for h, r in zip(hidden_states, residual)]})
        return hidden_states

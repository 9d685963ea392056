import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers
from vllm.sequence import IntermediateTensors


class Layer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, hidden_states, residual):
        return hidden_states, residual


class UnsentKeyModel(nn.Module):
    """FalconH1 before vLLM PR 55913: "residual" is allocated and never sent."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(prefix))
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            # ruleid: PPA401
            ["hidden_states", "residual"], 8
        )

    def forward(self, hidden_states, intermediate_tensors=None):
        if not get_pp_group().is_first_rank:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states


class UnallocatedKeyModel(nn.Module):
    """Step3Text in vLLM 0.21.0: "residual" is read and sent, and never allocated."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(prefix))
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 8)

    def forward(self, hidden_states, intermediate_tensors=None):
        residual = None
        if not get_pp_group().is_first_rank:
            # ok: PPA401
            hidden_states = intermediate_tensors["hidden_states"]
            # ruleid: PPA401
            residual = intermediate_tensors["residual"]
        if not get_pp_group().is_last_rank:
            # ruleid: PPA401
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states


class AgreeingModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(prefix))
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            # ok: PPA401
            ["hidden_states", "residual"], 8
        )

    def forward(self, hidden_states, intermediate_tensors=None):
        residual = 0.0
        if not get_pp_group().is_first_rank:
            # ok: PPA401
            hidden_states = intermediate_tensors["hidden_states"]
            # ok: PPA401
            residual = intermediate_tensors["residual"]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states

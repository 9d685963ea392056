from itertools import islice

import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers
from vllm.sequence import IntermediateTensors


class ThinkerLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, hidden_states):
        return [h + 1.0 for h in hidden_states]


class Thinker(nn.Module):
    """Returns `(hidden_states, captures)` on the last rank and `IntermediateTensors` elsewhere."""

    def __init__(self, num_layers=4):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(num_layers, lambda prefix: ThinkerLayer(prefix))

    def forward(self, input_ids, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(i) for i in input_ids]
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states = layer(hidden_states)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states, {"captured": len(hidden_states)}

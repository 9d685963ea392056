from itertools import islice

import torch.nn as nn
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2

    def get_moe_weights(self):
        return ["w13", "w2"]


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MoE()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class ForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def set_local_experts(self, n):
        for layer in self.model.layers:
            # ruleid: PPA103
            layer.mlp.n_local_experts = n

    def routed_experts_weights(self):
        return {
            # ruleid: PPA103
            layer_id: layer.mlp.get_moe_weights()
            for layer_id, layer in enumerate(self.model.layers)
        }

    def guarded(self):
        out = []
        for layer in self.model.layers:
            if isinstance(layer, PPMissingLayer):
                continue
            # ok: PPA103
            out.append(layer.mlp)
        return out

    def sliced(self):
        # ok: PPA103
        return [layer.mlp for layer in self.model.layers[self.model.start_layer:self.model.end_layer]]

    def islice_ranks(self):
        # ok: PPA103
        return [layer.mlp for layer in islice(self.model.layers, self.model.start_layer, self.model.end_layer)]

    def by_range(self):
        # ok: PPA103
        return [self.model.layers[i].mlp for i in range(self.model.start_layer, self.model.end_layer)]

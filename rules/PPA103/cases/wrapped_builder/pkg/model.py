import torch.nn as nn

from .layers import make_every_layer, make_stage_layers


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MLP()


class StageModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_stage_layers(config.num_hidden_layers,
                                                                          lambda prefix: DecoderLayer(prefix))


class FullModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_every_layer(config.num_hidden_layers,
                                                                         lambda prefix: DecoderLayer(prefix))


class ForCausalLM(nn.Module):
    """Loops over every slot of a list built by a wrapper of `make_layers` (fires) and of a
    builder that makes every layer (silent)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = StageModel(config)
        self.full = FullModel(config)

    def scales(self):
        out = []
        for layer in self.model.layers:
            # ruleid: PPA103
            out.append(layer.mlp.scale)
        return out

    def full_scales(self):
        out = []
        for layer in self.full.layers:
            # ok: PPA103
            out.append(layer.mlp.scale)
        return out

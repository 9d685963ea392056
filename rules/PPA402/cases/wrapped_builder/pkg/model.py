import torch.nn as nn

from .layers import make_every_layer, make_stage_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class StageModel(nn.Module):
    """Its layers come from a wrapper of `make_layers` (lsglang's `make_pp_layers`): this rank's
    slice only, so another rank's weights are not among its parameters."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_stage_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class FullModel(nn.Module):
    """Its builder makes every layer and returns a range beside them: every name is a parameter."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_every_layer(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)

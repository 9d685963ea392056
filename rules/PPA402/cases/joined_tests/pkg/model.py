import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class JoinedModel(nn.Module):
    """A membership test joined with another operand decides only together with it: `and` with a
    test of absence skips only the names the other operand also picks (the GPTQ bias skip of
    SGLang-family loaders), `or` with a test of presence enters without the name."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # skip loading extra bias for GPTQ models: every other name goes on
            if name.endswith(".bias") and name not in params_dict:
                continue
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class EnteredModel(nn.Module):
    """A test of presence joined with `or` enters without the name."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name in params_dict or ".qkv_proj." in name:
                # ruleid: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)


class EitherModel(nn.Module):
    """A test of absence joined with `or` skips every name that is not a parameter."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name.endswith(".bias") or name not in params_dict:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class NegatedModel(nn.Module):
    """`not (present and ...)`: a test of absence joined with `or` (De Morgan)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if not (name in params_dict and w is not None):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class BothModel(nn.Module):
    """A test of presence joined with `and` enters only with the name."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name in params_dict and ".qkv_proj." in name:
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)

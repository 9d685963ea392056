import re

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


def get_layer_id(name):
    """SGLang's `get_layer_id` (srt/layers/utils.py): the index after `layers.`, else None."""
    match = re.search(r"layers\.(\d+)\.", name)
    return int(match.group(1)) if match else None


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class Model(nn.Module):
    """An inner model that holds the layers and their range itself."""

    def __init__(self):
        super().__init__()
        self.decoder = Decoder()


class HeldRangeForCausalLM(nn.Module):
    """SGLang's usual skip (srt/models/mixtral.py): `self.model` holds `start_layer`, so
    `hasattr` is true and every other rank's layer is skipped."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = Decoder()

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            layer_id = get_layer_id(name)
            if (
                layer_id is not None
                and hasattr(self.model, "start_layer")
                and (layer_id < self.model.start_layer or layer_id >= self.model.end_layer)
            ):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class InnerRangeForCausalLM(nn.Module):
    """SGLang 0.5.23 `OPTForCausalLM.load_weights`: the range lives on `self.model.decoder`, so
    `hasattr(self.model, "start_layer")` is false on every rank and the skip never runs."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = Model()

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = name.replace("model.layers.", "model.decoder.layers.")
            layer_id = get_layer_id(name)
            if (
                layer_id is not None
                and hasattr(self.model, "start_layer")
                and (layer_id < self.model.start_layer or layer_id >= self.model.end_layer)
            ):
                continue
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class ChainedRangeModel(nn.Module):
    """A range skip without `hasattr`, written as one chained comparison."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            layer_id = get_layer_id(name)
            if layer_id is not None and not self.start_layer <= layer_id < self.end_layer:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class LowerEndOnlyModel(nn.Module):
    """Skips only the layers below the range: rank 0 still looks up the last layers.  The skip
    is not a whole range skip, so the loader decides on the rank in a way not read (not judged)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            layer_id = get_layer_id(name)
            if layer_id is not None and layer_id < self.start_layer:
                continue
            param = params_dict[name]
            param.weight_loader(param, w)

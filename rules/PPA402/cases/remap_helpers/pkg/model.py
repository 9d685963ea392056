import torch.nn as nn
from vllm.model_executor.models.utils import make_layers

from .weight_utils import remap_checked, remap_kv_scale_name


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()
        self.attn = nn.Module()
        self.attn.k_scale = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


def _pick_remapper():
    return remap_checked


# bound by a call: which function it is is not read
remap_unknown = _pick_remapper()


class RemapModel(nn.Module):
    """The helper tests only the kv-scale names it remaps (vLLM's and SGLang's
    `maybe_remap_kv_scale_name`, SGLang-kt 0.7.2 kimi_linear.py): every other name comes back
    unchanged, and the lookup raises KeyError for the layers another rank owns."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = remap_kv_scale_name(name, params_dict)
            if name is None:
                continue
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class CheckedRemapModel(nn.Module):
    """Helpers that test every name they return against the dict: a module function and a
    method of the class."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def _remap(self, name, params_dict):
        remapped_name = name.replace(".kv_scale", ".attn.k_scale")
        if remapped_name not in params_dict:
            return None
        return remapped_name

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = remap_checked(name, params_dict)
            if name is None:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)

    def load_scales(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = self._remap(name, params_dict)
            if name is None:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class UnknownRemapModel(nn.Module):
    """The helper is not resolved (a name bound by a call): the lookup is not judged."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = remap_unknown(name, params_dict)
            if name is None:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)

import torch.nn as nn
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()
        self.k_scale = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class QuantConfig:
    def get_cache_scale(self, name):
        # a compressed-tensors checkpoint's KV-cache scale, one per layer
        return name.replace(".k_proj.output_scale", ".k_scale") if name.endswith(".k_proj.output_scale") else None


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.quant_config = QuantConfig()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        loaded = set()
        for name, loaded_weight in weights:
            if scale_name := self.quant_config.get_cache_scale(name):
                # ruleid: PPA402
                param = params_dict[scale_name]
                param.weight_loader(param, loaded_weight)
                loaded.add(scale_name)
                continue
            name = name.replace(".q_proj.", ".qkv_proj.")
            if is_pp_missing_parameter(name, self):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, loaded_weight)
            loaded.add(name)
        return loaded


class HelperModel(nn.Module):
    """The lookup in a nested helper (vLLM GraniteMoeHybrid, issue 50961): one call site skips
    another rank's names, the other does not."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())

        def _load(n, w):
            # ruleid: PPA402
            param = params_dict[n]
            param.weight_loader(param, w)

        def _load_checked(n, w):
            if n not in params_dict:
                return
            # ok: PPA402
            param = params_dict[n]
            param.weight_loader(param, w)

        def _load_skipped(n, w):
            # ok: PPA402
            param = params_dict[n]
            param.weight_loader(param, w)

        for name, w in weights:
            if name.endswith(".k_scale"):
                _load_checked(name, w)
                continue
            if name.endswith(".qkv.weight"):
                _load(name.replace(".qkv.", ".qkv_proj."), w)
                continue
            if is_pp_missing_parameter(name, self):
                continue
            _load_skipped(name.replace(".q_proj.", ".qkv_proj."), w)


class AllLayersModel(nn.Module):
    """Every layer on every rank (no make_layers slice): nothing another rank owns."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(4)])

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            name = name.replace(".q_proj.", ".qkv_proj.")
            if name.endswith(".k_proj.output_scale"):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class StackedModel(nn.Module):
    """q/k/v stacked into one parameter (the loop of vLLM's older Llama-style loaders): the
    substring test `weight_name not in name` picks the mapping, it does not test the key
    against the parameters."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            for param_name, weight_name in ((".qkv_proj.", ".q_proj."), (".qkv_proj.", ".k_proj.")):
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                # ruleid: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)
                break

    def load_weights_fixed(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            for param_name, weight_name in ((".qkv_proj.", ".q_proj."), (".qkv_proj.", ".k_proj.")):
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                if is_pp_missing_parameter(name, self):
                    continue
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)
                break


class MappedModel(nn.Module):
    """A membership test against literals picks a mapping (vLLM 0.21.0 DbrxModel's
    `"w13" if weight_name in ["w1", "v1"] else "w2"`): it tests no checkpoint name against this
    rank's parameters, so the KV-cache scale lookup after it is not covered."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.quant_config = QuantConfig()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        mapping = [("qkv_proj" if weight_name in ["q_proj", "k_proj"] else "o_proj", weight_name)
                   for weight_name in ["q_proj", "k_proj", "o_proj"]]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if scale_name := self.quant_config.get_cache_scale(name):
                # ruleid: PPA402
                param = params_dict[scale_name]
                param.weight_loader(param, loaded_weight)
                continue
            for param_name, weight_name in mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                if is_pp_missing_parameter(name, self):
                    continue
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, loaded_weight)


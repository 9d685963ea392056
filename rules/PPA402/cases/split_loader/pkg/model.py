import torch.nn as nn
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13_weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = nn.Module()
        self.mlp.experts = Experts()


class SplitLoaderModel(nn.Module):
    """A loader split into methods (SGLang 0.5.23 gpt_oss.py): `load_weights` ->
    `_load_quantized` (only for one quantization) -> `_load_experts`, which builds its own
    parameter dict and skips nothing; the other branch's loader skips another rank's layers."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.quant = config.quant
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        if self.quant != "mxfp4":
            self._load_plain(weights)
        else:
            self._load_quantized(weights)

    def _load_quantized(self, weights):
        experts = [(n, w) for n, w in weights if ".experts." in n]
        self._load_experts(experts)

    def _load_experts(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)

    def _load_plain(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if is_pp_missing_parameter(name, self):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class SubmoduleFirstModel(nn.Module):
    """Resolves each checkpoint name to its module before the lookup: on a rank that does not
    own the layer, `get_submodule` raises first (the lookup after it is masked)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            experts = self.get_submodule(name.rsplit(".", 1)[0])
            param = params_dict[name]
            param.weight_loader(param, w)
            experts.loaded = True


class SubmoduleSkippedModel(nn.Module):
    """The same, with the skip of another rank's layers before it."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if is_pp_missing_parameter(name, self):
                continue
            # ok: PPA402
            experts = self.get_submodule(name.rsplit(".", 1)[0])
            param = params_dict[name]
            param.weight_loader(param, w)
            experts.loaded = True


class ReraisingModel(nn.Module):
    """A `try` around the lookup whose handler logs and raises again catches nothing for good
    (SGLang 0.4.6 `Qwen2VLForConditionalGeneration.load_weights`)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            try:
                # ruleid: PPA402
                param = params_dict[name]
            except KeyError:
                missing = sorted(params_dict)  # noqa: F841  (a log line in the original)
                raise
            param.weight_loader(param, w)


class SwallowingModel(nn.Module):
    """A handler that goes on (skips the name) covers the lookup."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            try:
                # ok: PPA402
                param = params_dict[name]
            except KeyError:
                continue
            param.weight_loader(param, w)

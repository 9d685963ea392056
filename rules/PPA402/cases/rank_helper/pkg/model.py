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


def layer_id(name):
    parts = name.split(".")
    return int(parts[1]) if len(parts) > 2 and parts[0] == "layers" else None


class HelperSkipModel(nn.Module):
    """Skips another rank's weights through a method of its own that reads the stage's range
    (SGLang 0.5.23 `KimiLinearForCausalLM._is_non_local_pp_weight`)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def _is_non_local_pp_weight(self, name):
        i = layer_id(name)
        return i is not None and not (self.start_layer <= i < self.end_layer)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if self._is_non_local_pp_weight(name):
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class HelperNoRankModel(nn.Module):
    """Its skip helper reads no rank or range: it skips nothing another rank owns."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def _is_rotary(self, name):
        return "rotary_emb" in name

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if self._is_rotary(name):
                continue
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)

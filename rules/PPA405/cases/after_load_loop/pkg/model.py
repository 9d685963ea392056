import torch.nn as nn
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class Model(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class BrokenLoaderForCausalLM(nn.Module):
    """Reads the config's layers after a load loop that fails on every rank (SGLang's
    `KimiLinearForCausalLM.load_weights`): the read never runs under pipeline parallelism."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = Model(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)
        for layer_id in self.config.full_attention_layer_ids:
            # masked: PPA405
            self.model.layers[layer_id].self_attn.scale = 2.0


class SkippingForCausalLM(nn.Module):
    """The same read after a load loop that skips another rank's weights: it runs, and fails on a
    rank that lacks one of the listed layers."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = Model(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if is_pp_missing_parameter(name, self):
                continue
            param = params_dict[name]
            param.weight_loader(param, w)
        for layer_id in self.config.full_attention_layer_ids:
            # ruleid: PPA405
            self.model.layers[layer_id].self_attn.scale = 2.0

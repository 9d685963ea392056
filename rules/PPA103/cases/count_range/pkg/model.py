import torch.nn as nn
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers,
                                                                    lambda prefix: DecoderLayer(prefix))
        self.decoder = DecoderLayer()


class ForCausalLM(nn.Module):
    """Loops over every global layer id, `range(config.num_hidden_layers)`, that index the
    `make_layers` list (SGLang's `DeepseekV2ForCausalLM._weight_requant_ue8m0`), each with a twin
    that reads only this rank's layers."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = TextModel(config)

    def requant(self, is_nextn=False):
        num_hidden_layers = 1 if is_nextn else self.config.num_hidden_layers
        for layer_id in range(num_hidden_layers):
            if is_nextn:
                layer = self.model.decoder
            else:
                layer = self.model.layers[layer_id]
            # ruleid: PPA103
            layer.self_attn.scale = 2.0

    def requant_own(self, is_nextn=False):
        num_hidden_layers = 1 if is_nextn else self.config.num_hidden_layers
        for layer_id in range(num_hidden_layers):
            if is_nextn:
                layer = self.model.decoder
            elif self.model.start_layer <= layer_id < self.model.end_layer:
                layer = self.model.layers[layer_id]
            else:
                continue
            # ok: PPA103
            layer.self_attn.scale = 2.0

    def scales(self):
        # ruleid: PPA103
        return [self.model.layers[i].self_attn.scale for i in range(self.config.num_hidden_layers)]

    def scales_own(self):
        out = []
        for i in range(self.config.num_hidden_layers):
            layer = self.model.layers[i]
            if isinstance(layer, PPMissingLayer):
                continue
            # ok: PPA103
            out.append(layer.self_attn.scale)
        return out

    def nextn_only(self):
        num_hidden_layers = 1 if self.config.is_nextn else self.config.num_hidden_layers
        for layer_id in range(num_hidden_layers):
            layer = self.model.decoder
            # ok: PPA103
            layer.self_attn.scale = 2.0

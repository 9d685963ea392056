import torch.nn as nn

from vllm.model_executor.models.utils import make_layers


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = Mlp()


class ScaledModel(nn.Module):
    """Reads of the layers listed by a config, each under a different guard (or none)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix=prefix), prefix=f"{prefix}.layers"
        )

    def scales_after_a_comment(self):
        out = []
        for layer_id in self.config.moe_layer_ids:
            # a comment that names start_layer and end_layer tests nothing
            # ruleid: PPA405
            out.append(self.layers[layer_id].mlp.scale)
        return out

    def scales_under_a_key_error_handler(self):
        out = []
        for layer_id in self.config.moe_layer_ids:
            try:
                # ruleid: PPA405
                out.append(self.layers[layer_id].mlp.scale)
            except KeyError:  # does not catch the AttributeError
                out.append(None)
        return out

    def scales_under_an_attribute_error_handler(self):
        out = []
        for layer_id in self.config.moe_layer_ids:
            try:
                # ok: PPA405
                out.append(self.layers[layer_id].mlp.scale)
            except AttributeError:
                continue
        return out

    def scales_with_hasattr(self):
        out = []
        for layer_id in self.config.moe_layer_ids:
            # ruleid: PPA405
            if hasattr(self.layers[layer_id].mlp, "scale"):  # the argument is read before the test
                out.append(layer_id)
        return out

    def scales_if_enabled(self):
        return [
            # ruleid: PPA405
            self.layers[layer_id].mlp.scale if self.config.use_scale else None
            for layer_id in self.config.moe_layer_ids
        ]

    def owned_scales_through_a_flag(self):
        out = []
        for layer_id in self.config.moe_layer_ids:
            owned = self.start_layer <= layer_id < self.end_layer
            if not owned:
                continue
            # ok: PPA405
            out.append(self.layers[layer_id].mlp.scale)
        return out

    def owned_scales_if_enabled(self):
        out = []
        if self.config.use_scale:
            for layer_id in self.config.moe_layer_ids:
                owned = self.start_layer <= layer_id < self.end_layer  # a flag set under a test
                if not owned:
                    continue
                # ok: PPA405
                out.append(self.layers[layer_id].mlp.scale)
        return out

    def owned_scales_after_a_test(self):
        return [
            layer_id
            for layer_id in self.config.moe_layer_ids
            # ok: PPA405
            if self.start_layer <= layer_id < self.end_layer and self.layers[layer_id].mlp.scale > 0
        ]

import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = Mlp()


class PositionModel(nn.Module):
    """Reads of the layers listed by a config behind a test of the pipeline position: the last
    rank lacks the early layers and the first rank the late ones, so the position says nothing of
    what a rank owns; a test of the layer range does."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix=prefix), prefix=f"{prefix}.layers"
        )

    def last_rank_scales(self):
        if not get_pp_group().is_last_rank:
            return []
        out = []
        for layer_id in self.config.moe_layer_ids:
            # ruleid: PPA405
            out.append(self.layers[layer_id].mlp.scale)
        return out

    def first_rank_scales(self):
        out = []
        if get_pp_group().is_first_rank:
            for layer_id in self.config.moe_layer_ids:
                # ruleid: PPA405
                out.append(self.layers[layer_id].mlp.scale)
        return out

    def last_rank_scales_through_a_flag(self):
        last = get_pp_group().is_last_rank
        out = []
        for layer_id in self.config.moe_layer_ids:
            if not last:
                continue
            # ruleid: PPA405
            out.append(self.layers[layer_id].mlp.scale)
        return out

    def last_rank_owned_scales(self):
        if not get_pp_group().is_last_rank:
            return []
        out = []
        for layer_id in self.config.moe_layer_ids:
            if not self.start_layer <= layer_id < self.end_layer:
                continue
            # ok: PPA405
            out.append(self.layers[layer_id].mlp.scale)
        return out

    def first_rank_owned_scales(self):
        out = []
        if get_pp_group().is_first_rank:
            for layer_id in self.config.moe_layer_ids:
                # ok: PPA405
                if layer_id < self.end_layer and self.layers[layer_id].mlp.scale > 0:
                    out.append(layer_id)
        return out

import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class Engram(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = None


class DecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.layer_idx = int(prefix.rsplit(".", 1)[-1])
        self.engram = Engram() if self.layer_idx in config.engram_layer_ids else None


class EngramModel(nn.Module):
    """The engram tables of vllm-ascend's DeepseekV41Model, hung on global layer ids."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )
        for layer_id, rows in zip(config.engram_layer_ids, config.engram_rows):
            # ruleid: PPA405
            self.layers[layer_id].engram.embed = [rows]

    def prepare_engram(self):
        # ruleid: PPA405
        return {layer_id: self.layers[layer_id].engram.embed for layer_id in sorted(self.config.engram_layer_ids)}

    def engram_rows(self):
        rows = []
        for layer_id in self.config.engram_layer_ids:
            if layer_id < 0:
                break  # a skip here would go on past the break: no automatic fix
            # ruleid: PPA405
            rows.append(self.layers[layer_id].engram.embed)
        return rows


class FixedEngramModel(nn.Module):
    """The fix the review suggests: skip the slots another rank owns."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )
        for layer_id, rows in zip(config.engram_layer_ids, config.engram_rows):
            if isinstance(self.layers[layer_id], PPMissingLayer):
                continue
            # ok: PPA405
            self.layers[layer_id].engram.embed = [rows]

    def prepare_engram(self):
        return {
            # ok: PPA405
            layer_id: self.layers[layer_id].engram.embed
            for layer_id in self.config.engram_layer_ids
            if self.start_layer <= layer_id < self.end_layer
        }

    def first_layer_engram(self):
        # a stage's own first layer: `start_layer` is a local index, not a config id
        if get_pp_group().world_size > 1:
            # ok: PPA405
            return self.layers[self.start_layer].engram
        return None

import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.kv_cache_dtype = "auto"


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = nn.Identity()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix))
        # ok: PPA102
        self.own_dtype = self.layers[self.start_layer].self_attn.kv_cache_dtype
        if get_pp_group().is_last_rank:
            # ok: PPA102
            self.last_mlp = self.layers[-1].mlp
        if get_pp_group().is_first_rank:
            # ok: PPA102
            self.first_mlp = self.layers[0].mlp
        # ruleid: PPA102
        self.kv_dtype = self.layers[0].self_attn.kv_cache_dtype


class ForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = TextModel(config)

    def load_weights(self, weights):
        # ruleid: PPA102
        last = self.model.layers[self.config.num_hidden_layers - 1].mlp
        return last


class RolloutEngine:
    """Holds whatever model the trainer hands it (typed as a bare nn.Module)."""

    def __init__(self, model: nn.Module):
        self.model = model

    def probe_cache(self):
        # ruleid: PPA102
        return hasattr(self.model.model.layers[-1].self_attn, "kv_cache_dtype")


class NamedAttention(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.layer_name = f"{prefix}.attn"


class NamedLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = NamedAttention(prefix)


class MetadataModel(nn.Module):
    """gemma4.py's fast_prefill_forward: the last layer's name keys the attention metadata, so no
    fix is offered (this rank's own last layer would give another layer's name on the other ranks)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: NamedLayer(prefix))

    def forward(self, attn_metadata):
        # ruleid: PPA102
        return attn_metadata[self.layers[-1].self_attn.layer_name]

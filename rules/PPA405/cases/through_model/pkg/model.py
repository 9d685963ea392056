import torch.nn as nn

from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_kc = None
        self.weight = [0.0]


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()


class LinearModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix=prefix), prefix=f"{prefix}.layers"
        )
        # every rank builds every block: not a make_layers list
        self.blocks = nn.ModuleList([Block() for _ in range(config.num_hidden_layers)])


class LinearForCausalLM(nn.Module):
    """SGLang-kt 0.7.2's KimiLinearForCausalLM.load_weights: the layers of the inner model, indexed
    by a config list of global ids and by an id parsed from each checkpoint name."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LinearModel(config, prefix="model")

    def load_weights(self, weights):
        for name, loaded in weights:
            if ".q_proj" in name:
                layer_id = int(name.split(".")[2])
                # ruleid: PPA405
                layer = self.model.layers[layer_id].self_attn
                layer.weight = loaded
        for layer_id in self.config.full_attention_layer_ids:
            # ruleid: PPA405
            self_attn = self.model.layers[layer_id].self_attn
            if hasattr(self_attn, "w_kc"):  # after the read: it cannot keep it from raising
                self_attn.w_kc = self_attn.weight


class FixedLinearForCausalLM(nn.Module):
    """The same loads, skipping what another rank owns; and a list that is not a placeholder list."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LinearModel(config, prefix="model")

    def load_weights(self, weights):
        for name, loaded in weights:
            if is_pp_missing_parameter(name, self):
                continue
            if ".q_proj" in name:
                layer_id = int(name.split(".")[2])
                # ok: PPA405
                layer = self.model.layers[layer_id].self_attn
                layer.weight = loaded
                # ok: PPA405
                self.model.blocks[layer_id].self_attn.weight = loaded
        for layer_id in self.config.full_attention_layer_ids:
            if not self.model.start_layer <= layer_id < self.model.end_layer:
                continue
            # ok: PPA405
            self_attn = self.model.layers[layer_id].self_attn
            self_attn.w_kc = self_attn.weight

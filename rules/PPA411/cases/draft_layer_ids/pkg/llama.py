import torch.nn as nn

from vllm.model_executor.models.utils import make_layers

from .config import Attention


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.attn = Attention(prefix=f"{prefix}.self_attn.attn")


class LlamaModel(nn.Module):
    def __init__(self, vllm_config, prefix="", start_layer_id=0, num_layers=None):
        super().__init__()
        n = num_layers or vllm_config.model_config.get_total_num_hidden_layers()
        if start_layer_id:  # a draft head: its own layers, named after the target's
            self.layers = [DecoderLayer(prefix=f"{prefix}.layers.{i + start_layer_id}") for i in range(n)]
        else:
            self.start_layer, self.end_layer, self.layers = make_layers(
                n, lambda prefix: DecoderLayer(prefix=prefix), prefix=f"{prefix}.layers")


class LlamaForCausalLM(nn.Module):
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.model = LlamaModel(vllm_config, prefix="model")

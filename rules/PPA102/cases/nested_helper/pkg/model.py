import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_dtype = "mxfp4"


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MoE()


class Model(nn.Module):
    """gpt_oss.py's `_load_weights_quark`: helpers nested in a method, closing over `self`."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: DecoderLayer(prefix))

    def load_quark(self):
        def weight_dtype(layer_id: int = 0):
            # ruleid: PPA102
            if hasattr(self.layers[layer_id].mlp.experts, "weight_dtype"):
                # ok: PPA102
                return self.layers[layer_id].mlp.experts.weight_dtype
            return None

        dtype = weight_dtype(layer_id=0)
        for layer_id in range(self.start_layer, self.end_layer):
            dtype = weight_dtype(layer_id=layer_id)
        return dtype

    def load_first_only(self):
        def weight_dtype(layer_id: int = 0):
            # ok: PPA102
            return self.layers[layer_id].mlp.experts.weight_dtype

        if get_pp_group().is_first_rank:
            return weight_dtype()
        return None

    def load_own(self):
        def weight_dtype(layer_id: int = 0):
            # ok: PPA102
            return self.layers[layer_id].mlp.experts.weight_dtype

        return weight_dtype(self.start_layer)

    def load_any(self):
        def last_dtype():
            # ruleid: PPA102
            return self.layers[-1].mlp.experts.weight_dtype

        dtypes = [last_dtype() for _ in range(1)]
        return dtypes

    def load_lambda(self):
        # ruleid: PPA102
        first = lambda: self.layers[0].mlp  # noqa: E731
        return first()

    def load_comprehension(self):
        # ruleid: PPA102
        return [self.layers[0].mlp.experts for _ in range(1)]

    def load_unused(self):
        def weight_dtype():
            # ok: PPA102
            return self.layers[0].mlp.experts.weight_dtype

        return weight_dtype if get_pp_group().is_first_rank else None

    def load_shadowed(self, other):
        def weight_dtype(self, layer_id: int = 0):
            # ok: PPA102
            return self.layers[layer_id].mlp.experts.weight_dtype

        return weight_dtype(other)

import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MLP()


class Model(nn.Module):
    """Two loops over every slot, one after the other (SGLang 0.5.23 `DeepseekV2Model.__init__`):
    the second never runs where the first always fails first, unless the first may be skipped."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def count_then_scale(self):
        # ruleid: PPA103
        n = sum(1 for i in range(len(self.layers)) if isinstance(self.layers[i].mlp, MLP))
        for i in range(len(self.layers)):
            # masked: PPA103
            self.layers[i].mlp.scale = 2.0
        return n

    def maybe_count_then_scale(self, count):
        # ruleid: PPA103
        n = sum(1 for i in range(len(self.layers)) if isinstance(self.layers[i].mlp, MLP)) if count else 0
        for i in range(len(self.layers)):
            # ruleid: PPA103
            self.layers[i].mlp.scale = 2.0
        return n

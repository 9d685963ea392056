import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MLP()


class BaseModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def set_experts(self, n):
        for layer in self.layers:
            # ruleid: PPA103
            layer.mlp.n_local_experts = n

    def first_mlp(self):
        # ruleid: PPA102
        return self.layers[0].mlp


class DraftModel(BaseModel):
    """A drafter that reuses the base's methods but not its `__init__`: `nn.Module.__init__(self)`
    skips `BaseModel.__init__`, and its own layer list holds every layer on every rank."""

    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(2)])

    def set_draft_experts(self, n):
        for layer in self.layers:
            # ok: PPA103
            layer.mlp.n_local_experts = n

    def first_draft_mlp(self):
        # ok: PPA102
        return self.layers[0].mlp

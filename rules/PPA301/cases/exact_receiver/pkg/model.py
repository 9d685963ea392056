import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = nn.Identity()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class DraftTextModel(TextModel):
    """A drafter's inner model: skips TextModel.__init__ and has no layer range."""

    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([DecoderLayer()])


class ForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def load_weights(self, weights):
        # what PPA103's fix writes: only this rank's layers
        # ok: PPA301
        for layer in self.model.layers[self.model.start_layer:self.model.end_layer]:
            weights.append(layer.mlp)
        return weights

    def load_every_slot(self, weights):
        for layer in self.model.layers:
            # ruleid: PPA103
            weights.append(layer.mlp)
        return weights


class Bootstrap:
    def ranges(self, model: TextModel):
        # ruleid: PPA301
        return (model.start_layer, model.end_layer)

    def own_ranges(self, config):
        model = TextModel(config)
        # ok: PPA301
        return (model.start_layer, model.end_layer)

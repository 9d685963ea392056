import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()


class Decoder(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.decoder = Decoder(config)


class OPTForCausalLM(nn.Module):
    """SGLang 0.5.23 `opt.py`: the properties read the range on `OPTModel`, which has none (its
    `decoder` has it), so they raise AttributeError, and the runner's
    `getattr(model, "start_layer", 0)` takes that for a model without a range."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    @property
    def start_layer(self):
        # ruleid: PPA001
        return self.model.start_layer

    @property
    def end_layer(self):
        # ruleid: PPA001
        return self.model.end_layer


class FixedForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    @property
    def start_layer(self):
        # ok: PPA001
        return self.model.decoder.start_layer

    @property
    def end_layer(self):
        # ok: PPA001
        return self.model.decoder.end_layer

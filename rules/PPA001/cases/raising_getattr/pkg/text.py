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


class StrictModule(nn.Module):
    """A project base whose `__getattr__` only raises, as torch.nn.Module's does for a name it
    does not hold: it answers no attribute."""

    def __getattr__(self, name):
        """Say which attribute is missing."""
        raise AttributeError(f"'{type(self).__name__}' has no attribute '{name}'")


class TextForCausalLM(StrictModule):
    """The wrapper: holds the inner model as `.model` and has no layer range."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)


class DelegatingForCausalLM(nn.Module):
    """A wrapper whose `__getattr__` answers from the inner model: the range is there."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def __getattr__(self, name):
        return getattr(self.__dict__["model"], name)

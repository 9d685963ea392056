import torch.nn as nn

from .inner import InnerModel


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter()


class HeldModel(InnerModel):
    """A subclass in another module: its `__init__` runs the base's, which builds the slice."""


class WrapperForCausalLM(nn.Module):
    """Holds a model of another module that builds the slice, and looks every name up itself
    (SGLang 0.4.6 `MiMoForCausalLM`)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = HeldModel(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class DelegatingForCausalLM(nn.Module):
    """Hands the language model's names to its loader and looks up only its own head's: whether
    those names can be a layer's is not read (not judged)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.llm = InnerModel(config)
        self.projector = Head()

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name.startswith("llm."):
                self.llm.load_weights([(name[len("llm."):], w)])
            else:
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)


class HeadOnlyForCausalLM(nn.Module):
    """Looks up only the names of a module of its own (`"projector" in name`): not judged."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)
        self.projector = Head()

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if "projector" in name:
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)

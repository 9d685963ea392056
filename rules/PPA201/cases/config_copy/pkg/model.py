from types import SimpleNamespace

import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


# ruleid: PPA201
class CopiedConfigForCausalLM(nn.Module, SupportsPP):
    """Copies its config with `vars()` of the config object: nothing is set on `self` that way."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = SimpleNamespace(**vars(config))
        self.model = TextModel(self.config)


# ok: PPA201
class SelfVarsForCausalLM(nn.Module, SupportsPP):
    """Sets the hook through `vars(self)`: the class is dynamic, not judged."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        vars(self)["make_empty_intermediate_tensors"] = self.model.make_empty_intermediate_tensors


# ok: PPA201
class AliasVarsForCausalLM(nn.Module, SupportsPP):
    """`vars(config)` after `config = self`: the same object."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        config = self
        vars(config).update(make_empty_intermediate_tensors=self.model.make_empty_intermediate_tensors)


# ruleid: PPA201
class StrictForCausalLM(nn.Module, SupportsPP):
    """Its `__getattr__` only raises (torch.nn.Module's shape): it provides nothing."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def __getattr__(self, name):
        raise AttributeError(name)

"""Runtime oracle probes (tests/oracle.py): the engine builds each model and runs `forward` as a
generation model does (no embeddings asked)."""

from types import SimpleNamespace

from pkg.models import AlwaysPooledModel, BranchModel, EarlyReturnModel

CONFIG = SimpleNamespace(model_type="llama")


def early_return():
    EarlyReturnModel(CONFIG).forward([0])


def branch():
    BranchModel(CONFIG).forward([0])


def always_pooled():
    AlwaysPooledModel(CONFIG).forward([0])


PROBES = [early_return, branch, always_pooled]

"""Runtime oracle probes (tests/oracle.py): the model loader calls load_weights on every model."""

from types import SimpleNamespace

from pkg.base import HybridPool, MHAPool
from pkg.eagle import Bootstrap, EagleModel, FixedEagleModel

CONFIG = SimpleNamespace(model_type="mistral")


def load_eagle():
    EagleModel(CONFIG).load_weights([])


def load_fixed_eagle():
    FixedEagleModel(CONFIG).load_weights([])


def bootstrap_mha():
    Bootstrap(MHAPool(16, 4)).ranges()


def bootstrap_hybrid():
    Bootstrap(HybridPool(16)).ranges()


PROBES = [load_eagle, load_fixed_eagle, bootstrap_mha, bootstrap_hybrid]

"""Runtime oracle probes (tests/oracle.py): ranks > 0 receive what the rank before sends."""

from types import SimpleNamespace

from pkg.model import LiteralNoneModel, NoneResidualModel, ResidualModel, SometimesNoneModel
from pkg.runner import execute

CONFIG = SimpleNamespace()
# the None a rank sends is what the next rank's runner fails to slice
BLAME = {"pkg/model.py:54": "pkg/runner.py:27", "pkg/model.py:71": "pkg/runner.py:27"}


def layer_none():
    execute(NoneResidualModel, CONFIG)


def literal_none():
    execute(LiteralNoneModel, CONFIG)


def residual():
    execute(ResidualModel, CONFIG)


def sometimes_none():
    execute(SometimesNoneModel, CONFIG)


PROBES = [layer_none, literal_none, residual, sometimes_none]

"""Runtime oracle probes (tests/oracle.py): the runner's warm-up forward of each model on each rank."""

from sglang.srt.models.demo import AuxModel, FixedAuxModel, ResidualModel
from sglang.srt.runner import warm_up


def aux():
    warm_up(AuxModel())


def aux_fixed():
    warm_up(FixedAuxModel())


def residual():
    warm_up(ResidualModel())


PROBES = [aux, aux_fixed, residual]

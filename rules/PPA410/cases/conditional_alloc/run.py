"""Runtime oracle probes (tests/oracle.py): the runner's warm-up forward of each model on each rank."""

from sglang.srt.models.demo import AuxModel, FoldedModel, ResidualModel
from sglang.srt.runner import warm_up


def aux():
    warm_up(AuxModel())


def folded():
    warm_up(FoldedModel())


def residual():
    warm_up(ResidualModel())


PROBES = [aux, folded, residual]

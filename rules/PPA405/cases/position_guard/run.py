"""Runtime oracle probes (tests/oracle.py): read the scales of an early and a late listed layer
on the ranks a test of the pipeline position lets through."""

from types import SimpleNamespace

from pkg.model import PositionModel

CONFIG = SimpleNamespace(num_hidden_layers=8, moe_layer_ids=[1, 6])


def model():
    return PositionModel(CONFIG, prefix="model")


def last_rank():
    model().last_rank_scales()


def first_rank():
    model().first_rank_scales()


def last_rank_through_a_flag():
    model().last_rank_scales_through_a_flag()


def last_rank_owned():
    model().last_rank_owned_scales()


def first_rank_owned():
    model().first_rank_owned_scales()


PROBES = [last_rank, first_rank, last_rank_through_a_flag, last_rank_owned, first_rank_owned]

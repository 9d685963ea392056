"""Runtime oracle probes (tests/oracle.py): build the model with an Engram layer early and one late."""

from types import SimpleNamespace

from pkg.model import EngramModel, FixedEngramModel

CONFIG = SimpleNamespace(num_hidden_layers=8, engram_layer_ids=[1, 6], engram_rows=[16, 32])


def build():
    EngramModel(CONFIG, prefix="model").prepare_engram()


def build_on_one_rank_model():
    # reaches prepare_engram on the ranks where __init__ succeeds (none under PP): call it on a
    # model whose construction skipped the tables
    m = FixedEngramModel(CONFIG, prefix="model")
    EngramModel.prepare_engram(m)


def rows_on_one_rank_model():
    EngramModel.engram_rows(FixedEngramModel(CONFIG, prefix="model"))


def build_fixed():
    m = FixedEngramModel(CONFIG, prefix="model")
    m.prepare_engram()
    m.first_layer_engram()


PROBES = [build, build_on_one_rank_model, rows_on_one_rank_model, build_fixed]

"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import HelperNoRankModel, HelperSkipModel

CONFIG = SimpleNamespace()
QKV = [(f"layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def helper_skip():
    HelperSkipModel(CONFIG).load_weights(QKV)


def helper_no_rank():
    HelperNoRankModel(CONFIG).load_weights(QKV)


PROBES = [helper_skip, helper_no_rank]

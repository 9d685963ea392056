"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import FullModel, StageModel

CONFIG = SimpleNamespace()
QKV = [(f"layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def stage():
    StageModel(CONFIG).load_weights(QKV)


def full():
    FullModel(CONFIG).load_weights(QKV)


PROBES = [stage, full]

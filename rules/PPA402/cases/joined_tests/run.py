"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import BothModel, EitherModel, EnteredModel, JoinedModel, NegatedModel

CONFIG = SimpleNamespace()
QKV = [(f"layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def joined():
    JoinedModel(CONFIG).load_weights(QKV)


def entered():
    EnteredModel(CONFIG).load_weights(QKV)


def either():
    EitherModel(CONFIG).load_weights(QKV)


def negated():
    NegatedModel(CONFIG).load_weights(QKV)


def both():
    BothModel(CONFIG).load_weights(QKV)


PROBES = [joined, entered, either, negated, both]

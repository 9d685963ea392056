"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import ChainedRangeModel, HeldRangeForCausalLM, InnerRangeForCausalLM, LowerEndOnlyModel

CONFIG = SimpleNamespace()


def _names(prefix):
    return [(f"{prefix}layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def held_range():
    HeldRangeForCausalLM(CONFIG).load_weights(_names("model."))


def inner_range():
    InnerRangeForCausalLM(CONFIG).load_weights(_names("model."))


def chained_range():
    ChainedRangeModel(CONFIG).load_weights(_names(""))


def lower_end_only():
    LowerEndOnlyModel(CONFIG).load_weights(_names(""))


PROBES = [held_range, inner_range, chained_range, lower_end_only]

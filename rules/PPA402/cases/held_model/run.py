"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.wrappers import DelegatingForCausalLM, HeadOnlyForCausalLM, WrapperForCausalLM

CONFIG = SimpleNamespace()


def _layers(prefix):
    return [(f"{prefix}layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def held():
    WrapperForCausalLM(CONFIG).load_weights(_layers("model."))


def delegating():
    DelegatingForCausalLM(CONFIG).load_weights(_layers("llm.") + [("projector.weight", 1.0)])


def head_only():
    HeadOnlyForCausalLM(CONFIG).load_weights(_layers("model.") + [("projector.weight", 1.0)])


PROBES = [held, delegating, head_only]

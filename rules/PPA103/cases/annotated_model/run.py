"""Runtime oracle probes (tests/oracle.py): the expert updates walk the layer list on every rank."""

from types import SimpleNamespace

from pkg.model import ForCausalLM

CONFIG = SimpleNamespace()


def mixin_update():
    ForCausalLM(CONFIG).update_experts(4)


def own_update():
    ForCausalLM(CONFIG).set_experts(4)


def skipping():
    model = ForCausalLM(CONFIG)
    model.update_own_experts(4)
    model.set_own_experts(4)


PROBES = [mixin_update, own_update, skipping]

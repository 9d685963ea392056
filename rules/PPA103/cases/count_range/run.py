"""Runtime oracle probes (tests/oracle.py): each method walks the global layer ids on every rank."""

from types import SimpleNamespace

from pkg.model import ForCausalLM

CONFIG = SimpleNamespace(num_hidden_layers=4, is_nextn=False)


def requant():
    ForCausalLM(CONFIG).requant()


def scales():
    ForCausalLM(CONFIG).scales()


def own():
    model = ForCausalLM(CONFIG)
    model.requant_own()
    model.requant_own(is_nextn=True)
    model.scales_own()
    model.requant(is_nextn=True)
    model.nextn_only()


PROBES = [requant, scales, own]

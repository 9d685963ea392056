"""Runtime oracle probes (tests/oracle.py): each loop walks every slot on every rank."""

from types import SimpleNamespace

from pkg.model import ForCausalLM

CONFIG = SimpleNamespace(num_hidden_layers=4)


def stage():
    ForCausalLM(CONFIG).scales()


def full():
    ForCausalLM(CONFIG).full_scales()


PROBES = [stage, full]

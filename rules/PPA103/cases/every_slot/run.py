"""Runtime oracle probes (tests/oracle.py): the expert-balancing calls walk the layer list."""

from types import SimpleNamespace

from pkg.model import ForCausalLM

CONFIG = SimpleNamespace()


def update_experts():
    ForCausalLM(CONFIG).set_local_experts(4)


def routed_weights():
    ForCausalLM(CONFIG).routed_experts_weights()


def correct_loops():
    model = ForCausalLM(CONFIG)
    model.guarded()
    model.sliced()
    model.islice_ranks()
    model.by_range()


PROBES = [update_experts, routed_weights, correct_loops]

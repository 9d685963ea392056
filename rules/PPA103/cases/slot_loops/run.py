"""Runtime oracle probes (tests/oracle.py): each method walks the layer list on every rank."""

from types import SimpleNamespace

from pkg.model import ForCausalLM

CONFIG = SimpleNamespace()
TOKENS = [0.5, 1.5, 2.5]  # the hidden states of three tokens


def aliased():
    ForCausalLM(CONFIG).set_scale(2.0)


def by_length():
    ForCausalLM(CONFIG).set_experts(4)


def called():
    ForCausalLM(CONFIG).run_all(TOKENS, None)


def or_guard_unguarded():
    ForCausalLM(CONFIG).scale_of_attention_unguarded(2.0)


def skipping():
    model = ForCausalLM(CONFIG)
    model.set_scale_skipping(2.0)
    model.set_experts_skipping(4)
    model.run_own(TOKENS, None)
    model.scale_of_attention(2.0)
    model.set_experts_in_range(4)


PROBES = [aliased, by_length, called, or_guard_unguarded, skipping]

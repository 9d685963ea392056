"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.vl import OtherVL, VLForConditionalGeneration

CONFIG = SimpleNamespace()


def embed_on_first_rank():
    model = VLForConditionalGeneration(CONFIG)
    model.final_norm([0.0])
    model.embed_input_ids([0])


def other():
    OtherVL(CONFIG)


PROBES = [embed_on_first_rank, other]

"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.vl import ForwardingVL, VLForConditionalGeneration

CONFIG = SimpleNamespace()


def build_vl():
    VLForConditionalGeneration(CONFIG)


def build_forwarding_vl():
    ForwardingVL(CONFIG)


PROBES = [build_vl, build_forwarding_vl]

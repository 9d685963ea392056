"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.vl import DelegatingVL, VLForConditionalGeneration

CONFIG = SimpleNamespace()


def build_vl():
    VLForConditionalGeneration(CONFIG)


def build_delegating_vl():
    DelegatingVL(CONFIG)


PROBES = [build_vl, build_delegating_vl]

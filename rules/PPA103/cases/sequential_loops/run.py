"""Runtime oracle probes (tests/oracle.py): each method on every rank."""

from types import SimpleNamespace

from pkg.model import Model

CONFIG = SimpleNamespace()


def count_then_scale():
    Model(CONFIG).count_then_scale()


def counted():
    Model(CONFIG).maybe_count_then_scale(True)


def uncounted():
    Model(CONFIG).maybe_count_then_scale(False)


PROBES = [count_then_scale, counted, uncounted]

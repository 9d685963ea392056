"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.model import AudioModel

CONFIG = SimpleNamespace(encoder_layers=4)


def chunked_forward():
    AudioModel(CONFIG).chunked.forward(1)


def split_forward():
    AudioModel(CONFIG).split.forward(1)


def opaque_forward():
    AudioModel(CONFIG).opaque.forward(1)


PROBES = [chunked_forward, split_forward, opaque_forward]

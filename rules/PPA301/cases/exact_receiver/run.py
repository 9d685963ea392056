"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.model import Bootstrap, DraftTextModel, ForCausalLM, TextModel

CONFIG = SimpleNamespace()


def load():
    ForCausalLM(CONFIG).load_weights([])


def load_every_slot():
    ForCausalLM(CONFIG).load_every_slot([])


def bootstrap():
    Bootstrap().ranges(TextModel(CONFIG))
    Bootstrap().own_ranges(CONFIG)


def bootstrap_draft():
    Bootstrap().ranges(DraftTextModel(CONFIG))


PROBES = [load, load_every_slot, bootstrap, bootstrap_draft]

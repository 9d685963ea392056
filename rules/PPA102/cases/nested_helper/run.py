"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.model import DecoderLayer, Model

CONFIG = SimpleNamespace(num_hidden_layers=4)


def _model():
    return Model(CONFIG)


def load_quark():
    _model().load_quark()


def load_first_only():
    _model().load_first_only()


def load_own():
    _model().load_own()


def load_any():
    _model().load_any()


def load_lambda():
    _model().load_lambda()


def load_comprehension():
    _model().load_comprehension()


def load_unused():
    got = _model().load_unused()
    if got is not None:
        got()


def load_shadowed():
    _model().load_shadowed(SimpleNamespace(layers=[DecoderLayer()]))


PROBES = [load_quark, load_first_only, load_own, load_any, load_lambda, load_comprehension, load_unused,
          load_shadowed]

"""Runtime oracle probes (tests/oracle.py): a model runner sets up its pools."""

from pkg.runner import BareRunner, ModelRunner


def runner():
    ModelRunner().initialize()


def bare_runner():
    BareRunner().initialize()


PROBES = [runner, bare_runner]

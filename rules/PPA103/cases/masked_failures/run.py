"""Runtime oracle probes (tests/oracle.py): each model as the engine runs it, in its order:
construction, then `load_weights` with the whole checkpoint on every rank, then `forward`."""

from types import SimpleNamespace

from pkg.model import AssertingForCausalLM, BrokenLoaderForCausalLM, ReadingForCausalLM, SkippingForCausalLM

CONFIG = SimpleNamespace()
CHECKPOINT = [(f"model.layers.{i}.mlp.weight", 1.0) for i in range(4)]
WEIGHTS = [(name[len("model."):], w) for name, w in CHECKPOINT]  # as the wrapper hands them on


def serve(cls):
    model = cls(CONFIG)
    model.load_weights(WEIGHTS)
    model([0, 1, 2], [0.5])


def skipping():
    serve(SkippingForCausalLM)


def broken_loader():
    serve(BrokenLoaderForCausalLM)


def reading():
    ReadingForCausalLM(CONFIG).load_weights(WEIGHTS)


def asserting():
    AssertingForCausalLM(CONFIG).load_weights(WEIGHTS)


PROBES = [skipping, broken_loader, reading, asserting]

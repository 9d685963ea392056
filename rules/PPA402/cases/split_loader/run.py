"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import (ReraisingModel, SplitLoaderModel, SubmoduleFirstModel, SubmoduleSkippedModel,
                       SwallowingModel)

EXPERTS = [(f"layers.{i}.mlp.experts.w13_weight", 1.0) for i in range(4)]


def split_quantized():
    SplitLoaderModel(SimpleNamespace(quant="mxfp4")).load_weights(EXPERTS)


def split_plain():
    SplitLoaderModel(SimpleNamespace(quant=None)).load_weights(EXPERTS)


def submodule_first():
    SubmoduleFirstModel(SimpleNamespace()).load_weights(EXPERTS)


def submodule_skipped():
    SubmoduleSkippedModel(SimpleNamespace()).load_weights(EXPERTS)


def reraising():
    ReraisingModel(SimpleNamespace()).load_weights(EXPERTS)


def swallowing():
    SwallowingModel(SimpleNamespace()).load_weights(EXPERTS)


PROBES = [split_quantized, split_plain, submodule_first, submodule_skipped, reraising, swallowing]

"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.models import BranchTest, ElifTest, EmbeddingModel, PickedHead, VisionLoader

CONFIG = SimpleNamespace()


def _layers(prefix):
    return [(f"{prefix}layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def submodule_dict():
    EmbeddingModel(CONFIG).load_weights(_layers(""))


def vision_dict():
    VisionLoader(CONFIG).load_weights([("weight", 1.0)])


def branch_test():
    BranchTest(CONFIG).load_weights(_layers("model."))


def elif_test():
    ElifTest(CONFIG).load_weights(_layers("model."))


def picked_head():
    PickedHead(CONFIG).load_weights(_layers("model.") + [("projector.weight", 1.0)])


PROBES = [submodule_dict, vision_dict, branch_test, elif_test, picked_head]

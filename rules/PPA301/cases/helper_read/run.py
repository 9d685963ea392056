"""Runtime oracle probes (tests/oracle.py): the model loader calls load_weights on every model."""

from types import SimpleNamespace

from pkg.eagle import DraftHead, EagleMoEModel, FixedEagleMoEModel, LazyDraftHead, OwnMappingEagleMoEModel

CONFIG = SimpleNamespace(fused=True, scale=2)


def load_eagle():
    EagleMoEModel(CONFIG).load_weights([])


def load_fixed():
    FixedEagleMoEModel(CONFIG).load_weights([])
    OwnMappingEagleMoEModel(CONFIG).load_weights([])
    FixedEagleMoEModel(CONFIG).forward(1)


def logits():
    DraftHead(CONFIG).compute_logits(1)


def lazy_logits():
    LazyDraftHead(CONFIG).compute_logits(1)


PROBES = [load_eagle, load_fixed, logits, lazy_logits]

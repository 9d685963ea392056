"""Runtime oracle probes (tests/oracle.py): run every stage in turn, each on what the previous sent."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group

from pkg.model import DsaModel, FixedDsaModel, ResidualModel

CONFIG = SimpleNamespace(num_hidden_layers=6)
# the first layer of stage 1 (pp=2: layer 3; pp=3: layer 2 is even, pp=4 rank 1: layer 1) reuses
# the previous layer's indices; what a rank receives is what the rank before it sent
BLAME = {"pkg/model.py:37": "pkg/layers.py:13"}


def _received(model_cls):
    """What this rank receives: the stages before it, run here in order (same code, same config)."""
    import os

    rank = get_pp_group().rank_in_group
    sent = None
    for r in range(rank):
        os.environ["PP_ATTR_LINT_PP_RANK"] = str(r)
        try:
            sent = model_cls(CONFIG, prefix="model")([0, 1], sent)
        finally:
            os.environ["PP_ATTR_LINT_PP_RANK"] = str(rank)
    return sent


def dsa():
    DsaModel(CONFIG, prefix="model")([0, 1], _received(DsaModel))


def dsa_fixed():
    FixedDsaModel(CONFIG, prefix="model")([0, 1], _received(FixedDsaModel))


def residual():
    ResidualModel(CONFIG, prefix="model")([0, 1], _received(ResidualModel))


PROBES = [dsa, dsa_fixed, residual]

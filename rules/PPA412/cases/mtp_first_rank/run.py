"""Runtime oracle probes (tests/oracle.py): the target runs as a stage on every rank (each on what
the rank before it sent); the drafter runs on the last rank only, on the target's output and no
intermediate tensors (vLLM's GPU model runner)."""

import os

from vllm.distributed import get_pp_group

from mtpkg.model_executor.models.demo import DemoForCausalLM
from mtpkg.model_executor.models.demo_mtp import DemoMTP
from mtpkg.model_executor.models.demo_mtp_fixed import FixedDemoMTP

INPUT_IDS = [1, 2]
# the rank test sends the last rank into the branch that asserts on the intermediate tensors
BLAME = {"mtpkg/model_executor/models/demo_mtp.py:9": "mtpkg/model_executor/models/demo_mtp.py:12"}


def _target():
    rank = get_pp_group().rank_in_group
    sent = None
    for r in range(rank):
        os.environ["PP_ATTR_LINT_PP_RANK"] = str(r)
        try:
            sent = DemoForCausalLM().forward(INPUT_IDS, sent)
        finally:
            os.environ["PP_ATTR_LINT_PP_RANK"] = str(rank)
    return DemoForCausalLM().forward(INPUT_IDS, sent)


def _serve(drafter_cls):
    out = _target()
    if get_pp_group().is_last_rank:
        drafter_cls().forward(INPUT_IDS, out)


def mtp():
    _serve(DemoMTP)


def mtp_fixed():
    _serve(FixedDemoMTP)


PROBES = [mtp, mtp_fixed]

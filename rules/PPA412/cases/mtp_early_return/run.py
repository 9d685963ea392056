"""Runtime oracle probes (tests/oracle.py): the target runs as a stage on every rank (each on what
the rank before it sent); the drafters run on the last rank only, on the target's output and no
intermediate tensors (vLLM's GPU model runner)."""

import os

from vllm.distributed import get_pp_group

from mtpkg.model_executor.models.demo import DemoForCausalLM
from mtpkg.model_executor.models.fixed_return_mtp import FixedReturnMTP
from mtpkg.model_executor.models.not_first_mtp import NotFirstMTP
from mtpkg.model_executor.models.return_mtp import ReturnMTP

INPUT_IDS = [1, 2]
# the rank test sends the last rank past the return / into the branch that asserts
BLAME = {"mtpkg/model_executor/models/return_mtp.py:10": "mtpkg/model_executor/models/return_mtp.py:12",
         "mtpkg/model_executor/models/not_first_mtp.py:10": "mtpkg/model_executor/models/not_first_mtp.py:11"}


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


def early_return():
    _serve(ReturnMTP)


def not_first():
    _serve(NotFirstMTP)


def fixed():
    _serve(FixedReturnMTP)


PROBES = [early_return, not_first, fixed]

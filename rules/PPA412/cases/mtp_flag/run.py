"""Runtime oracle probes (tests/oracle.py): the target runs as a stage on every rank (each on what
the rank before it sent); the drafters run on the last rank only, on the target's output and no
intermediate tensors (vLLM's GPU model runner)."""

import os

from vllm.distributed import get_pp_group

from mtpkg.model_executor.models.demo import DemoForCausalLM
from mtpkg.model_executor.models.flag_mtp import FlagMTP
from mtpkg.model_executor.models.flag_return_mtp import FlagReturnMTP
from mtpkg.model_executor.models.reassigned_flag_mtp import ReassignedFlagMTP

INPUT_IDS = [1, 2]
# the flag's rank test sends the last rank into the branch that asserts / past the return
BLAME = {"mtpkg/model_executor/models/flag_mtp.py:12": "mtpkg/model_executor/models/flag_mtp.py:13",
         "mtpkg/model_executor/models/flag_return_mtp.py:11":
             "mtpkg/model_executor/models/flag_return_mtp.py:13"}


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


def flag():
    _serve(FlagMTP)


def flag_return():
    _serve(FlagReturnMTP)


def reassigned():
    _serve(ReassignedFlagMTP)


PROBES = [flag, flag_return, reassigned]

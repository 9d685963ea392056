"""Runtime oracle probes (tests/oracle.py): one step on each rank, fed what the ranks before it sent."""

import os

from vllm.distributed import get_pp_group

from pkg.runner import OmniModelRunner
from pkg.thinker import Thinker


def _received():
    rank = get_pp_group().rank_in_group
    sent = None
    for r in range(rank):
        os.environ["PP_ATTR_LINT_PP_RANK"] = str(r)
        try:
            sent = Thinker()([1, 2], sent)
        finally:
            os.environ["PP_ATTR_LINT_PP_RANK"] = str(rank)
    return sent


def step():
    OmniModelRunner(Thinker()).execute_model([1, 2], _received())


def step_fixed():
    OmniModelRunner(Thinker()).execute_model_fixed([1, 2], _received())


def profile_single_rank():
    saved = os.environ["PP_ATTR_LINT_PP_SIZE"], os.environ["PP_ATTR_LINT_PP_RANK"]
    os.environ["PP_ATTR_LINT_PP_SIZE"], os.environ["PP_ATTR_LINT_PP_RANK"] = "1", "0"
    try:
        OmniModelRunner(Thinker()).dummy_run([1, 2])
    finally:
        os.environ["PP_ATTR_LINT_PP_SIZE"], os.environ["PP_ATTR_LINT_PP_RANK"] = saved


PROBES = [step, step_fixed, profile_single_rank]

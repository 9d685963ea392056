"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers, on
each stage of a multi-stage deployment (pipeline parallelism is a setting of the whole pipeline)."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.flow import (FirstRankReturnsForConditionalGeneration, InTryForConditionalGeneration,
                      ReplacedInTryElseForConditionalGeneration, ReturnsEarlyForConditionalGeneration,
                      ReturnsEarlyLocalForConditionalGeneration)

THINKER = SimpleNamespace(model_stage="thinker")
TALKER = SimpleNamespace(model_stage="talker")


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def returns_early():
    _serve(ReturnsEarlyForConditionalGeneration(THINKER))
    _serve(ReturnsEarlyForConditionalGeneration(TALKER))


def returns_early_local():
    _serve(ReturnsEarlyLocalForConditionalGeneration(THINKER))
    _serve(ReturnsEarlyLocalForConditionalGeneration(TALKER))


def first_rank_returns():
    _serve(FirstRankReturnsForConditionalGeneration(TALKER))


def in_try():
    _serve(InTryForConditionalGeneration(TALKER))


def replaced_in_try_else():
    _serve(ReplacedInTryElseForConditionalGeneration(TALKER))


PROBES = [returns_early, returns_early_local, first_rank_returns, in_try, replaced_in_try_else]

# the runner's call of the hook (TypeError) fails because of the hook the model assigned
BLAME = {"pkg/flow.py:25": "run.py:19", "pkg/flow.py:38": "run.py:19", "pkg/flow.py:66": "run.py:19"}

"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers, on
each stage of a multi-stage deployment (pipeline parallelism is a setting of the whole pipeline)."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.omni import (AnswersNoneForConditionalGeneration, ReplacedForConditionalGeneration, StagedForConditionalGeneration,
                      TakesArgsForConditionalGeneration, Token2WavForConditionalGeneration)

THINKER = SimpleNamespace(model_stage="thinker")
TALKER = SimpleNamespace(model_stage="talker")


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def staged():
    _serve(StagedForConditionalGeneration(THINKER))
    _serve(StagedForConditionalGeneration(TALKER))


def token2wav():
    _serve(Token2WavForConditionalGeneration(TALKER))


def takes_args():
    _serve(TakesArgsForConditionalGeneration(THINKER))
    _serve(TakesArgsForConditionalGeneration(TALKER))
    _serve(ReplacedForConditionalGeneration(TALKER))


def answers_none():
    _serve(AnswersNoneForConditionalGeneration(THINKER))
    _serve(AnswersNoneForConditionalGeneration(TALKER))


PROBES = [staged, token2wav, takes_args, answers_none]

# the runner's call of the hook (TypeError) fails because of the hook the model assigned
BLAME = {"pkg/omni.py:24": "run.py:18", "pkg/omni.py:35": "run.py:18", "pkg/omni.py:77": "run.py:18"}

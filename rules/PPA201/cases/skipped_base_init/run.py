"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.base import VLForConditionalGeneration
from pkg.next import (ChainedNextForConditionalGeneration, ModuleInitNextForConditionalGeneration,
                      NextForConditionalGeneration, WiredNextForConditionalGeneration)

CONFIG = SimpleNamespace()


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def skipped():
    _serve(NextForConditionalGeneration(CONFIG))


def wired():
    _serve(VLForConditionalGeneration(CONFIG))
    _serve(WiredNextForConditionalGeneration(CONFIG))
    _serve(ModuleInitNextForConditionalGeneration(CONFIG))
    _serve(ChainedNextForConditionalGeneration(CONFIG))


PROBES = [skipped, wired]

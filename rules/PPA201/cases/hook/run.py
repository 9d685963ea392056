"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.text import DefinesHook, TextForCausalLM
from pkg.vl import InheritsHook, VLForConditionalGeneration, WiredVLForConditionalGeneration

CONFIG = SimpleNamespace()


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def vl():
    _serve(VLForConditionalGeneration(CONFIG))


def wired():
    _serve(WiredVLForConditionalGeneration(CONFIG))
    _serve(TextForCausalLM(CONFIG))
    _serve(DefinesHook())
    _serve(InheritsHook(CONFIG))


PROBES = [vl, wired]

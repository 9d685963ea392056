"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.base import BaseForCausalLM
from pkg.sub import CallsInitForCausalLM, HelperInitForCausalLM, NoInitCallForCausalLM, OwnHookForCausalLM

CONFIG = SimpleNamespace()


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def no_init_call():
    _serve(NoInitCallForCausalLM(CONFIG))


def wired():
    _serve(BaseForCausalLM(CONFIG))
    _serve(CallsInitForCausalLM(CONFIG))
    _serve(OwnHookForCausalLM(CONFIG))
    _serve(HelperInitForCausalLM(CONFIG))


PROBES = [no_init_call, wired]

"""Runtime oracle probes (tests/oracle.py): ranks after the first ask the model for buffers."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

from pkg.model import AliasVarsForCausalLM, CopiedConfigForCausalLM, SelfVarsForCausalLM, StrictForCausalLM

CONFIG = SimpleNamespace(hidden_size=4)


def _serve(model):
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def copied():
    _serve(CopiedConfigForCausalLM(CONFIG))


def strict():
    _serve(StrictForCausalLM(CONFIG))


def dynamic():
    _serve(SelfVarsForCausalLM(CONFIG))
    _serve(AliasVarsForCausalLM(CONFIG))


PROBES = [copied, strict, dynamic]

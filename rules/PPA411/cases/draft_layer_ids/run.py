"""Runtime oracle probes (tests/oracle.py): build the target on each rank and, on the last rank
only, the draft head in the same forward context (vLLM's GPU model runner)."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group

from pkg import config
from pkg.eagle import EagleLlamaForCausalLM, FixedEagleLlamaForCausalLM, StageCounter
from pkg.llama import LlamaForCausalLM

# the assignment makes the head's construction fail (a duplicate layer name)
BLAME = {"pkg/eagle.py:12": "pkg/eagle.py:13"}


def _config():
    g = get_pp_group()
    return SimpleNamespace(model_config=config.ModelConfig(6),
                           parallel_config=SimpleNamespace(rank=g.rank_in_group, pipeline_parallel_size=g.world_size))


def _serve(head_cls):
    config.STATIC_FORWARD_CONTEXT.clear()
    vllm_config = _config()
    LlamaForCausalLM(vllm_config)
    if get_pp_group().is_last_rank:
        head_cls(vllm_config)


def eagle():
    _serve(EagleLlamaForCausalLM)


def eagle_fixed():
    _serve(FixedEagleLlamaForCausalLM)


def counter():
    StageCounter(_config())


PROBES = [eagle, eagle_fixed, counter]

"""Runtime oracle probes (tests/oracle.py): the plugin registers its models; the engine builds a
drafter (pipeline_parallel_size=1: never asked for buffers) and serves the model, whose ranks after
the first ask it for buffers."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group
from vllm.v1.worker.gpu_model_runner import receive_buffers

import plugin
from plugin.drafter import PluginEagleLlama
from plugin.drafter3 import PluginEagle3Llama
from plugin.lm import PluginLMForCausalLM
from plugin.vwn import PluginSpecAwareLM, PluginVwnEagle3

CONFIG = SimpleNamespace()
DRAFTING = SimpleNamespace(speculative_config=SimpleNamespace(draft_model_config=SimpleNamespace(hf_config=None)))
SERVING = SimpleNamespace(speculative_config=None)


def drafters():
    plugin.register()
    PluginEagleLlama(CONFIG)
    PluginEagle3Llama(CONFIG)
    PluginVwnEagle3(DRAFTING)


def serve():
    model = PluginLMForCausalLM(CONFIG)
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


def serve_spec_aware():
    model = PluginSpecAwareLM(SERVING)
    if not get_pp_group().is_first_rank:
        receive_buffers(model)


PROBES = [drafters, serve, serve_spec_aware]

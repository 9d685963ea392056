"""Runtime oracle probes (tests/oracle.py): the model runner builds the entry class and calls
`forward` on every rank, passing `pp_proxy_tensors` (what the previous rank sent) only to a
`forward` that takes it, as SGLang's does (`support_pp`)."""

import inspect
from types import SimpleNamespace

from vllm.distributed import get_pp_group

from mysgl.srt.models.mimo import MiMoForCausalLM
from mysgl.srt.models.qwen2 import Qwen2ForCausalLM

TIED = SimpleNamespace(tie_word_embeddings=True)


def serve(model):
    kwargs = {}
    if "pp_proxy_tensors" in inspect.signature(model.forward).parameters and not get_pp_group().is_first_rank:
        kwargs["pp_proxy_tensors"] = {"hidden_states": [0.5, 0.5]}
    return model([1, 2], [0, 1], **kwargs)


def wrapper_without_proxy():
    serve(MiMoForCausalLM(TIED))


def wrapper_with_proxy():
    serve(Qwen2ForCausalLM(TIED))


PROBES = [wrapper_without_proxy, wrapper_with_proxy]

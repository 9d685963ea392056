"""Runtime oracle probes (tests/oracle.py): the model runner builds the entry class and calls
`forward` on every rank, passing `pp_proxy_tensors` (what the previous rank sent) only to a
`forward` that takes it, as SGLang's does (`support_pp`); an embedding model gets
`get_embedding=True`, a prefill batch is an extend batch."""

import inspect
from types import SimpleNamespace

from vllm.distributed import get_pp_group

from mysgl.srt.models.classifier import Qwen2ForClassification
from mysgl.srt.models.llava import LlavaFirstRankOnly, LlavaQwenForCausalLM, LlavaWithProxy

CONFIG = SimpleNamespace(tie_word_embeddings=False)


def serve(model, **extra):
    kwargs = dict(extra)
    if "pp_proxy_tensors" in inspect.signature(model.forward).parameters and not get_pp_group().is_first_rank:
        kwargs["pp_proxy_tensors"] = {"hidden_states": [0.5, 0.5]}
    return model([1, 2], [0, 1], **kwargs)


def two_levels_on_extend():
    serve(LlavaQwenForCausalLM(CONFIG), is_extend=True)


def first_rank_only():
    serve(LlavaFirstRankOnly(CONFIG))


def two_levels_with_proxy():
    serve(LlavaWithProxy(CONFIG), is_extend=True)


def embedding_model():
    serve(Qwen2ForClassification(CONFIG), get_embedding=True)


PROBES = [two_levels_on_extend, first_rank_only, two_levels_with_proxy, embedding_model]

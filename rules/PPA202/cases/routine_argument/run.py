"""Runtime oracle probes (tests/oracle.py): the model runner builds the entry class and calls
`forward` on every rank, passing `pp_proxy_tensors` (what the previous rank sent) only to a
`forward` that takes it, as SGLang's does (`support_pp`)."""

import inspect
from types import SimpleNamespace

from vllm.distributed import get_pp_group

from mysgl.srt.models.glm4v import Glm4vForConditionalGeneration
from mysgl.srt.models.qwen2_5_vl import Qwen2_5_VLForConditionalGeneration
from mysgl.srt.models.qwen2_vl import Qwen2VLForConditionalGeneration

TIED = SimpleNamespace(tie_word_embeddings=True)


def serve(model):
    kwargs = {}
    if "pp_proxy_tensors" in inspect.signature(model.forward).parameters and not get_pp_group().is_first_rank:
        kwargs["pp_proxy_tensors"] = {"hidden_states": [0.5, 0.5]}
    return model([1, 2], [0, 1], **kwargs)


def routine_without_proxy():
    serve(Qwen2VLForConditionalGeneration(TIED))


def routine_with_proxy():
    serve(Qwen2_5_VLForConditionalGeneration(TIED))


def inherited_routine():
    serve(Glm4vForConditionalGeneration(TIED))


PROBES = [routine_without_proxy, routine_with_proxy, inherited_routine]

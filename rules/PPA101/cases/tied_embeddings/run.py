"""Runtime oracle probes (tests/oracle.py): build each model as vLLM would on this rank."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group

from pkg.flag import FlagForCausalLM
from pkg.model import AliasedHeadForCausalLM, ForCausalLM, SelfTiedForCausalLM, TextModel, TiedFirstOnlyForCausalLM, WidthFromEmbeddingModel

TIED = SimpleNamespace(tie_word_embeddings=True)
UNTIED = SimpleNamespace(tie_word_embeddings=False)


def _serve(cls, config):
    model = cls(config)
    if get_pp_group().is_last_rank and hasattr(type(model), "compute_logits"):
        model.compute_logits(None)  # the runner computes logits on the last rank only


def correct_tied():
    _serve(ForCausalLM, TIED)


def correct_untied():
    _serve(ForCausalLM, UNTIED)
    TextModel(UNTIED)


def tied_to_first_rank_embedding():
    _serve(TiedFirstOnlyForCausalLM, TIED)


def width_on_every_rank():
    WidthFromEmbeddingModel(UNTIED)


def self_tied():
    _serve(SelfTiedForCausalLM, TIED)


def local_flag():
    _serve(FlagForCausalLM, TIED)


def head_aliased_to_placeholder():
    _serve(AliasedHeadForCausalLM, TIED)


PROBES = [correct_tied, correct_untied, tied_to_first_rank_embedding, width_on_every_rank, self_tied, local_flag, head_aliased_to_placeholder]
# the alias makes the logits processor's read fail later
BLAME = {"pkg/model.py:92": "pkg/model.py:97"}

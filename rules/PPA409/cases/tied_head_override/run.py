"""Runtime oracle probes (tests/oracle.py): load a tied checkpoint (no `lm_head.weight`) on each
rank; the rank that holds the head must have it filled (the bug fails silently: the probe makes the
uninitialised head visible)."""

from types import SimpleNamespace

from vllm.distributed import get_pp_group

from pkg.child import DenseForConditionalGeneration, FixedDenseForConditionalGeneration, RenamingForConditionalGeneration

CONFIG = SimpleNamespace(vocab_size=4, num_hidden_layers=4, tie_word_embeddings=True)
CHECKPOINT = [("model.language_model.embed_tokens.weight", "table")] + [
    (f"model.language_model.layers.{i}.weight", i) for i in range(4)]
BLAME = {"pkg/child.py:8": "run.py:21"}


def _load(cls):
    model = cls(CONFIG)
    model.load_weights(CHECKPOINT)
    if get_pp_group().is_last_rank:
        assert model.lm_head.weight.data == "table", "the last rank's head was never loaded"


def dense():
    _load(DenseForConditionalGeneration)


def dense_fixed():
    _load(FixedDenseForConditionalGeneration)


def renaming():
    _load(RenamingForConditionalGeneration)


PROBES = [dense, dense_fixed, renaming]

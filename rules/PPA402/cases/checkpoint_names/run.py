"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import AllLayersModel, HelperModel, MappedModel, StackedModel, TextModel

CONFIG = SimpleNamespace()
ATTN = [(f"layers.{i}.self_attn.q_proj.weight", 1.0) for i in range(4)]
SCALES = [(f"layers.{i}.self_attn.k_proj.output_scale", 0.5) for i in range(4)]


def kv_cache_scales():
    TextModel(CONFIG).load_weights(SCALES)


def attention_weights():
    TextModel(CONFIG).load_weights(ATTN)


def nested_helper():
    HelperModel(CONFIG).load_weights([(f"layers.{i}.self_attn.qkv.weight", 1.0) for i in range(4)])


def nested_helpers_checked():
    HelperModel(CONFIG).load_weights(ATTN + [(f"layers.{i}.self_attn.k_scale", 0.5) for i in range(4)])


def all_layers():
    AllLayersModel(CONFIG).load_weights(ATTN + SCALES)


def stacked():
    StackedModel(CONFIG).load_weights(ATTN)


def stacked_fixed():
    StackedModel(CONFIG).load_weights_fixed(ATTN)


def mapped_kv_cache_scales():
    MappedModel(CONFIG).load_weights(ATTN + SCALES)


PROBES = [kv_cache_scales, attention_weights, nested_helper, nested_helpers_checked, all_layers, stacked, stacked_fixed,
          mapped_kv_cache_scales]

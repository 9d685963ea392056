"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import CheckedRemapModel, RemapModel, UnknownRemapModel

CONFIG = SimpleNamespace()
ATTN = [(f"layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]
SCALES = [(f"layers.{i}.self_attn.kv_scale", 0.5) for i in range(4)]
K_SCALES = [(f"layers.{i}.self_attn.k_scale", 0.5) for i in range(4)]


def remap_scales():
    RemapModel(CONFIG).load_weights(SCALES)


def remap_attention():
    RemapModel(CONFIG).load_weights(ATTN)


def checked():
    CheckedRemapModel(CONFIG).load_weights(ATTN + K_SCALES)


def checked_method():
    CheckedRemapModel(CONFIG).load_scales(SCALES)


def unknown():
    UnknownRemapModel(CONFIG).load_weights(ATTN + K_SCALES)


PROBES = [remap_scales, remap_attention, checked, checked_method, unknown]

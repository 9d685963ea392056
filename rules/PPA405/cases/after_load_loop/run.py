"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import BrokenLoaderForCausalLM, SkippingForCausalLM

CONFIG = SimpleNamespace(full_attention_layer_ids=[0, 3])
WEIGHTS = [(f"model.layers.{i}.self_attn.qkv_proj.weight", 1.0) for i in range(4)]


def broken_loader():
    BrokenLoaderForCausalLM(CONFIG).load_weights(WEIGHTS)


def skipping():
    SkippingForCausalLM(CONFIG).load_weights(WEIGHTS)


PROBES = [broken_loader, skipping]

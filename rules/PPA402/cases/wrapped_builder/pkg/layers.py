"""A fork's own layer builders (lsglang 1.6.5 ``make_pp_layers`` in sglang/srt/utils/common.py):
one wraps ``make_layers``, one builds every layer and only returns a range beside them."""

import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


def make_stage_layers(num_hidden_layers, layer_fn, prefix=""):
    return make_layers(num_hidden_layers, layer_fn, prefix=prefix)


def make_every_layer(num_hidden_layers, layer_fn, prefix=""):
    return 0, num_hidden_layers, nn.ModuleList([layer_fn(prefix=f"{prefix}.{i}") for i in range(num_hidden_layers)])

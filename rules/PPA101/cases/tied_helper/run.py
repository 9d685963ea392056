"""Runtime oracle probes (tests/oracle.py): build each model as vLLM would on this rank, with tied
and untied configs, with and without a quantization that quantizes or ties its head."""

from types import SimpleNamespace

from pkg.model import (HelperTiedForCausalLM, LocalHelperTiedForCausalLM, LocalLooseHelperTiedForCausalLM,
                       LooseHelperTiedForCausalLM)

TIED = SimpleNamespace(tie_word_embeddings=True)
UNTIED = SimpleNamespace(tie_word_embeddings=False)
QUANTIZED_HEAD = SimpleNamespace(head_bits=4)
TIES_HEAD = SimpleNamespace(tie_head=True)
SETTINGS = [(TIED, None), (UNTIED, None), (TIED, QUANTIZED_HEAD), (UNTIED, QUANTIZED_HEAD), (UNTIED, TIES_HEAD)]


def strict_helper():
    for config, quant in SETTINGS:
        HelperTiedForCausalLM(config, quant)
        LocalHelperTiedForCausalLM(config, quant)


def loose_helper():
    for config, quant in SETTINGS:
        LooseHelperTiedForCausalLM(config, quant)


def local_loose_helper():
    for config, quant in SETTINGS:
        LocalLooseHelperTiedForCausalLM(config, quant)


PROBES = [strict_helper, loose_helper, local_loose_helper]

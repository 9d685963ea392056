"""Runtime oracle probes (tests/oracle.py): load every checkpoint weight on every rank, as SGLang's
loader does, then post-process the full-attention layers."""

from types import SimpleNamespace

from pkg.model import FixedLinearForCausalLM, LinearForCausalLM

CONFIG = SimpleNamespace(num_hidden_layers=4, full_attention_layer_ids=[0, 3])
WEIGHTS = [(f"model.layers.{i}.self_attn.q_proj.weight", [float(i)]) for i in range(4)]


def load():
    LinearForCausalLM(CONFIG).load_weights(WEIGHTS)


def load_post_process_only():
    LinearForCausalLM(CONFIG).load_weights([])


def load_fixed():
    FixedLinearForCausalLM(CONFIG).load_weights(WEIGHTS)


PROBES = [load, load_post_process_only, load_fixed]

"""Runtime oracle probes (tests/oracle.py): each stage builds its runner, pool and backend."""

from pkg.model_runner import ModelConfig, ModelRunner

CONFIG = ModelConfig(num_hidden_layers=4, num_attention_heads=2, v_head_dim=8)


def start(backend):
    runner = ModelRunner(CONFIG, backend)
    runner.init_attention_backend()
    return runner


def triton():
    start("triton")


def draft():
    start("draft")


def fixed():
    start("fixed")


def pool_head_dims():
    pool = start("fixed").token_to_kv_pool
    pool.first_key_head_dim()
    pool.key_head_dim()


PROBES = [triton, draft, fixed, pool_head_dims]

class TritonAttnBackend:
    def __init__(self, model_runner):
        self.num_head = model_runner.model_config.num_attention_heads
        # the constant 0 is reported where the pool indexes by it (memory_pool.py, get_value_buffer)
        self.v_head_dim = len(model_runner.token_to_kv_pool.get_value_buffer(0))


class DraftAttnBackend:
    def __init__(self, model_runner):
        # reported in memory_pool.py, at the index `_get_key_buffer` reads through `get_key_buffer`
        self.k_head_dim = len(model_runner.token_to_kv_pool.get_key_buffer(0))


class FixedAttnBackend:
    def __init__(self, model_runner):
        # ok: PPA403
        self.v_head_dim = model_runner.model_config.v_head_dim
        # ok: PPA403
        self.first_k = model_runner.token_to_kv_pool.get_key_buffer(model_runner.start_layer)
        if model_runner.start_layer == 0:
            # ok: PPA403
            self.first_v = model_runner.token_to_kv_pool.get_value_buffer(0)

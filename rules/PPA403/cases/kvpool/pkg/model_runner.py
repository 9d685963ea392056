from vllm.distributed import get_pp_group

from .backend import DraftAttnBackend, FixedAttnBackend, TritonAttnBackend
from .memory_pool import MHATokenToKVPool


class ModelConfig:
    def __init__(self, num_hidden_layers, num_attention_heads, v_head_dim):
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.v_head_dim = v_head_dim


class ModelRunner:
    def __init__(self, model_config, backend):
        self.model_config = model_config
        pp = get_pp_group()
        per_rank = model_config.num_hidden_layers // pp.world_size
        self.start_layer = pp.rank_in_group * per_rank
        self.end_layer = model_config.num_hidden_layers if pp.is_last_rank else self.start_layer + per_rank
        self.token_to_kv_pool = MHATokenToKVPool(16, model_config.v_head_dim, self.end_layer - self.start_layer,
                                                 start_layer=self.start_layer)
        self.backend = backend

    def init_attention_backend(self):
        if self.backend == "triton":
            self.attn_backend = TritonAttnBackend(self)
        elif self.backend == "draft":
            self.attn_backend = DraftAttnBackend(self)
        else:
            self.attn_backend = FixedAttnBackend(self)

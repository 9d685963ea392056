"""vLLM's ModelConfig layer counts (vllm/config/model.py) and the attention layer registry
(vllm/model_executor/layers/attention/attention.py), paraphrased."""
from vllm.model_executor.models.utils import get_pp_indices

STATIC_FORWARD_CONTEXT = {}


class ModelConfig:
    def __init__(self, num_hidden_layers):
        self.num_hidden_layers = num_hidden_layers

    def get_total_num_hidden_layers(self):
        return self.num_hidden_layers

    def get_num_layers(self, parallel_config):
        start, end = get_pp_indices(self.num_hidden_layers, parallel_config.rank, parallel_config.pipeline_parallel_size)
        return end - start


class Attention:
    def __init__(self, prefix):
        if prefix in STATIC_FORWARD_CONTEXT:
            raise ValueError(f"Duplicate layer name: {prefix}")
        STATIC_FORWARD_CONTEXT[prefix] = self

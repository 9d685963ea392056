import torch.nn as nn

from .llama import LlamaForCausalLM, LlamaModel


class EagleLlamaForCausalLM(LlamaForCausalLM):
    """vLLM's llama_eagle.py: the head's layers numbered from this stage's layer count."""

    def __init__(self, vllm_config, prefix=""):
        nn.Module.__init__(self)
        # ruleid: PPA411
        target_layer_num = vllm_config.model_config.get_num_layers(vllm_config.parallel_config)
        self.model = LlamaModel(vllm_config, prefix="model", start_layer_id=target_layer_num, num_layers=1)


class FixedEagleLlamaForCausalLM(LlamaForCausalLM):
    """llama_eagle3.py: numbered after all of the target's layers."""

    def __init__(self, vllm_config, prefix=""):
        nn.Module.__init__(self)
        # ok: PPA411
        target_layer_num = vllm_config.model_config.get_total_num_hidden_layers()
        self.model = LlamaModel(vllm_config, prefix="model", start_layer_id=target_layer_num, num_layers=1)


class StageCounter(nn.Module):
    """Uses this stage's layer count for something that is per stage."""

    def __init__(self, vllm_config):
        super().__init__()
        # ok: PPA411
        self.num_local_layers = vllm_config.model_config.get_num_layers(vllm_config.parallel_config)

import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


# ok: PPA201
class TextForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors


# ok: PPA201
class DefinesHook(nn.Module, SupportsPP):
    def make_empty_intermediate_tensors(self, batch_size, dtype, device):
        return {"hidden_states": [0.0] * batch_size}

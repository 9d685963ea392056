import torch.nn as nn

from mysgl.srt.models.qwen2_vl import Qwen2VLForConditionalGeneration


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = [1.0]

    def forward(self, input_ids):
        return [self.weight[0] * i for i in input_ids]


class Glm4Model(nn.Module):
    """A language model that knows nothing of pipeline stages: it takes no `pp_proxy_tensors`."""

    def __init__(self, config):
        super().__init__()
        self.embed_tokens = Embedding()

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, input_ids, positions, forward_batch=None, input_embeds=None):
        return input_embeds


# ok: PPA202
class Glm4vForConditionalGeneration(Qwen2VLForConditionalGeneration):
    """Inherits the routine call of `Qwen2VLForConditionalGeneration.forward`, but its own
    `__init__` builds another language model: `self.model` is what this class's `__init__` makes,
    not the base's `Qwen2Model`, so no inner `forward` that needs `pp_proxy_tensors` is called."""

    def __init__(self, config):
        nn.Module.__init__(self)
        self.model = Glm4Model(config)
        self.lm_head = self.model.embed_tokens


EntryClass = Glm4vForConditionalGeneration

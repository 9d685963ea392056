import torch.nn as nn

from mysgl.srt.models.qwen2 import Qwen2Model


class Qwen2ForClassification(nn.Module):
    """An embedding-only model (SGLang 0.4.6 llama_classification.py): its `forward` asserts the
    argument the runner sets for embedding models, then calls the inner model without
    `pp_proxy_tensors`."""

    def __init__(self, config):
        super().__init__()
        self.model = Qwen2Model(config)

    def forward(self, input_ids, positions, get_embedding=True):
        assert get_embedding, "only used for embedding"
        # ruleid: PPA202
        hidden_states = self.model(input_ids, positions)
        return hidden_states


EntryClass = Qwen2ForClassification

import torch.nn as nn

from mysgl.srt.models.qwen2 import Qwen2Model


class MiMoMTP(nn.Module):
    """A speculative draft model (SGLang's `*MTP` classes): its registry loads it like any other,
    but whether the engine runs it under PP depends on the speculative-decoding settings, so the
    same `forward` is listed as not judged rather than reported."""

    def __init__(self, config):
        super().__init__()
        self.model = Qwen2Model(config)

    def forward(self, input_ids, positions):
        return self.model(input_ids, positions)


EntryClass = MiMoMTP

import torch.nn as nn


class NoResidualLayer(nn.Module):
    """MiniCPMDecoderLayer in vLLM 0.32.0: it adds the residual itself and returns None for it."""

    def __init__(self, prefix=""):
        super().__init__()

    def forward(self, hidden_states, residual):
        return hidden_states, None

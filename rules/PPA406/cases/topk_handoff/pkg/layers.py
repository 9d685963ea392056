import torch.nn as nn


class SharedIndexerAttention(nn.Module):
    """Every second layer reuses the previous layer's top-k indices (`skip_topk`)."""

    def __init__(self, layer_id):
        super().__init__()
        self.skip_topk = layer_id % 2 == 1

    def forward(self, hidden_states, prev_topk_indices):
        topk_indices = prev_topk_indices if self.skip_topk else list(range(len(hidden_states)))
        page_table = topk_indices.copy()  # the sparse attention reads the selected blocks
        return [h + len(page_table) for h in hidden_states], topk_indices


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = SharedIndexerAttention(int(prefix.rsplit(".", 1)[-1]))

    def forward(self, positions, hidden_states, prev_topk_indices):
        hidden_states, topk_indices = self.self_attn(hidden_states, prev_topk_indices)
        return hidden_states, topk_indices

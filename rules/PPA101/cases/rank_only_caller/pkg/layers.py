import torch.nn as nn


class Embedding(nn.Module):
    def __init__(self, num, dim, prefix=""):
        super().__init__()
        self.embedding_dim = dim
        self.weight = [[0.0] * dim for _ in range(num)]

    def forward(self, ids):
        return [self.weight[i] for i in ids]


class LMHead(Embedding):
    def tie_weights(self, embed_tokens):
        self.weight = embed_tokens.weight
        return self


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = nn.Identity()

    def forward(self, h):
        return self.mlp(h)

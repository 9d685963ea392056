import torch.nn as nn

from .text import RangeForCausalLM, TextForCausalLM


class VLForConditionalGeneration(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = TextForCausalLM(config)

    def embed_input_ids(self, input_ids):
        # ruleid: PPA002
        return self.language_model.embed_tokens(input_ids)

    def final_norm(self, hidden_states):
        # ok: PPA002
        return self.language_model.model.norm(hidden_states)


class OtherVL(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.language_model = RangeForCausalLM(config)
        # ok: PPA002
        self.n_layers = len(self.language_model.model.layers)

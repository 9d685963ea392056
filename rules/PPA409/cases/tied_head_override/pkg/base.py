import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class Embedding(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.weight = nn.Parameter((vocab_size,))


class Layer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.weight = nn.Parameter((1,))


class TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = Embedding(config.vocab_size) if get_pp_group().is_first_rank else PPMissingLayer()
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers, Layer, prefix="layers")


class VLForConditionalGeneration(nn.Module):
    """Qwen3-VL's head: one module with the embedding on a single rank, its own copy on the last
    rank under pipeline parallelism (the checkpoint has no `lm_head.weight`)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            if get_pp_group().world_size == 1 and config.tie_word_embeddings:
                self.lm_head = self.model.embed_tokens
            else:
                self.lm_head = Embedding(config.vocab_size)
        else:
            self.lm_head = PPMissingLayer()

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, loaded in weights:
            if get_pp_group().is_last_rank and self.config.tie_word_embeddings \
                    and name == "model.embed_tokens.weight" and "lm_head.weight" in params:
                params["lm_head.weight"].data = loaded  # the last stage's head takes the table
            if name in params:
                params[name].data = loaded

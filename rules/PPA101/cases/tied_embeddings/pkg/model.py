import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer, make_layers

from .layers import DecoderLayer, Embedding, LMHead


class TextModel(nn.Module):
    """Builds embed_tokens where llama.py does: on the first rank, and on the last when tied."""

    def __init__(self, config, prefix=""):
        super().__init__()
        pp = get_pp_group()
        if pp.is_first_rank or (config.tie_word_embeddings and pp.is_last_rank):
            self.embed_tokens = Embedding(8, 4)
        else:
            self.embed_tokens = PPMissingLayer()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))
        self.norm = Embedding(1, 4) if pp.is_last_rank else PPMissingLayer()
        if pp.is_first_rank:
            # ok: PPA101
            self.hidden_size = self.embed_tokens.embedding_dim
        # ok: PPA101
        self.norm_dim = self.norm.embedding_dim if pp.is_last_rank else None


class FirstOnlyTextModel(nn.Module):
    """Builds embed_tokens on the first rank only; reads its width on every rank."""

    def __init__(self, config, prefix=""):
        super().__init__()
        if get_pp_group().is_first_rank:
            self.embed_tokens = Embedding(8, 4)
        else:
            self.embed_tokens = PPMissingLayer()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class WidthFromEmbeddingModel(FirstOnlyTextModel):
    """Reads the embedding's width on every rank (vLLM models did this to size other layers)."""

    def __init__(self, config, prefix=""):
        super().__init__(config, prefix)
        # ruleid: PPA101
        self.hidden_size = self.embed_tokens.embedding_dim


class ForCausalLM(nn.Module):
    """Ties the head only where the inner model built the embedding: correct."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if config.tie_word_embeddings:
                # ok: PPA101
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

    def compute_logits(self, hidden_states):
        # ok: PPA101
        return self.lm_head.weight


class TiedFirstOnlyForCausalLM(nn.Module):
    """Ties the head on the last rank to an embedding that only the first rank builds."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = FirstOnlyTextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if config.tie_word_embeddings:
                # ruleid: PPA101
                self.lm_head.weight = self.model.embed_tokens.weight
        else:
            self.lm_head = PPMissingLayer()


class AliasedHeadForCausalLM(nn.Module):
    """Makes the head an alias of an embedding that is a placeholder on the last rank."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = FirstOnlyTextModel(config)
        if config.tie_word_embeddings:
            # ruleid: PPA101
            self.lm_head = self.model.embed_tokens
        else:
            self.lm_head = LMHead(8, 4)

    def compute_logits(self, hidden_states):
        return self.lm_head.weight


class SelfTiedForCausalLM(nn.Module):
    """Ties the head on every rank, reassigning it from itself (vLLM 0.32.0 ernie45_moe.py)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
        else:
            self.lm_head = PPMissingLayer()
        if config.tie_word_embeddings:
            # ruleid: PPA101
            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)

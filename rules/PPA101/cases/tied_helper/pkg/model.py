import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer

from .layers import Embedding, LMHead
from .utils import prefers_tie, should_tie


class TextModel(nn.Module):
    """Builds embed_tokens where llama.py does: on the first rank, and on the last when tied."""

    def __init__(self, config, prefix=""):
        super().__init__()
        pp = get_pp_group()
        if pp.is_first_rank or (config.tie_word_embeddings and pp.is_last_rank):
            self.embed_tokens = Embedding(8, 4)
        else:
            self.embed_tokens = PPMissingLayer()


class HelperTiedForCausalLM(nn.Module):
    """Ties when a helper says so, and the helper never says so unless the config ties
    (Aphrodite 0.24.1 llama.py:477-493)."""

    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.use_tied_lm_head = should_tie(config, quant_config)
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if self.use_tied_lm_head:
                # ok: PPA101
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()


class LocalHelperTiedForCausalLM(nn.Module):
    """The same helper through a local flag (Aphrodite 0.24.1 qwen3.py:289-298)."""

    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        use_tied = should_tie(config, quant_config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if use_tied:
                # ok: PPA101
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()


class LooseHelperTiedForCausalLM(nn.Module):
    """Ties when a helper says so that may say so for an untied config: the last rank then ties
    to the embedding it did not build."""

    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.tie_anyway = prefers_tie(config, quant_config)
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if self.tie_anyway:
                # ruleid: PPA101
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()


class LocalLooseHelperTiedForCausalLM(nn.Module):
    """The loose helper through a local flag."""

    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        tie = prefers_tie(config, quant_config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if tie:
                # ruleid: PPA101
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer

from .layers import Embedding, LMHead


class FlagModel(nn.Module):
    """Decides once, in a local flag, where the embedding lives (SGLang's bailing_moe.py)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        pp = get_pp_group()
        keep = pp.is_first_rank or (config.tie_word_embeddings and pp.is_last_rank)
        if keep:
            self.word_embeddings = Embedding(8, 4)
        else:
            self.word_embeddings = PPMissingLayer()


class FlagForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = FlagModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
            if config.tie_word_embeddings:
                # ok: PPA101
                self.lm_head.weight = self.model.word_embeddings.weight
        else:
            self.lm_head = PPMissingLayer()

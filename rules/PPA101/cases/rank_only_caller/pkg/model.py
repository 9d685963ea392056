import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer

from .layers import LMHead


class ForCausalLM(nn.Module):
    """Builds the head on the last rank only."""

    def __init__(self, config, prefix=""):
        super().__init__()
        if get_pp_group().is_last_rank:
            self.lm_head = LMHead(8, 4)
        else:
            self.lm_head = PPMissingLayer()

    def compute_logits_sharded(self, hidden_states):
        """Only the runner's sample() calls it, and sample() runs on the last rank only (vLLM
        0.33.0 compute_logits_local, v1/worker/gpu/model_runner.py)."""
        # ok: PPA101
        return self.lm_head.weight

    def head_size(self):
        """The runner asks every rank."""
        # ruleid: PPA101
        return len(self.lm_head.weight)

    def compute_logits_gathered(self, hidden_states):
        """Called by the runner's gather(), which sample_tokens() calls on the last rank only, and
        which a profiling mixin calls on every rank (`self` is a runner there)."""
        # ruleid: PPA101
        return self.lm_head.weight

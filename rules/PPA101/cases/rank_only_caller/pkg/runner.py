from vllm.distributed import get_pp_group


class Sampler:
    def sample(self, logits):
        """Another class's `sample`: its callers are not the runner's."""
        return logits


class Runner:
    """vLLM 0.33.0's GPUModelRunner in miniature: sample_tokens() returns early on every rank but
    the last, then calls sample(), the only caller of the model's sharded logits."""

    def __init__(self, model):
        self.model = model
        self.sampler = Sampler()
        self.is_last_pp_rank = get_pp_group().is_last_rank

    def sample(self, hidden_states, batch):
        logits = self.model.compute_logits_sharded(hidden_states)
        return self.sampler.sample(logits)

    def gather(self, hidden_states):
        return self.model.compute_logits_gathered(hidden_states)

    def sample_tokens(self, hidden_states, batch):
        if not self.is_last_pp_rank:
            return None
        self.gather(hidden_states)
        return self.sample(hidden_states, batch)

    def profile(self):
        return self.model.head_size()

    def draw(self, rng):
        return rng.sample(range(4), k=2)  # not a call of Runner.sample: it has no `k`


class Profiler:
    """A mixin: its `self` is whatever class mixes it in."""

    def profile_gather(self, hidden_states):
        return self.gather(hidden_states)


class ProfilingRunner(Profiler, Runner):
    pass

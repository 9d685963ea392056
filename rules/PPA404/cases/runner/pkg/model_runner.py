from vllm.distributed import get_pp_group


class ModelRunner:
    """The sampled-token hand-off of vLLM's GPU model runner (vLLM PR 40749)."""

    def __init__(self, use_async_scheduling):
        self.use_async_scheduling = use_async_scheduling
        self.execute_model_state = None
        self.received = None

    def _broadcast_sampled(self, sampled):
        pp = get_pp_group()
        assert pp.is_last_rank
        return sampled

    def _receive_sampled(self):
        """Ranks that are not last receive what the last rank sampled."""
        if get_pp_group().is_last_rank:
            raise RuntimeError("the last rank samples, it does not receive")
        self.received = "sampled ids"

    def execute_model(self, num_tokens):
        if num_tokens == 0:
            self.execute_model_state = None
            return None
        if not get_pp_group().is_last_rank:
            self.execute_model_state = None
            return "intermediate tensors"
        self.execute_model_state = {"logits": [0.1, 0.9]}
        return None

    def sample_tokens(self):
        if self.execute_model_state is None:
            # nothing ran this step: a rank that is not last, or an empty step on any rank
            if self.use_async_scheduling and get_pp_group().world_size > 1:
                # ruleid: PPA404
                self._receive_sampled()
            return None
        state, self.execute_model_state = self.execute_model_state, None
        sampled = [0]
        if get_pp_group().world_size > 1:
            # ok: PPA404
            sampled = self._broadcast_sampled(sampled)
        return sampled

    def sample_tokens_fixed(self):
        if self.execute_model_state is None:
            pp = get_pp_group()
            if self.use_async_scheduling and pp.world_size > 1 and not pp.is_last_rank:
                # ok: PPA404
                self._receive_sampled()
            return None
        self.execute_model_state = None
        return [0]

from vllm.distributed import get_pp_group


class Sampler:
    """One precondition, the same guard spelled five ways: only the unguarded call can fail."""

    def _broadcast_sampled(self, sampled):
        assert get_pp_group().is_last_rank
        return sampled

    def sample_if(self, s):
        if get_pp_group().is_last_rank:
            # ok: PPA404
            return self._broadcast_sampled(s)
        return None

    def sample_conditional(self, s):
        # ok: PPA404
        return self._broadcast_sampled(s) if get_pp_group().is_last_rank else None

    def sample_and(self, s):
        # ok: PPA404
        return get_pp_group().is_last_rank and self._broadcast_sampled(s)

    def sample_or_not(self, s):
        # ok: PPA404
        return not get_pp_group().is_last_rank or self._broadcast_sampled(s)

    def sample_early_return(self, s):
        if not get_pp_group().is_last_rank:
            return None
        # ok: PPA404
        return self._broadcast_sampled(s)

    def sample_unguarded(self, s):
        # ruleid: PPA404
        return self._broadcast_sampled(s)

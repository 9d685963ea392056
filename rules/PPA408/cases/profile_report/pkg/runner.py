from vllm.distributed import get_pp_group

from .parallel import is_global_first_rank, is_last_pp_first_tp_rank


class ProfiledRunner:
    """Collects one event per sampled step and reports every `every` steps."""

    def __init__(self, every=2):
        self.every = every
        self._events = []
        self._steps = 0
        self.reports = []

    def execute_model(self, hidden_states):
        if not get_pp_group().is_last_rank:
            return hidden_states  # the stages before the last hand on their intermediate tensors
        self._events.append({"step": self._steps, "tokens": len(hidden_states)})
        self._steps += 1
        if self._steps % self.every == 0:
            self._report()
        return [0 for _ in hidden_states]

    def _report(self):
        # ruleid: PPA408
        if not is_global_first_rank():
            return
        events, self._events = self._events, []
        self.reports.append(f"{len(events)} steps, {sum(e['tokens'] for e in events)} tokens")


class FixedProfiledRunner(ProfiledRunner):
    def _report(self):
        # ok: PPA408
        if not is_last_pp_first_tp_rank():
            return  # the events live on the last stage, where sampling runs
        events, self._events = self._events, []
        self.reports.append(f"{len(events)} steps, {sum(e['tokens'] for e in events)} tokens")


class EveryRankCounter:
    """Counts on every rank and logs on global rank 0: both happen there."""

    def __init__(self):
        self._seen = []
        self.logged = []

    def step(self, hidden_states):
        self._seen.append(len(hidden_states))
        # ok: PPA408
        if not is_global_first_rank():
            return
        self.logged.append(sum(self._seen))

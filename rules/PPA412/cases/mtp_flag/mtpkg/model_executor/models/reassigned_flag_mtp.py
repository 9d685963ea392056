from vllm.distributed import get_pp_group


class ReassignedFlagPredictor:
    """Flags that do not hold the rank test where they are read: one reassigned to a test of the
    inputs, one set only under a test, one that also tests the inputs."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        first = get_pp_group().is_first_rank
        first = intermediate_tensors is None  # the drafter's own inputs decide, not the rank
        hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        # ok: PPA412
        if not first:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]

    def project(self, hidden_states, intermediate_tensors=None):
        first = get_pp_group().is_first_rank
        if intermediate_tensors is None:
            first = True
        # ok: PPA412
        if first:
            return [h + 1 for h in hidden_states]
        return intermediate_tensors["hidden_states"]

    def tail(self, hidden_states, intermediate_tensors=None):
        first = get_pp_group().is_first_rank or intermediate_tensors is None
        # ok: PPA412
        if not first:
            hidden_states = intermediate_tensors["hidden_states"]
        return hidden_states


class ReassignedFlagMTP:
    def __init__(self):
        self.model = ReassignedFlagPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        out = self.model.forward(input_ids, hidden_states, intermediate_tensors)
        return self.model.tail(self.model.project(out, intermediate_tensors), intermediate_tensors)

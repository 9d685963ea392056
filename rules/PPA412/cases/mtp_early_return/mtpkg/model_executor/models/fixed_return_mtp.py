from vllm.distributed import get_pp_group


class FixedReturnPredictor:
    """The early return on the inputs; a first-rank test whose branch does not return, with no
    read of the intermediate tensors after it that needs them; and an early return on the rank
    whose later read is behind a test of the tensors themselves."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        # ok: PPA412
        if intermediate_tensors is None:
            return [2 * (h + float(t)) for h, t in zip(hidden_states, input_ids)]
        assert intermediate_tensors is not None
        hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]

    def project(self, hidden_states, intermediate_tensors=None):
        # ok: PPA412
        if get_pp_group().is_first_rank:
            hidden_states = [h + 1 for h in hidden_states]
        if intermediate_tensors is not None:
            hidden_states = intermediate_tensors["hidden_states"]
        return hidden_states


    def tail(self, hidden_states, intermediate_tensors=None):
        # ok: PPA412
        if get_pp_group().is_first_rank:
            return hidden_states
        if intermediate_tensors is not None:
            hidden_states = intermediate_tensors["hidden_states"]
        return hidden_states


class FixedReturnMTP:
    def __init__(self):
        self.model = FixedReturnPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        out = self.model.project(self.model.forward(input_ids, hidden_states, intermediate_tensors))
        return self.model.tail(out, intermediate_tensors)

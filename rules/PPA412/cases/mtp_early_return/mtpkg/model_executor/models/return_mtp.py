from vllm.distributed import get_pp_group


class ReturnPredictor:
    """The early-return spelling: the first rank returns, the later ranks fall through to the
    intermediate tensors."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        # ruleid: PPA412
        if get_pp_group().is_first_rank:
            return [2 * (h + float(t)) for h, t in zip(hidden_states, input_ids)]
        assert intermediate_tensors is not None
        hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class ReturnMTP:
    def __init__(self):
        self.model = ReturnPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

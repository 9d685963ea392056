from vllm.distributed import get_pp_group


class FlagReturnPredictor:
    """The early-return spelling through a flag: the first rank returns, the later ranks fall
    through to the intermediate tensors."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        is_first = get_pp_group().is_first_rank
        # ruleid: PPA412
        if is_first:
            return [2 * (h + float(t)) for h, t in zip(hidden_states, input_ids)]
        hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class FlagReturnMTP:
    def __init__(self):
        self.model = FlagReturnPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

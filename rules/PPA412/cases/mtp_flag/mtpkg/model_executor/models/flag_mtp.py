from vllm.distributed import get_pp_group


class FlagPredictor:
    """The rank test stored in a local flag first: only the later ranks read the intermediate
    tensors."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        first = get_pp_group().is_first_rank
        hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        # ruleid: PPA412
        if not first:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class FlagMTP:
    def __init__(self):
        self.model = FlagPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

from vllm.distributed import get_pp_group


class NotFirstPredictor:
    """The negated test with no `else`: only the later ranks read the intermediate tensors."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        # ruleid: PPA412
        if not get_pp_group().is_first_rank:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class NotFirstMTP:
    def __init__(self):
        self.model = NotFirstPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

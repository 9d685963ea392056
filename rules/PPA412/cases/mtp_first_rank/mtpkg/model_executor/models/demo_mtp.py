from vllm.distributed import get_pp_group


class DemoMultiTokenPredictor:
    """vLLM qwen3_next_mtp.py: branches on the target's first rank (issue 54709)."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        # ruleid: PPA412
        if get_pp_group().is_first_rank:
            hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        else:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class DemoMTP:
    def __init__(self):
        self.model = DemoMultiTokenPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

class FixedMultiTokenPredictor:
    """vLLM qwen3_5_mtp.py (0.33.0): branches on the inputs, not the rank."""

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        # ok: PPA412
        if intermediate_tensors is None:
            hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]


class FixedDemoMTP:
    def __init__(self):
        self.model = FixedMultiTokenPredictor()

    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        return self.model.forward(input_ids, hidden_states, intermediate_tensors)

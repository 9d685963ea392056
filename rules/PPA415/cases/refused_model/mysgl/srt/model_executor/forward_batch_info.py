class PPProxyTensors:
    """What a rank before the last sends on (sglang/srt/model_executor/forward_batch_info.py)."""

    def __init__(self, tensors):
        self.tensors = tensors

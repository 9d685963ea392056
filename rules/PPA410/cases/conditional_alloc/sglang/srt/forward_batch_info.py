"""PPProxyTensors (sglang/srt/model_executor/forward_batch_info.py, paraphrased)."""


class PPProxyTensors:
    def __init__(self, tensors):
        self.tensors = tensors

    def __getitem__(self, key):
        return self.tensors[key]

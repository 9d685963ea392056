"""vllm/model_executor/models/interfaces.py (paraphrased): the raw-token flag."""


def requires_raw_input_tokens(model) -> bool:
    return getattr(model, "requires_raw_input_tokens", False)

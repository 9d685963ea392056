"""The model registry (vllm/model_executor/models/registry.py, two of its tables)."""

_TEXT_GENERATION_MODELS = {
    "DemoForCausalLM": ("demo", "DemoForCausalLM"),
}

_SPECULATIVE_DECODING_MODELS = {
    "ReturnMTP": ("return_mtp", "ReturnMTP"),
    "NotFirstMTP": ("not_first_mtp", "NotFirstMTP"),
    "FixedReturnMTP": ("fixed_return_mtp", "FixedReturnMTP"),
}

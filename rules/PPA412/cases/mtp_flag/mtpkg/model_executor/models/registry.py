"""The model registry (vllm/model_executor/models/registry.py, two of its tables)."""

_TEXT_GENERATION_MODELS = {
    "DemoForCausalLM": ("demo", "DemoForCausalLM"),
}

_SPECULATIVE_DECODING_MODELS = {
    "FlagMTP": ("flag_mtp", "FlagMTP"),
    "FlagReturnMTP": ("flag_return_mtp", "FlagReturnMTP"),
    "ReassignedFlagMTP": ("reassigned_flag_mtp", "ReassignedFlagMTP"),
}

"""The model registry (vllm/model_executor/models/registry.py, two of its tables)."""

_TEXT_GENERATION_MODELS = {
    "DemoForCausalLM": ("demo", "DemoForCausalLM"),
}

_SPECULATIVE_DECODING_MODELS = {
    "DemoMTP": ("demo_mtp", "DemoMTP"),
    "FixedDemoMTP": ("demo_mtp_fixed", "FixedDemoMTP"),
}

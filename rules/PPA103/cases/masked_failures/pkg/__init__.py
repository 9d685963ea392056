"""Registers the case's models, as a plugin does: the engine loads each of them under pipeline
parallelism (they list SupportsPP)."""


def register():
    from vllm import ModelRegistry

    ModelRegistry.register_model("SkippingForCausalLM", "pkg.model:SkippingForCausalLM")
    ModelRegistry.register_model("BrokenLoaderForCausalLM", "pkg.model:BrokenLoaderForCausalLM")
    ModelRegistry.register_model("AssertingForCausalLM", "pkg.model:AssertingForCausalLM")
    ModelRegistry.register_model("ReadingForCausalLM", "pkg.model:ReadingForCausalLM")

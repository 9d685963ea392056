"""An out-of-tree plugin (a `vllm.general_plugins` entry point): it replaces two drafter
architectures and adds a model of its own."""


def register():
    from vllm import ModelRegistry

    from .drafter3 import PluginEagle3Llama

    ModelRegistry.register_model("EagleLlamaForCausalLM", "plugin.drafter:PluginEagleLlama")
    ModelRegistry.register_model("Eagle3LlamaForCausalLM", PluginEagle3Llama)
    ModelRegistry.register_model("PluginLMForCausalLM", "plugin.lm:PluginLMForCausalLM")
    ModelRegistry.register_model("PluginVwnEagle3", "plugin.vwn:PluginVwnEagle3")
    ModelRegistry.register_model("PluginSpecAwareLM", "plugin.vwn:PluginSpecAwareLM")

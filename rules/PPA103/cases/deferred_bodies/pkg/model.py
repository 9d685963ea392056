import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class LazyValue:
    """Calls its function on the first read of `value` (sglang's `LazyValue`)."""

    def __init__(self, creator):
        self._creator = creator
        self._value = None

    @property
    def value(self):
        if self._creator is not None:
            self._value = self._creator()
            self._creator = None
        return self._value


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2

    def get_moe_weights(self):
        return ["w13", "w2"]


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MoE()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))


class LazyForCausalLM(nn.Module):
    """Builds a lambda and a nested function that walk every slot, and stores them: `__init__`
    runs neither body (the reads are listed as not judged, not reported)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        self._routed_experts_weights_of_layer = LazyValue(
            lambda: {
                layer_id: layer.mlp.get_moe_weights()
                for layer_id, layer in enumerate(self.model.layers)
            }
        )

        def reset_experts():
            for layer in self.model.layers:
                layer.mlp.n_local_experts = 0

        self._reset_experts = reset_experts
        # ok: PPA103
        self.n_layers = len(self.model.layers)


class EagerForCausalLM(nn.Module):
    """The same loop run by `__init__` itself: it fails on every rank of a pipeline of size >= 2."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        self._routed_experts_weights_of_layer = {
            # ruleid: PPA103
            layer_id: layer.mlp.get_moe_weights()
            for layer_id, layer in enumerate(self.model.layers)
        }


class ReadForCausalLM(nn.Module):
    """The lazy map of `LazyForCausalLM`, read by a method: the lambda runs on that read (SGLang's
    models read it in the property `routed_experts_weights_of_layer`, which expert balancing reads;
    a method here, since a property that raises AttributeError is retried through `__getattr__`)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        self._routed_experts_weights_of_layer = LazyValue(
            lambda: {
                # ruleid: PPA103
                layer_id: layer.mlp.get_moe_weights()
                for layer_id, layer in enumerate(self.model.layers)
            }
        )

    def routed_experts_weights_of_layer(self):
        return self._routed_experts_weights_of_layer.value


class SubReadForCausalLM(ReadForCausalLM):
    """Stores its own lazy map; the reader it inherits runs it (GLM-4 MoE Lite on DeepSeek-V2)."""

    def __init__(self, config, prefix=""):
        nn.Module.__init__(self)
        self.model = TextModel(config)
        self._routed_experts_weights_of_layer = LazyValue(
            lambda: {
                # ruleid: PPA103
                layer_id: layer.mlp
                for layer_id, layer in enumerate(self.model.layers)
            }
        )

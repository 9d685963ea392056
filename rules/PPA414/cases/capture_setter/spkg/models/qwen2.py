from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers


class Layer:
    def __init__(self, prefix=""):
        self.index = int(prefix.rsplit(".", 1)[-1])


class Qwen2Model:
    def __init__(self, num_layers):
        self.start_layer, self.end_layer, self.layers = make_layers(
            num_layers, lambda prefix: Layer(prefix=prefix), prefix="layers")
        self.layers_to_capture = []

    def forward(self, hidden):
        aux = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux.append((i, hidden))
            hidden += 1
        return hidden, aux


class Qwen2ForCausalLM:
    """SGLang 0.5.23 qwen2.py: the setter returns on every rank but the last (PR 39644)."""

    def __init__(self, num_layers):
        self.model = Qwen2Model(num_layers)
        self.pp_group = get_pp_group()

    def set_eagle3_layers_to_capture(self, layer_ids):
        # ruleid: PPA414
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        self.model.layers_to_capture = [val + 1 for val in layer_ids]


class FixedQwen2ForCausalLM(Qwen2ForCausalLM):
    """Every rank marks the layers; each stage's loop keeps the ones it holds."""

    def set_eagle3_layers_to_capture(self, layer_ids):
        # ok: PPA414
        if not self.pp_group.is_last_rank:
            self.capture_aux_hidden_states = False
        self.model.layers_to_capture = [val + 1 for val in layer_ids]

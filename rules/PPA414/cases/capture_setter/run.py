"""Runtime oracle probes (tests/oracle.py): the runner asks every rank's model to capture the
EAGLE-3 layers, then runs each rank's layers; a rank that holds a requested layer must capture it
(the bug fails silently: the probe makes the lost capture visible)."""

from spkg.models.qwen2 import FixedQwen2ForCausalLM, Qwen2ForCausalLM

NUM_LAYERS = 8
LAYER_IDS = [0, 3, 5]  # the model captures layers 1, 4 and 6
# the early return is why a rank that holds a requested layer captures nothing
BLAME = {"spkg/models/qwen2.py:34": "run.py:18"}


def _serve(cls):
    model = cls(NUM_LAYERS)
    model.set_eagle3_layers_to_capture(LAYER_IDS)
    _hidden, aux = model.model.forward(0)
    held = [i + 1 for i in LAYER_IDS if model.model.start_layer <= i + 1 < model.model.end_layer]
    assert [i for i, _h in aux] == held, f"layers {held} held here, captured {[i for i, _h in aux]}"


def eagle3():
    _serve(Qwen2ForCausalLM)


def eagle3_fixed():
    _serve(FixedQwen2ForCausalLM)


PROBES = [eagle3, eagle3_fixed]

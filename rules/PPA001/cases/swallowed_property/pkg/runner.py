from vllm.model_executor.models.utils import PPMissingLayer

NUM_LAYERS = 4


def build_kv_pool(model):
    """What SGLang's model runner does with the model's layer range
    (model_runner_components/layer_setup.py, `_resolve_pp_layer_range`): a model without one is
    taken to hold every layer, and the KV pool is sized for `end_layer - start_layer` layers."""
    start = getattr(model, "start_layer", 0)
    end = getattr(model, "end_layer", NUM_LAYERS)
    owned = sum(not isinstance(layer, PPMissingLayer) for layer in model.model.decoder.layers)
    # the pool is meant for the layers this rank runs: more is memory no rank uses
    assert end - start == owned, f"KV pool sized for {end - start} layers, this rank runs {owned}"
    return [None] * (end - start)

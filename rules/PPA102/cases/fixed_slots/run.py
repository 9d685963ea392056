"""Runtime oracle probes (tests/oracle.py)."""

from types import SimpleNamespace

from pkg.model import ForCausalLM, MetadataModel, RolloutEngine, TextModel

CONFIG = SimpleNamespace(num_hidden_layers=4)


def build_inner():
    TextModel(CONFIG)


def load_weights():
    model = ForCausalLM.__new__(ForCausalLM)
    model.config = CONFIG
    model.model = _inner()
    model.load_weights([])


def rollout_probe():
    holder = SimpleNamespace(model=_inner())
    RolloutEngine(holder).probe_cache()


def _inner():
    """A TextModel built without its own fixed-slot read (so later probes reach their line)."""
    from vllm.model_executor.models.utils import make_layers

    from pkg.model import DecoderLayer

    inner = TextModel.__new__(TextModel)
    inner.start_layer, inner.end_layer, inner.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))
    return inner


def metadata():
    model = MetadataModel(CONFIG)
    model.forward({f".{i}.attn": i for i in range(CONFIG.num_hidden_layers)})


PROBES = [build_inner, load_weights, rollout_probe, metadata]

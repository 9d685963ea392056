"""A method only a feature calls (elastic EP's update_physical_experts_metadata) is left alone
only where the analysed tree refuses that feature under pipeline parallelism (vLLM 0.21.0+
config/parallel.py); where the tree has no such refusal (vLLM 0.10.0) it is judged, and where
no parallel configuration can be found it is not judged."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"

MODEL = """
    import torch.nn as nn
    from vllm.model_executor.models.utils import make_layers


    class Layer(nn.Module):
        def __init__(self, prefix=""):
            super().__init__()
            self.mlp = nn.Identity()


    class Model(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(prefix))


    class MoEForCausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.model = Model(config)

        def update_physical_experts_metadata(self, num_physical_experts):
            for layer in self.model.layers:
                layer.mlp.n_physical_experts = num_physical_experts
"""
REFUSES = """
    class ParallelConfig:
        def __post_init__(self):
            if self.enable_elastic_ep:
                if not self.enable_eplb:
                    raise ValueError("Elastic EP is only supported with enable_eplb=True.")
                if self.pipeline_parallel_size > 1:
                    raise ValueError("Elastic EP is not supported with pipeline parallelism")
"""
# refuses only without EPLB: with EPLB, elastic EP runs under pipeline parallelism
PARTIAL = """
    class ParallelConfig:
        def __post_init__(self):
            if self.enable_elastic_ep:
                if not self.enable_eplb:
                    raise ValueError("Elastic EP is only supported with enable_eplb=True.")
            if self.pipeline_parallel_size > 1 and self.other:
                raise ValueError("no")
"""


def _tree(root: Path, config: str | None) -> None:
    files = {"eng/__init__.py": "", "eng/model_executor/__init__.py": "", "eng/model_executor/models/__init__.py": "",
             "eng/model_executor/models/moe.py": MODEL}
    if config is not None:
        files["eng/config/__init__.py"] = ""
        files["eng/config/parallel.py"] = config
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


@pytest.mark.parametrize("config, found, unjudged", [
    (REFUSES, set(), set()),
    (PARTIAL, {"PPA103"}, set()),
    (None, set(), {"PPA103"}),
], ids=["refuses", "partial", "no-config"])
def test_feature_only_method(tmp_path, config, found, unjudged):
    _tree(tmp_path, config)
    r = run_cli("check", "eng", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                cwd=tmp_path)
    assert r.rc in (0, 1), r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert {f["code"] for f in out if f.get("code")} == found
    assert {f["rule"] for f in out if f.get("name") == "not-judged"} == unjudged


def test_a_plugin_asks_the_engine_it_imports(tmp_path):
    """A plugin has no parallel configuration of its own: the engine it imports (found in --src,
    recognized by its model registry) answers."""
    for config, found, unjudged in ((REFUSES, set(), set()), (PARTIAL, {"PPA103"}, set())):
        root = tmp_path / str(len(config))
        _tree(root / "src", config)
        (root / "src" / "eng" / "model_executor" / "models" / "registry.py").write_text(
            "_TEXT_GENERATION_MODELS = {'MoEForCausalLM': ('moe', 'MoEForCausalLM')}\n")
        (root / "src" / "eng" / "model_executor" / "models" / "moe.py").unlink()
        # the engine's own make_layers (the plugin imports nothing else that has a registry)
        (root / "src" / "eng" / "model_executor" / "models" / "utils.py").write_text(
            (STUBS / "vllm" / "model_executor" / "models" / "utils.py").read_text())
        plugin = root / "plugin"
        plugin.mkdir()
        (plugin / "__init__.py").write_text("")
        (plugin / "moe.py").write_text(textwrap.dedent(MODEL).replace("from vllm.", "from eng."))
        r = run_cli("check", "plugin", "--src", STUBS, "--src", root / "src", "--no-cache", "--output-format", "json",
                    "--show-unresolved", cwd=root)
        assert r.rc in (0, 1), r.stdout + r.stderr
        out = json.loads(r.stdout)
        assert {f["code"] for f in out if f.get("code")} == found
        assert {f["rule"] for f in out if f.get("name") == "not-judged"} == unjudged

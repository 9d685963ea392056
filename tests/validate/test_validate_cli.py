"""Fast tests of ``validate`` that need no vLLM: argument parsing, exit-2 paths, the plugin."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pp_attr_lint import validate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCH = "Qwen3VLForConditionalGeneration"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_and_repeatable_options():
    ns = _parse("--arch", ARCH, "--arch", "Qwen3VLMoeForConditionalGeneration", "--source", "a.py", "--source", "b.py")
    assert ns.arch == [ARCH, "Qwen3VLMoeForConditionalGeneration"]
    assert ns.source == ["a.py", "b.py"]
    assert (ns.pp, ns.device, ns.output_format, ns.python) == (2, "auto", "text", None)
    assert ns.timeout > 0


def test_something_to_run_is_required(capsys):
    assert validate.run(_parse("--pp", "2")) == 2
    assert "say what to run: --arch ARCH, --all" in capsys.readouterr().err


def test_modes_are_exclusive(capsys):
    assert validate.run(_parse("--all", "--files", "a.py")) == 2
    assert "choose one of --arch, --all, --changed, --files, --findings" in capsys.readouterr().err


def test_bad_jobs_exits_2(capsys):
    assert validate.run(_parse("--all", "--jobs", "0")) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err


def test_package_does_not_import_engine_libraries():
    code = ("import sys, pp_attr_lint.validate, pp_attr_lint.validate.__main__, pp_attr_lint.validate.archmap, "
            "pp_attr_lint.validate.results, pp_attr_lint.validate.findings, pp_attr_lint.validate.toy_config; "
            "bad = [m for m in ('torch', 'vllm', 'transformers') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


@pytest.fixture()
def fake_registry(tmp_path, monkeypatch):
    """Make run() read a tiny vllm tree instead of asking the validate environment."""
    from pp_attr_lint.validate import archmap

    models = tmp_path / "site" / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "registry.py").write_text(
        '_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}\n'
        '_MULTIMODAL_MODELS = {"Qwen3VLForConditionalGeneration": ("qwen3_vl", "Qwen3VLForConditionalGeneration")}\n')
    monkeypatch.setattr(archmap, "vllm_dir_of", lambda python, timeout=60: str(tmp_path / "site" / "vllm"))
    return tmp_path


def test_unknown_arch_exits_2(fake_registry, capsys):
    assert validate.run(_parse("--arch", "LlamaForCausalLm", "--python", sys.executable)) == 2
    err = capsys.readouterr().err
    assert "unknown arch LlamaForCausalLm (did you mean LlamaForCausalLM?)" in err and "registry.py" in err


def test_missing_source_exits_2(tmp_path, capsys):
    missing = str(tmp_path / "qwen3_vl.py")
    assert validate.run(_parse("--arch", ARCH, "--source", missing)) == 2
    assert f"--source file not found: {missing}" in capsys.readouterr().err


def test_too_few_cuda_devices_exits_2(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert validate.run(_parse("--arch", ARCH, "--device", "cuda", "--pp", "2")) == 2
    err = capsys.readouterr().err
    assert "--device cuda --pp 2 needs at least 2 CUDA GPUs; found 0" in err


def test_too_few_cpu_cores_exits_2(capsys):
    n = len(os.sched_getaffinity(0))
    assert validate.run(_parse("--arch", ARCH, "--device", "cpu", "--pp", str(n + 1))) == 2
    assert f"needs at least {n + 1} CPU cores" in capsys.readouterr().err


def test_missing_python_exits_2_json(tmp_path, capsys):
    ns = _parse("--arch", ARCH, "--python", str(tmp_path / "nope" / "python"), "--output-format", "json")
    assert validate.run(ns) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == 2 and "scripts/build-validate-env.sh" in report["env_error"]


def test_python_without_vllm_exits_2():
    """The driver itself reports a missing vLLM (this interpreter has none)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("this interpreter has vLLM")
    proc = subprocess.run(
        [sys.executable, "-m", "pp_attr_lint.validate", "--arch", ARCH, "--device", "cpu", "--pp", "1",
         "--python", sys.executable],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot read the vLLM registry" in proc.stderr and "no vllm for" in proc.stderr


def test_hook_overrides_module_and_records_constructor_errors(tmp_path):
    """The plugin serves --source files in place of a module and records __init__ errors."""
    pkg = tmp_path / "site" / "fakepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("class Model:\n    def __init__(self):\n        self.start_layer = 0\n")
    override = tmp_path / "mod.py"
    override.write_text(textwrap.dedent("""
        class Inner:
            pass
        class Model:
            def __init__(self):
                self.language_model = Inner()
                self.language_model.start_layer
    """))
    events = tmp_path / "events.jsonl"
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"overrides": {"fakepkg.mod": str(override)},
                               "watch": {"fakepkg.mod": ["Model"]}, "events": str(events)}))
    hook_dir = tmp_path / "plugin"
    hook_dir.mkdir()
    (hook_dir / "pp_attr_lint_validate_hook.py").write_text(
        open(os.path.join(REPO, "pp_attr_lint", "validate", "_hook.py")).read())
    env = dict(os.environ, PP_ATTR_LINT_VALIDATE_HOOK=str(cfg),
               PYTHONPATH=os.pathsep.join([str(hook_dir), str(tmp_path / "site")]))
    code = "import pp_attr_lint_validate_hook, fakepkg.mod as m; print(m.__file__); m.Model()"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "AttributeError" in proc.stderr
    assert proc.stdout.strip() == str(override)
    recs = [json.loads(line) for line in events.read_text().splitlines()]
    kinds = [r["event"] for r in recs]
    assert kinds[:2] == ["process_start", "module_loaded"] and recs[1]["overridden"] is True
    err = next(r for r in recs if r["event"] == "model_init_error")
    assert err["type"] == "AttributeError"
    assert err["message"] == "'Inner' object has no attribute 'start_layer'"
    assert err["where"].startswith(str(override))

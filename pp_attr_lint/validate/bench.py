"""Measure ``pp-attr-lint validate``: ``python -m pp_attr_lint.validate.bench``.

Runs the real engine several times through ``python -m pp_attr_lint.validate
--output-format json`` and prints a Markdown table:

* ``cold``: an empty cache folder (every torch.compile/inductor artifact and vLLM's
  model-info cache is rebuilt), i.e. the first run on a fresh machine;
* ``warm``: the same cache folder again (what every later run sees);
* ``dead-exit`` / ``dead-raise``: PP rank 1 calls ``os._exit(3)`` / raises in the
  middle of the first request (a copy of the installed ``qwen3_vl.py`` with a patched
  ``forward``, see :func:`dying_copy`); the column ``root cause after`` is the time
  from the worker's death to the printed root cause.

Options: ``--arch`` (default Qwen3VLForConditionalGeneration), ``--runs`` (warm runs,
default 2), ``--python``, ``--skip-dead``.

``--archs A,B,...`` (issue 8) measures many architectures instead: each one once to warm the
compile cache, then ``--runs`` times; it prints, per arch, the median of *init plus request*
(driver start to the last request served, ``timings.done``) and the median over the archs,
and the goal (<= 30 s). ``--archs pass:REPORT.json`` takes the PASS archs of a sweep report
(``--sample N`` keeps every k-th of them so that N remain). Only the standard library is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from .environment import default_python

DIE_PATCH = '''

# --- added by pp_attr_lint.validate.bench: PP rank 1 dies in the middle of the first real request ---
def _pp_attr_lint_dying_forward(self, *args, _orig=Qwen3VLForConditionalGeneration.forward, **kwargs):
    import os as _os

    positions = kwargs.get("positions", args[1] if len(args) > 1 else None)
    # the validate text prompt is 24 tokens; warm-up and profiling runs use other sizes
    if get_pp_group().rank_in_group == 1 and positions is not None and positions.shape[-1] == 24:
        import pp_attr_lint_validate_hook as _hook

        _hook._emit("test_dying", mode="{mode}")
        if "{mode}" == "raise":
            raise RuntimeError("test: rank 1 fails mid-request")
        _os._exit(3)
    return _orig(self, *args, **kwargs)


Qwen3VLForConditionalGeneration.forward = _pp_attr_lint_dying_forward
'''


def vllm_models_dir(python: str) -> str:
    """Return ``vllm/model_executor/models`` of the environment of ``python``."""
    out = subprocess.run(
        [python, "-c", "import importlib.util, os; s = importlib.util.find_spec('vllm'); "
                       "print(os.path.join(list(s.submodule_search_locations)[0], 'model_executor', 'models'))"],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def dying_copy(models_dir: str, dest_dir: str, mode: str) -> str:
    """Write ``dest_dir/qwen3_vl.py``: the installed file plus a forward that kills PP rank 1.

    ``mode`` is ``exit`` (``os._exit(3)``, no traceback) or ``raise`` (RuntimeError).
    The dying worker appends a ``test_dying`` event (with its time) to the events file.
    """
    with open(os.path.join(models_dir, "qwen3_vl.py")) as fh:
        text = fh.read()
    path = os.path.join(dest_dir, "qwen3_vl.py")
    with open(path, "w") as fh:
        fh.write(text + DIE_PATCH.replace("{mode}", mode))
    return path


def _engine_init_seconds(log: str | None) -> float | None:
    if not log or not os.path.exists(log):
        return None
    m = re.findall(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s", open(log, errors="replace").read())
    return float(m[-1]) if m else None


def _run(python: str, arch: str, cache: str | None, extra: list[str]) -> dict:
    env = dict(os.environ)
    argv = [sys.executable, "-m", "pp_attr_lint.validate", "--arch", arch, "--python", python,
            "--output-format", "json", "--keep-workdir", "--device", "cpu", *extra]
    if cache is None:
        argv.append("--no-cache")
    else:
        env["PP_ATTR_LINT_VALIDATE_CACHE"] = cache
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    try:
        rep = json.loads(proc.stdout)["runs"][0]
    except (ValueError, KeyError, IndexError):
        return {"exit": proc.returncode, "error": proc.stderr[-2000:]}
    t = rep.get("timings", {})
    row = {
        "exit": proc.returncode,
        "wall": rep["wall_seconds"],
        "vllm_imported": t.get("vllm_imported"),
        "engine_ready": t.get("engine_ready"),
        "requests": round(sum(r.get("seconds", 0) for r in rep.get("requests", {}).values()), 3),
        "done": t.get("done"),
        "engine_init_log": _engine_init_seconds(rep.get("log")),
        "root_cause_after": None,
    }
    root = rep.get("root_cause")
    if root and rep.get("workdir"):
        try:
            with open(os.path.join(rep["workdir"], "events.jsonl")) as fh:
                died = [json.loads(line)["time"] for line in fh if '"test_dying"' in line]
            if died:
                row["root_cause_after"] = round(root["reported_at"] - died[0], 2)
                row["exit_after_root_cause"] = round(rep["wall_seconds"] - (root["reported_at"] - rep["started_at"]), 2)
        except OSError:
            pass
    return row


def _archs_arg(value: str, sample: int | None) -> list[str]:
    if value.startswith("pass:"):
        with open(value[5:]) as fh:
            archs = [r["arch"] for r in json.load(fh)["runs"] if r.get("outcome") == "PASS"]
    else:
        archs = [a for a in value.split(",") if a]
    if sample and len(archs) > sample:
        step = len(archs) / sample
        archs = [archs[int(i * step)] for i in range(sample)]
    return archs


def many_archs(python: str, archs: list[str], runs: int) -> int:
    """Per-arch medians of init+request (see the module docstring); returns 0 when the median
    over the archs is <= 30 s and every run passed, else 1."""
    import statistics
    import time

    cache = tempfile.mkdtemp(prefix="pp-attr-lint-bench-cache-")
    rows = []
    t_all = time.time()
    for arch in archs:
        _run(python, arch, cache, [])  # fills the compile cache and the model-info cache
        times, walls, bad = [], [], 0
        for _ in range(runs):
            r = _run(python, arch, cache, [])
            if r.get("exit") != 0 or r.get("done") is None:
                bad += 1
                continue
            times.append(r["done"])
            walls.append(r["wall"])
        med = statistics.median(times) if times else None
        rows.append((arch, med, statistics.median(walls) if walls else None, bad))
        print(f"{arch}: init+request {times} -> median {med}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"pp 2, {os.cpu_count()} CPUs, load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}, "
          f"{runs} warm run(s) per arch, {time.time() - t_all:.0f} s in all")
    print("| architecture | init+request median s | wall median s | failed runs |")
    print("|---|---|---|---|")
    for arch, med, wall, bad in rows:
        print(f"| {arch} | {med} | {wall} | {bad} |")
    meds = [m for _a, m, _w, _b in rows if m is not None]
    overall = statistics.median(meds) if meds else None
    print(f"| **median over {len(meds)} archs** | **{overall}** | | |")
    print(f"goal: median <= 30 s: {'met' if overall is not None and overall <= 30 else 'NOT met'}")
    return 0 if overall is not None and overall <= 30 and not any(b for *_x, b in rows) else 1


def main(argv=None) -> int:
    """Run the measurements and print the table; returns 0 (1 if a green run failed)."""
    ap = argparse.ArgumentParser(prog="python -m pp_attr_lint.validate.bench")
    ap.add_argument("--arch", default="Qwen3VLForConditionalGeneration")
    ap.add_argument("--archs", default=None, help="A,B,... or pass:REPORT.json (see the module docstring)")
    ap.add_argument("--sample", type=int, default=None)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--python", default=None)
    ap.add_argument("--skip-dead", action="store_true")
    args = ap.parse_args(argv)
    python = args.python or default_python()
    if not python:
        print("no Python with vLLM; run scripts/build-validate-env.sh", file=sys.stderr)
        return 2
    if args.archs:
        return many_archs(python, _archs_arg(args.archs, args.sample), args.runs)
    rows = []
    cache = tempfile.mkdtemp(prefix="pp-attr-lint-bench-cache-")
    rows.append(("cold", _run(python, args.arch, cache, [])))
    for i in range(args.runs):
        rows.append((f"warm {i + 1}", _run(python, args.arch, cache, [])))
    if not args.skip_dead:
        models = vllm_models_dir(python)
        for mode in ("exit", "raise"):
            d = tempfile.mkdtemp(prefix="pp-attr-lint-bench-die-")
            rows.append((f"dead-{mode}", _run(python, "Qwen3VLForConditionalGeneration", cache,
                                              ["--source", dying_copy(models, d, mode)])))
    load = os.getloadavg()
    print(f"arch {args.arch}, pp 2, {os.cpu_count()} CPUs, load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")
    print("| run | exit | wall s | vllm imported at s | engine ready at s | engine init (log) s | "
          "both requests s | root cause after s | exit after root cause s |")
    print("|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for name, r in rows:
        if "error" in r:
            print(f"| {name} | {r['exit']} | error: {r['error'][-200:]!r} |")
            bad = 1
            continue
        if not name.startswith("dead") and r["exit"] != 0:
            bad = 1
        print(f"| {name} | {r['exit']} | {r['wall']} | {r['vllm_imported']} | {r['engine_ready']} | "
              f"{r['engine_init_log']} | {r['requests']} | {r['root_cause_after']} | {r.get('exit_after_root_cause')} |")
    return bad


if __name__ == "__main__":
    sys.exit(main())

"""The runtime oracle: run a rule case on simulated pipeline-parallel ranks and say which lines
failed there.

A case folder holds a package and ``run.py`` with ``PROBES``, a list of functions that build the
case's classes and use them as vLLM would (``__init__``, ``forward``, ``load_weights``, the
runner's ``receive_buffers``), and optionally ``BLAME = {"pkg/a.py:55": "pkg/b.py:16"}``: a line
that makes another line fail later (``self.lm_head = self.model.embed_tokens`` makes the logits
processor's ``lm_head.weight`` fail).  :func:`run_case` runs every probe on every rank of pipeline
world sizes 2, 3 and 4 against the stub torch and vLLM of ``fixtures/ppstub`` (in one child
interpreter, with the case's modules imported afresh for each rank) and returns what happened.

A line *fails* on a rank when an exception is raised there or passes through it (a frame of the
traceback in the case's files), when it defines the class (or the class's ``__init__``) of the
object that lacked the attribute or whose ``make_empty_intermediate_tensors`` answered ``None``,
or when ``BLAME`` maps it to a failing line that it ran before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUBS = REPO / "fixtures" / "ppstub"
WORLD_SIZES = (2, 3, 4)

_CHILD = r'''
import importlib, inspect, json, os, sys, traceback
case = os.path.abspath(sys.argv[1])
sys.path[:0] = [case, sys.argv[2]]
sys.dont_write_bytecode = True
results = []


def rel(path):
    path = os.path.abspath(path or "")
    return os.path.relpath(path, case) if path.startswith(case + os.sep) else None


def where(obj):
    out = []
    cls = type(obj)
    for target in (cls, cls.__dict__.get("__init__")):
        if target is None:
            continue
        try:
            f = rel(inspect.getsourcefile(target))
            if f:
                out.append(f"{f}:{inspect.getsourcelines(target)[1]}")
        except (TypeError, OSError):
            pass
    return out


def tracer_into(lines):
    """A trace function that adds every executed "file:line" of the case's files to ``lines``."""
    def tracer(frame, event, arg):
        f = rel(frame.f_code.co_filename)
        if f is None:
            return None
        def local(frame, event, arg):
            if event == "line":
                lines.add(f"{f}:{frame.f_lineno}")
            return local
        lines.add(f"{f}:{frame.f_lineno}")
        return local
    return tracer


for size in WORLD_SIZES:
    for rank in range(size):
        os.environ["PP_ATTR_LINT_PP_RANK"], os.environ["PP_ATTR_LINT_PP_SIZE"] = str(rank), str(size)
        for name in [m for m in sys.modules if m == "run" or m.split(".")[0] in TOPS]:
            del sys.modules[name]
        imported = set()
        sys.settrace(tracer_into(imported))
        try:
            run = importlib.import_module("run")
        finally:
            sys.settrace(None)
        results.append({"size": size, "rank": rank, "probe": "<import>", "error": None, "executed": sorted(imported)})
        for i, probe in enumerate(run.PROBES):
            executed = set()
            sys.settrace(tracer_into(executed))
            error = None
            try:
                probe()
            except Exception as e:
                frames = [f"{rel(fs.filename)}:{fs.lineno}" for fs in traceback.extract_tb(e.__traceback__) if rel(fs.filename)]
                obj = getattr(e, "obj", None)
                error = {"type": type(e).__name__, "message": str(e), "frames": frames,
                         "innermost": frames[-1] if frames else None,
                         "objects": where(obj) if obj is not None else []}
            finally:
                sys.settrace(None)
            results.append({"size": size, "rank": rank, "probe": probe.__name__, "error": error,
                            "executed": sorted(executed)})
print(json.dumps({"results": results, "blame": getattr(run, "BLAME", {})}))
'''


def run_case(case: Path, timeout: float = 120) -> dict:
    """Run ``case`` (a folder with ``run.py``) on every simulated rank.

    Returns ``{"results": [{"size", "rank", "probe", "error", "executed"}], "blame": {...}}``;
    ``error`` is ``None`` or ``{"type", "message", "frames", "innermost", "objects"}`` with
    ``"file:line"`` strings relative to the case folder.

    Raises:
        RuntimeError: the child interpreter failed (its stderr is in the message).
    """
    tops = sorted({p.name if p.is_dir() else p.stem for p in case.iterdir()
                   if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "run.py")})
    code = f"WORLD_SIZES = {WORLD_SIZES!r}\nTOPS = {set(tops)!r}\n" + _CHILD
    env = {k: v for k, v in os.environ.items() if not k.startswith("PP_ATTR_LINT_PP_")}
    p = subprocess.run([sys.executable, "-c", code, str(case), str(STUBS)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"oracle child failed for {case}:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)


def failing_lines(outcome: dict) -> dict[str, list[str]]:
    """``{"file:line": ["size=2 rank=1 probe: AttributeError ...", ...]}`` for every failing line
    (see the module docstring)."""
    out: dict[str, list[str]] = {}
    for r in outcome["results"]:
        e = r["error"]
        if e is None:
            continue
        why = f"pp={r['size']} rank={r['rank']} {r['probe']}: {e['type']}: {e['message']}"
        lines = set(e["frames"]) | set(e["objects"])
        for cause, effect in outcome["blame"].items():
            if effect in lines and cause in r["executed"]:
                lines.add(cause)
        for line in lines:
            out.setdefault(line, []).append(why)
    return out


def raising_lines(outcome: dict) -> set[str]:
    """Lines an exception was raised on (innermost frame) or blamed on through its object."""
    out = set()
    for r in outcome["results"]:
        e = r["error"]
        if e is not None:
            out.update(x for x in [e["innermost"], *e["objects"]] if x)
    return out


def executed_lines(outcome: dict) -> set[str]:
    return {x for r in outcome["results"] for x in r["executed"]}

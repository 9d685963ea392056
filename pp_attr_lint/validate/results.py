"""Results of ``validate`` runs: the per-arch cache (what makes ``--all`` resumable), the rich
table, and the report files. Standard library and rich only."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
# files whose content decides a run's outcome besides vLLM itself, --source files and the data
# of toy_sizes.yaml (hashed per arch, see source_hash)
_HARNESS_FILES = ("_driver.py", "_hook.py", "toy_checkpoint.py", "toy_config.py")


def source_hash(sources: list, pp: int, compile_mode: str, device: str, arch: str | None = None,
                worker_start: str = "fork", weights: str = "dummy", layer_partition: str | None = None,
                registered: str | None = None, config_names: list[str] | None = None) -> str:
    """Hash of what a run of ``arch`` depends on besides the arch name and the vLLM version: the
    content of every ``--source`` file (with the module it replaces), the harness files of this
    package (driver, plugin, toy config code), the generic size rules of toy_sizes.yaml and
    ``arch``'s own family override (so that editing one family reruns that arch only), pp,
    compile mode, device, how the rank processes start (``worker_start``) and the weights
    (``dummy`` or ``toy``), and the split of the layers over the stages (``layer_partition``, and
    ``VLLM_PP_LAYER_PARTITION`` when it is set), the extra engine arguments
    (``PP_ATTR_LINT_VALIDATE_ENGINE_ARGS`` when it is set), and for an arch that a change adds to the
    registry its ``module:Class`` (``registered``) and the config classes its module imports.
    16 hex digits. ``known_limits`` and ``known_failures`` are not part of it: they are applied
    to cached results when they are read (:func:`reclassify`)."""
    from .toy_config import load_rules

    h = hashlib.sha256()
    h.update(json.dumps([pp, compile_mode, device, worker_start] + ([] if weights == "dummy" else [weights])).encode())
    split = [layer_partition, os.environ.get("VLLM_PP_LAYER_PARTITION")]
    if any(split):
        h.update(json.dumps(split).encode())
    if registered or config_names:
        h.update(json.dumps([registered, config_names or []]).encode())
    engine_args = os.environ.get("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS")
    if engine_args:  # extra vllm.LLM(...) arguments (a speculative config): another run
        h.update(b"engine-args\0" + engine_args.encode())
    for name in _HARNESS_FILES:
        with open(os.path.join(_HERE, name), "rb") as fh:
            h.update(name.encode() + b"\0" + fh.read())
    rules = load_rules()
    generic = {k: v for k, v in rules.items() if k not in ("families", "known_limits", "known_failures")}
    h.update(json.dumps(generic, sort_keys=True, default=str).encode())
    if arch is not None:
        h.update(json.dumps(rules["families"].get(arch), sort_keys=True, default=str).encode())
    for module, path in sorted((m or "", p) for m, p in sources):
        with open(path, "rb") as fh:
            h.update(module.encode() + b"\0" + os.path.basename(path).encode() + b"\0" + fh.read())
    return h.hexdigest()[:16]


class ResultCache:
    """One JSON file per (arch, vLLM version, source hash) under ``<cache_dir>/results``.

    Only final outcomes (PASS, FAIL, UNSUPPORTED) are stored; a run that was cut short is run
    again next time. Writes are atomic (rename), so a killed sweep leaves no half file.
    """

    def __init__(self, cache_dir: str):
        self.root = os.path.join(cache_dir, "results")

    def _path(self, arch: str, version: str, shash: str) -> str:
        safe = version.replace("/", "_").replace("=", "-")
        return os.path.join(self.root, safe, f"{arch}-{shash}.json")

    def get(self, arch: str, version: str, shash: str) -> dict | None:
        """The stored report, or None (missing or unreadable)."""
        try:
            with open(self._path(arch, version, shash), encoding="utf-8") as fh:
                rep = json.load(fh)
        except (OSError, ValueError):
            return None
        return rep if isinstance(rep, dict) and rep.get("outcome") in ("PASS", "FAIL", "UNSUPPORTED") else None

    def put(self, arch: str, version: str, shash: str, rep: dict) -> None:
        """Store ``rep`` (a report dict); errors writing the cache are ignored."""
        path = self._path(arch, version, shash)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(rep, fh, indent=1, default=repr)
            os.replace(tmp, path)
        except OSError:
            pass


def _times(rep: dict) -> float | None:
    """Init plus requests: seconds from the driver's start to its last request (``timings.done``)."""
    t = (rep.get("timings") or {}).get("done")
    return float(t) if t is not None else None


def summary(reports: list[dict]) -> dict:
    """Counts per outcome and the median / max of init+request seconds of the PASS runs."""
    counts: dict[str, int] = {}
    for r in reports:
        counts[r.get("outcome", "?")] = counts.get(r.get("outcome", "?"), 0) + 1
    times = [t for t in (_times(r) for r in reports if r.get("outcome") == "PASS") if t is not None]
    walls = [r["wall_seconds"] for r in reports if r.get("outcome") == "PASS" and r.get("wall_seconds")]
    return {"counts": counts, "total": len(reports),
            "pass_init_plus_request_median_s": round(statistics.median(times), 1) if times else None,
            "pass_init_plus_request_max_s": round(max(times), 1) if times else None,
            "pass_wall_median_s": round(statistics.median(walls), 1) if walls else None}


def _row(rep: dict) -> tuple[str, str, str, str, str]:
    t = _times(rep)
    detail = rep.get("reason") or ""
    if rep.get("outcome") == "PASS":
        reqs = ", ".join(f"{k} ok" for k, v in (rep.get("requests") or {}).items() if v.get("ok"))
        layers = "; ".join(f"rank {r['rank']} layers {r.get('start_layer')}..{r.get('end_layer')}"
                           for r in rep.get("ranks") or [])
        detail = f"{reqs}; {layers}"
    return (rep["arch"], rep.get("outcome", "?"), f"{t:.1f}" if t is not None else "",
            f"{rep.get('wall_seconds', 0):.1f}" + (" (cached)" if rep.get("cached") else ""), detail)


def print_table(reports: list[dict], title: str = "", console=None) -> None:
    """Print the reports as a rich table (arch, outcome, init+request s, wall s, detail) and a
    summary line to stdout (or ``console``)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=200)
    table = Table(title=title or None, show_lines=False)
    for col in ("architecture", "outcome", "init+request s", "wall s", "detail"):
        table.add_column(col, overflow="fold")
    style = {"PASS": "green", "FAIL": "red", "UNSUPPORTED": "yellow"}
    for rep in reports:
        row = _row(rep)
        table.add_row(row[0], f"[{style.get(row[1], 'magenta')}]{row[1]}[/]", *row[2:])
    console.print(table)
    s = summary(reports)
    console.print(" ".join(f"{k} {v}" for k, v in sorted(s["counts"].items())) + "; " + _timing_text(s, False),
                  highlight=False)


def _timing_text(s: dict, with_max: bool = True) -> str:
    """The summary's timing of PASS runs in words (``median init+request of PASS runs 41.2 s (max
    60.3 s)``), or that no run passed to be timed."""
    median = s.get("pass_init_plus_request_median_s")
    if median is None:
        return "no PASS run to time init+request"
    top = s.get("pass_init_plus_request_max_s")
    return f"median init+request of PASS runs {median} s" + (f" (max {top} s)" if with_max and top is not None else "")


def write_report(path: str, reports: list[dict], version: str, pp: int, jobs: int) -> None:
    """Write ``reports`` to ``path``: JSON (``{"vllm", "pp", "jobs", "summary", "runs"}``) unless
    ``path`` ends in ``.md``, then a Markdown table with the same summary. Raises OSError."""
    meta = {"vllm": version, "pp": pp, "jobs": jobs, "written_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "summary": summary(reports)}
    if path.endswith(".md"):
        text = markdown(reports, meta)
    else:
        slim = [{k: v for k, v in r.items() if k not in ("log_tail",)} for r in reports]
        text = json.dumps({**meta, "runs": slim}, indent=1, default=repr)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)


def markdown(reports: list[dict], meta: dict) -> str:
    """The reports as a Markdown table (one row per arch) under a summary line."""
    s = meta["summary"]
    lines = [f"{meta['vllm']}, pp={meta['pp']}, jobs={meta['jobs']}, written {meta['written_at']}: " +
             ", ".join(f"{k} {v}" for k, v in sorted(s["counts"].items())) + "; " + _timing_text(s), "",
             "| architecture | outcome | init+request s | wall s | detail |", "|---|---|---|---|---|"]
    for rep in reports:
        cells = [c.replace("|", "\\|").replace("\n", " ") for c in _row(rep)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

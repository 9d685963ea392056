"""What a validate run reports: the per-rank records, the failure (exception, ``file:line``,
root cause) read from the events and tracebacks, its text form and the exit code."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .environment import EXIT_ENV, EXIT_FAIL, EXIT_OK, EXIT_UNSUPPORTED


@dataclass
class RankReport:
    """What is known about one PP rank after a run."""

    rank: int
    status: str = "unknown"  # initialized | failed | died | unknown
    pid: int | None = None
    start_layer: int | None = None
    end_layer: int | None = None
    deepstack_levels: int | None = None
    init_seconds: float | None = None  # when the model was constructed (or failed), since the run started
    construct_seconds: float | None = None  # time spent in the model's __init__
    forward_calls_during_requests: int | None = None
    error: dict | None = None
    errors: list = field(default_factory=list)


def exit_code(reports: list[dict], explicit: bool) -> int:
    """Exit status for a list of run reports (see :func:`run`)."""
    outcomes = [r.get("outcome") for r in reports]
    if "ERROR" in outcomes:
        return EXIT_ENV
    if "FAIL" in outcomes:
        return EXIT_FAIL
    if explicit and "UNSUPPORTED" in outcomes:
        return EXIT_UNSUPPORTED
    return EXIT_OK


_TB_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def where_from_traceback(tb: str | None) -> str | None:
    """``file:line in func`` of the innermost traceback frame outside torch, transformers and the
    standard library's importlib (the frame that raised, as a person reads it); None when none."""
    frames = _TB_FRAME.findall(tb or "")
    keep = [f for f in frames if "/torch/" not in f[0] and "/transformers/" not in f[0] and "importlib" not in f[0]]
    frames = keep or frames
    if not frames:
        return None
    f, line, fn = frames[-1]
    return f"{f}:{line} in {fn}"


def user_code_frame(tb: str | None, sources=()) -> str | None:
    """torch.compile errors end with ``from user code:`` and the model frames Dynamo was tracing;
    return the innermost ``file:line in func`` of those under ``/models/`` or in one of the run's
    ``sources`` (the ``--source`` files loaded in place of vLLM's), else the first."""
    if not tb or "from user code:" not in tb:
        return None
    frames = _TB_FRAME.findall(tb.split("from user code:", 1)[1])
    if not frames:
        return None
    model = [f for f in frames if "/models/" in f[0] or f[0] in sources]
    f, line, fn = (model or frames)[-1]
    return f"{f}:{line} in {fn}"


# torch.compile (Dynamo, torch 2.13) reports an exception raised while tracing the model as
# `Unsupported: Observed exception ... Developer debug context: raised exception KeyError('residual')`
_DYNAMO_RAISED = re.compile(r"Developer debug context: raised exception ([A-Za-z_][\w.]*)\((.*?)\)\s*(?:$|\n)", re.S)


def compiled_root_cause(message: str | None, traceback: str | None, sources=()) -> tuple[str, str, str] | None:
    """The exception the model code raised inside torch.compile, when Dynamo wrapped it: ``(type,
    message, "file:line in func")`` of the model frame, from the ``raised exception`` line and the
    ``from user code:`` frames of Dynamo's message (or traceback); ``None`` for any other error."""
    text = "\n".join(t for t in (message, traceback) if t)
    if "Observed exception" not in text:
        return None
    m = _DYNAMO_RAISED.search(text)
    if m is None:
        return None
    where = user_code_frame(text[text.find("from user code:"):] if "from user code:" in text else None, sources)
    return m.group(1), m.group(2), where


def first_failure(rep: dict, result: dict, timed_out: bool, timeout: float) -> dict:
    """The first failure of a run: which rank, the exception, file:line, and the root cause
    (``user_code``: the model frame torch.compile was tracing, for compile errors)."""
    root = rep.get("root_cause") or {}
    sources = set((rep.get("overrides") or {}).values())
    for r in rep["ranks"]:
        if r.get("error") and (root.get("pp_rank") in (None, r["rank"])):
            e = r["error"]
            f = {"rank": r["rank"], "type": e.get("type"), "message": e.get("message"),
                 "where": e.get("where") or where_from_traceback(e.get("traceback")), "phase": e.get("phase"),
                 "user_code": user_code_frame(e.get("traceback"), sources), "root_cause": root.get("message")}
            inner = compiled_root_cause(e.get("message"), e.get("traceback"), sources)
            if inner is not None:
                # the model's own exception, not Dynamo's wrapper of it
                f["compiled"] = {"type": f["type"], "where": f["where"]}
                f["type"], f["message"], f["where"] = inner[0], inner[1], inner[2] or f["where"]
                f["user_code"] = inner[2]
                f["root_cause"] = (f"PP rank {r['rank']} failed: {inner[0]}: {inner[1]} at {f['where']} "
                                   f"(raised inside torch.compile; Dynamo reported {f['compiled']['type']} at "
                                   f"{f['compiled']['where']})")
            return f
    if result.get("error"):
        e = result["error"]
        msg = e.get("message") or ""
        return {"rank": root.get("pp_rank"), "type": e.get("type"), "message": " ".join(msg.split())[:500],
                "where": where_from_traceback(e.get("traceback")), "phase": "init", "root_cause": root.get("message")}
    for name, req in (rep.get("requests") or {}).items():
        if not req.get("ok"):
            return {"rank": root.get("pp_rank"), "type": req.get("type"), "message": (req.get("message") or "")[:500],
                    "where": where_from_traceback(req.get("traceback")), "phase": f"request {name}",
                    "root_cause": root.get("message")}
    if timed_out:
        return {"rank": None, "type": "Timeout", "message": f"no result after {timeout:.0f} s", "where": None,
                "phase": result.get("status"), "root_cause": root.get("message")}
    return {"rank": root.get("pp_rank"), "type": "EngineExited", "message": f"driver status {result.get('status')}, "
            f"exit {rep.get('driver_exit')}", "where": None, "phase": result.get("status"), "root_cause": root.get("message")}


def failure_text(f: dict) -> str:
    rank = f"PP rank {f['rank']}: " if f.get("rank") is not None else ""
    where = f" at {f['where']}" if f.get("where") else ""
    msg = " ".join(str(f.get("message") or "").split())
    user = f" (model code: {f['user_code']})" if f.get("user_code") else ""
    return f"{rank}{f.get('type')}: {msg}{where}{user}"


def source_import_error(rep: dict, result: dict, sources: list) -> str | None:
    """A ``--source`` file that failed while being imported (a module-level frame of that file in
    the failure's traceback): the message for exit 2, else None."""
    paths = [os.path.abspath(p) for _m, p in sources]
    if not paths:
        return None
    tbs = [(r.get("error") or {}).get("traceback") or "" for r in rep.get("ranks") or []]
    tbs.append((result.get("error") or {}).get("traceback") or "")
    for tb in tbs:
        for f, line, fn in _TB_FRAME.findall(tb):
            if fn == "<module>" and os.path.abspath(f) in paths:
                last = [x for x in tb.strip().splitlines() if x.strip()][-1].strip()
                return f"--source {f} does not import: {last[:300]} (at {f}:{line})"
    return None


def reclassify(rep: dict) -> dict:
    """A cached FAIL that now matches ``known_limits`` or ``known_failures`` becomes UNSUPPORTED
    (in place; returned); a cached failure without ``user_code`` gets it from the failed rank's traceback."""
    f = rep.get("failure")
    if f and "user_code" not in f:
        for r in rep.get("ranks") or []:
            if r.get("rank") == f.get("rank") and r.get("error"):
                f["user_code"] = user_code_frame(r["error"].get("traceback"))
                if f["user_code"]:
                    rep["reason"] = failure_text(f)
    if rep.get("outcome") == "FAIL" and rep.get("failure"):
        known = known_limit(rep["failure"], rep.get("arch"))
        if known:
            rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=f"{known}: {rep.get('reason')}")
    return rep


def known_limit(failure: dict, arch: str | None = None) -> str | None:
    """A failure that is a limit of this backend or of the toy config, not of the model code:
    the ``known_limits`` of toy_sizes.yaml (regex on ``Type: message``), then ``arch``'s
    ``known_failures`` there (regex on ``Type: message`` and, when given, on the failing frame
    ``file:line in function``) -> the reason text; None otherwise."""
    from .toy_config import load_rules

    rules = load_rules()
    text = f"{failure.get('type')}: {failure.get('message')}"
    for item in rules.get("known_limits") or []:
        if re.search(item["match"], text):
            return item["reason"]
    for item in rules.get("known_failures") or []:
        if arch in item["archs"] and re.search(item["match"], text) and \
                (not item.get("where") or re.search(item["where"], failure.get("where") or "")):
            return item["reason"]
    return None


def _in_weight_loading(error: dict) -> bool:
    """Whether a rank's error was raised while vLLM loaded the checkpoint: a frame of its traceback
    (or its ``where``) is in a ``*load_weights*`` function or in vLLM's ``load_model``."""
    frames = _TB_FRAME.findall(error.get("traceback") or "")
    names = [fn for _f, _line, fn in frames] + [(error.get("where") or "").rpartition(" in ")[2]]
    return any("load_weights" in fn or fn == "load_model" for fn in names)


def build_report(arch: str, pp: int, result: dict, events: list, driver_pid: int, t0: float) -> dict:
    """Merge plugin events and the driver result into one per-rank report."""
    ranks = {r: RankReport(rank=r) for r in range(pp)}
    for ev in events:
        rank = ev.get("pp_rank")
        if rank not in ranks or ev.get("pid") == driver_pid:
            continue
        rr = ranks[rank]
        if ev["event"] == "model_init_ok":
            rr.status = "initialized"
            rr.pid = ev["pid"]
            rr.start_layer, rr.end_layer = ev.get("start_layer"), ev.get("end_layer")
            rr.deepstack_levels = ev.get("deepstack_levels")
            rr.init_seconds = round(ev["time"] - t0, 2)
            rr.construct_seconds = round(ev.get("seconds") or 0, 3)
        elif ev["event"] == "model_init_error":
            rr.status = "failed"
            rr.pid = ev["pid"]
            rr.init_seconds = round(ev["time"] - t0, 2)
            rr.construct_seconds = round(ev.get("seconds") or 0, 3)
            rr.error = {k: ev.get(k) for k in ("type", "message", "where", "traceback")}
            rr.error["phase"] = "init"
            rr.start_layer, rr.end_layer = ev.get("start_layer"), ev.get("end_layer")
        elif ev["event"] == "logged_error" and ev.get("type"):
            rr.errors.append({k: ev.get(k) for k in ("type", "message", "where", "log_message")})
            if rr.error is None:
                rr.error = {k: ev.get(k) for k in ("type", "message", "where", "traceback")}
                rr.error["phase"] = ("init" if rr.status != "initialized" else
                                     "weight loading" if _in_weight_loading(rr.error) else
                                     "serving" if "engine_ready" in (result.get("timings") or {}) else "warm-up")
                rr.status = "failed"
    before = {r.get("pp_rank"): r for r in result.get("ranks_after_init") or [] if isinstance(r, dict)}
    after = {r.get("pp_rank"): r for r in result.get("ranks_after_requests") or [] if isinstance(r, dict)}
    for rank, rr in ranks.items():
        if rank in before and rank in after:
            b = sum(before[rank].get("forward_calls", {}).values())
            a = sum(after[rank].get("forward_calls", {}).values())
            rr.forward_calls_during_requests = a - b
        if rr.status == "unknown" and rank in before and before[rank].get("model"):
            m = before[rank]["model"]
            rr.status = "initialized"
            rr.start_layer, rr.end_layer = m.get("start_layer"), m.get("end_layer")
            rr.deepstack_levels = m.get("deepstack_levels")
    overridden = sorted({(e["module"], e["origin"]) for e in events if e["event"] == "module_loaded" and e.get("overridden")})
    return {
        "arch": arch,
        "pp": pp,
        "status": result.get("status"),
        "device": result.get("device"),
        "compile": result.get("compile"),
        "worker_start": result.get("worker_start"),
        "weights": result.get("weights"),
        "env_error": result.get("env_error"),
        "error": result.get("error"),
        "overrides": result.get("overrides", {}),
        "toy_config": result.get("toy_config"),
        # processes that run an overridden module: imported it, or were forked with it imported
        "override_loaded_in_pids": sorted({e["pid"] for e in events if (e["event"] == "module_loaded" and e.get("overridden"))
                                           or (e["event"] == "process_forked" and e.get("overridden_modules"))}),
        "overridden_modules": [list(x) for x in overridden],
        "ranks": [rr.__dict__ for rr in ranks.values()],
        "requests": result.get("requests", {}),
        "timings": result.get("timings", {}),
    }


def format_text(rep: dict) -> str:
    lines = []
    verdict = {EXIT_OK: "PASS", EXIT_FAIL: "FAIL", EXIT_ENV: "CANNOT RUN",
               EXIT_UNSUPPORTED: "UNSUPPORTED"}[rep["exit_code"]]
    if rep.get("outcome") == "UNSUPPORTED":
        return (f"== {rep['arch']}  pp={rep['pp']}  UNSUPPORTED  ({rep.get('wall_seconds', 0):.1f} s wall)\n"
                f"   reason: {rep.get('reason')}")
    # what the driver reported of its set-up; a driver that stopped before it (no engine, a
    # timeout before the result) reported none, and nothing is said of it then
    setup = "".join(f"  {label}{rep[key]}" for key, label in (("device", "device="), ("compile", "compile="),
                                                               ("worker_start", "ranks started by "))
                    if rep.get(key) is not None)
    lines.append(f"== {rep['arch']}  pp={rep['pp']}{setup}"
                 f"{'  weights=toy' if rep.get('weights') == 'toy' else ''}"
                 f"{'  layers split ' + rep['layer_partition'] if rep.get('layer_partition') else ''}  {verdict}  "
                 f"({rep['wall_seconds']:.1f} s wall)")
    if rep.get("env_error"):
        lines.append(f"   missing: {rep['env_error']}")
        return "\n".join(lines)
    for mod, path in rep.get("overrides", {}).items():
        lines.append(f"   source override: {mod} <- {path} (loaded in {len(rep['override_loaded_in_pids'])} process(es))")
    not_split = ((rep.get("toy_config") or {}).get("not_set") or {}).get("layer_partition")
    if not_split:
        lines.append(f"   layer split not set (vLLM's even split instead): {not_split}")
    for r in rep["ranks"]:
        layers = f"layers {r['start_layer']}..{r['end_layer']}" if r["start_layer"] is not None else "layers ?"
        ds = f"deepstack levels {r['deepstack_levels']}" if r["deepstack_levels"] is not None else ""
        verb = ("constructed" if r["status"] != "failed" or (r["error"] or {}).get("phase") in ("serving", "weight loading", "warm-up")
                else "__init__ raised")
        t = (f"{verb} at +{r['init_seconds']:.1f}s after {r['construct_seconds']:.2f}s"
             if r["init_seconds"] is not None else "")
        fw = (f"forward calls during requests {r['forward_calls_during_requests']}"
              if r["forward_calls_during_requests"] is not None else "")
        head = f"   PP rank {r['rank']}: {r['status']:<11} " + ", ".join(x for x in (f"pid {r['pid']}" if r["pid"] else "", layers, ds, fw, t) if x)
        lines.append(head)
        if r["error"]:
            e = r["error"]
            phase = {"serving": " (while serving)", "weight loading": " (while loading weights)",
                     "warm-up": " (in the engine's warm-up run)"}.get(e.get("phase"), "")
            # the model's own exception when Dynamo wrapped it (as in the failure line)
            inner = compiled_root_cause(e.get("message"), e.get("traceback"), set((rep.get("overrides") or {}).values()))
            typ, msg, where = (inner[0], inner[1], inner[2] or e.get("where")) if inner else \
                (e.get("type"), e.get("message"), e.get("where"))
            lines.append(f"      {typ}: {msg}{phase}")
            if where:
                lines.append(f"      at {where}")
            if inner:
                lines.append(f"      (raised inside torch.compile; Dynamo reported {e.get('type')} at {e.get('where')})")
    names = ["text"] + [n for n in rep["requests"] if n != "text"]
    if rep["arch"] in ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration") and "image" not in names:
        names.append("image")
    for name in names:
        req = rep["requests"].get(name)
        if req is None:
            lines.append(f"   request {name}: not run")
        elif req.get("ok"):
            extra = f", {req['image_tokens']} image tokens" if "image_tokens" in req else ""
            lines.append(f"   request {name}: served in {req['seconds']:.2f} s ({req['prompt_tokens']} prompt tokens{extra}, "
                         f"output ids {req['output_token_ids']})")
        else:
            lines.append(f"   request {name}: FAILED {req.get('type')}: {req.get('message')}")
    if rep.get("error") and not any(r["error"] for r in rep["ranks"]):
        lines.append(f"   engine error: {rep['error']['type']}: {rep['error']['message'][:500]}")
    if rep.get("failure"):
        f = rep["failure"]
        lines.append(f"   failure: {failure_text(f)}" + (f" (during {f['phase']})" if f.get("phase") else ""))
    if rep.get("root_cause"):
        rc = rep["root_cause"]
        lat = f" (reported {rc['latency_s']:.1f} s after it happened)" if rc.get("latency_s") is not None else ""
        lines.append(f"   root cause: {rc['message']}{lat}")
    tm = rep.get("timings", {})
    if tm:
        lines.append("   timings (s since start): " + ", ".join(f"{k} {v:.1f}" for k, v in tm.items()))
    if rep.get("timed_out"):
        lines.append("   timed out")
    if rep["exit_code"] != EXIT_OK and rep.get("log"):
        lines.append(f"   engine log: {rep['log']}")
    return "\n".join(lines)

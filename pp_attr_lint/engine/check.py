"""Check: run the rules over the checked files, apply noqa and per-file ignores, collect findings.

:func:`check` is the one entry point: files in, findings out.  Every enabled rule (see
:mod:`pp_attr_lint.plugin`) runs on every checked file with one shared resolver per project group;
what a rule could not judge comes back as :class:`~pp_attr_lint.model.NotJudged` records.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .model import Finding, NotJudged
from .project import Cache, Project
from .rules import Rule
from .textio import display_path  # noqa: F401  (re-exported for the CLI and reports)


@dataclass
class CheckResult:
    """What a check produced: findings (sorted), how many files were checked, their sources, and
    the watched reads no rule could judge (sorted; see :mod:`pp_attr_lint.unjudged`)."""

    findings: list[Finding]
    files_checked: int
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings
    not_judged: list[NotJudged] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one-line remarks for the user (stderr)


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def noqa_map(text: str) -> dict[int, set[str]]:
    """The ``# noqa`` comments of a file: line -> the codes it suppresses (``{"*"}`` for a bare
    ``# noqa``).  Uses :mod:`tokenize`, so that ``# noqa`` inside a string does not count; a file
    that does not tokenize has none."""
    out: dict[int, set[str]] = {}
    if "noqa" not in text.lower():
        return out
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                m = _NOQA.search(tok.string)
                if m:
                    codes = m.group("codes")
                    out[tok.start[0]] = {"*"} if not codes else {c.strip().upper() for c in codes.split(",")}
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    return out


def _line(text: str, row: int) -> str:
    """Line ``row`` (1-based) of ``text`` ("" past the end); lines end as for the tokenizer."""
    start = 0
    for _ in range(row - 1):
        nl = text.find("\n", start)
        if nl < 0:
            return ""
        start = nl + 1
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def check(files: list[Path], rules: list[Rule], *, cache: Cache, src: list[Path] = (),
          as_module: str | None = None, explicit: set[str] = frozenset(),
          ignore_for: callable = None, env_paths: list[str] | None = None, jobs: int = 1) -> CheckResult:
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
            :func:`pp_attr_lint.project.environment_paths`); ``None``: none.
        jobs: processes that may summarize the files (see :mod:`pp_attr_lint.parallel`); the
            result is the same for any number.

    Returns:
        A :class:`CheckResult`.  Files that cannot be read, decoded or parsed give a finding with
        ``code=None`` (``io-error`` / ``invalid-syntax``) instead of raising; so does a file that
        does not parse when a watched read depends on it.  Reads no rule could judge are listed in
        ``not_judged``; remarks (a lone file checked as a module) in ``notes``.
    """
    import hashlib
    import marshal

    from .model import finding_from_dict, finding_to_dict, not_judged_from_dict, not_judged_to_dict
    from .project import environment_stamp, unchanged

    paths = [os.path.abspath(f) for f in files]
    env_paths = list(env_paths or ())
    memo_key = hashlib.blake2b(marshal.dumps((
        [(r.code, r.source, repr(r)) for r in rules],
        paths, [os.path.abspath(s) for s in src], as_module, sorted(explicit), os.getcwd(), env_paths,
        environment_stamp(env_paths),  # the installed distributions and their versions
    )), digest_size=16).hexdigest()
    memo = cache.memo(memo_key)
    if memo is not None and unchanged(memo["touched"]):
        raw = [finding_from_dict(d) for d in memo["findings"]]
        unjudged = [not_judged_from_dict(d) for d in memo.get("not_judged", ())]
        notes = list(memo.get("notes", ()))
    else:
        touched, raw, unjudged, notes = _analyze(paths, rules, cache, src, as_module, explicit, env_paths, jobs)
        cache.put_memo(memo_key, {"touched": touched, "findings": [finding_to_dict(f) for f in raw],
                                  "not_judged": [not_judged_to_dict(n) for n in unjudged], "notes": notes})
        cache.flush()
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    noqa: dict[str, dict[int, set[str]]] = {}
    for f in raw:
        if f.code is None:
            findings.append(f)
            continue
        if ignore_for and ignore_for(f.path, f.code):
            continue
        if f.path not in sources:
            from .textio import read_source

            sources[f.path] = read_source(f.path).text
        row = f.noqa_row or f.row
        codes = None
        if "noqa" in _line(sources[f.path], row).lower():  # tokenize only a file whose line may carry one
            if f.path not in noqa:
                noqa[f.path] = noqa_map(sources[f.path])
            codes = noqa[f.path].get(row)
        if codes is not None and ("*" in codes or f.code in codes):
            continue
        findings.append(f)
    findings.sort(key=Finding.sort_key)
    if ignore_for:
        unjudged = [n for n in unjudged if not ignore_for(n.path, n.code)]
    return CheckResult(findings=findings, files_checked=len(paths), sources=sources,
                       not_judged=sorted(unjudged, key=NotJudged.sort_key), notes=notes)


def _analyze(paths, rules, cache, src, as_module, explicit, env_paths=(), jobs=1):
    """Run the rules over ``paths``: what the run depended on (``{path: (mtime_ns, size) or None}``),
    raw findings (before per-file ignores and noqa), the reads not judged (``# noqa`` applied)
    and notes for the user.

    Files are grouped by the folder that holds their top package, and each group is resolved in
    its own project (that folder, then ``src``, then the environment's folders for packages
    neither holds), as Python would run it: two trees that hold a package of the same name (two
    vLLM releases side by side) never resolve into each other.  A folder without
    ``__init__.py`` (a PEP 420 namespace portion) is named from the ``src`` folder that holds it
    or from the absolute imports its files use; a lone file with relative imports is checked as
    the one module of a ``src`` or installed package it matches (see :func:`infer_module`)."""
    from .facts import merged_settings
    from .plugin import index_spec
    from .project import package_root

    spec = index_spec(rules)
    # packages whose classes the facts declare attribute-less (torch, typing) are never read from
    # the environment: they stay what the facts say they are
    settings = merged_settings([r.settings for r in rules if r.settings is not None])
    external = frozenset(b.split(".", 1)[0] for b in settings.attributeless_bases)
    touched: dict = {}
    findings: list[Finding] = []
    unjudged: list[NotJudged] = []
    notes: list[str] = []

    def run(project, states):
        f, u = _analyze_group(project, states, rules, explicit, jobs)
        findings.extend(f)
        unjudged.extend(u)
        touched.update(project.touched)

    if as_module:
        run(*_as_module_project(as_module, paths, spec, cache, src, env_paths, external))
        return touched, findings, unjudged, notes
    groups: dict[str, list[tuple[str, str]]] = {}
    lone: list[tuple[str, str]] = []
    remap = _namespace_roots(paths, src)
    for p in paths:
        root, mod = package_root(p)
        if root in remap:
            new_root, prefix = remap[root]
            root, mod = new_root, ".".join(prefix + (mod,))
        elif "." not in mod and os.path.basename(p) != "__init__.py" and _has_relative_imports(p):
            inferred = infer_module(p, src, env_paths)
            if inferred is not None:
                lone.append((p, inferred))
                notes.append(f"checking {display_path(p)} as module `{inferred}` (the one module of that name whose "
                             "package satisfies its relative imports); name another with --as-module")
                continue
        groups.setdefault(root, []).append((p, mod))
    for root, group in groups.items():
        project = Project([root, *src], spec, cache, env_roots=env_paths, external=external)
        renamed = root in _remapped(remap)
        run(project, [project.file_state(p, mod, root=root) if renamed else project.file_state(p) for p, mod in group])
    for p, mod in lone:
        run(*_as_module_project(mod, [p], spec, cache, src, env_paths, external))
    return touched, findings, unjudged, notes


def _remapped(remap: dict) -> set[str]:
    return {v[0] for v in remap.values()}


def _as_module_project(as_module, paths, spec, cache, src, env_paths, external=frozenset()):
    """The project and file states for ``paths`` checked as module ``as_module``: every ``src``
    folder, then the folder that holds ``as_module``'s top package, then the environment."""
    roots = [Path(s) for s in src]
    env = list(env_paths)
    for r in _module_roots(as_module, src, env_paths):
        if str(os.path.abspath(r)) not in [os.path.abspath(x) for x in roots] + [os.path.abspath(e) for e in env]:
            env.insert(0, str(r))  # a folder on sys.path: searched like the environment (torch stays external)
    project = Project(roots, spec, cache, env_roots=env, external=external)
    return project, [project.file_state(p, as_module) for p in paths]


_IMPORT_RE = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.M)


def _imports(path: str) -> list[tuple[int, str]]:
    """``(level, module)`` of the ``import``/``from ... import`` lines of ``path`` (a quick text scan)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return []
    out = []
    for m in _IMPORT_RE.finditer(data):
        if m.group(3) is not None:
            out.append((0, m.group(3).decode("ascii", "replace")))
        else:
            out.append((len(m.group(1)), m.group(2).decode("ascii", "replace")))
    return out


def _has_relative_imports(path: str) -> bool:
    return any(level > 0 for level, _ in _imports(path))


def _namespace_roots(paths: list[str], src) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For folders that hold checked files but no ``__init__.py`` (PEP 420 namespace portions):
    ``{folder: (import root, module prefix)}``.  The prefix comes from the deepest ``src`` folder
    above it, else from an absolute import of one of its files whose leading names match the
    folder's own path and whose target exists below the root (``pkg/runtime/models/a.py``
    importing ``pkg.runtime.models.b`` -> root ``pkg``'s parent, prefix ``pkg.runtime.models``)."""
    from .project import package_root

    src_abs = sorted((os.path.abspath(s) for s in src), key=len, reverse=True)
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    tried: set[str] = set()
    for p in paths:
        root, mod = package_root(p)
        if root in tried:
            continue
        tried.add(root)
        for s in src_abs:
            if root != s and root.startswith(s.rstrip(os.sep) + os.sep):
                out[root] = (s, tuple(os.path.relpath(root, s).split(os.sep)))
                break
        else:
            top = _enclosing_package(root)
            if top is not None:
                # a folder without __init__.py inside a regular package (sglang/srt/ in sglang/)
                base = os.path.dirname(top)
                out[root] = (base, tuple(os.path.relpath(root, base).split(os.sep)))
                continue
            # files that lie right in the folder (no __init__.py beside them): their imports tell
            loose = [x for x in paths if os.path.dirname(x) == root]
            if not loose:
                continue  # only regular packages below it: their folders name them
            parts = root.split(os.sep)
            for q in loose:
                for level, target in _imports(q):
                    t = target.split(".")
                    if level or len(t) < 2:
                        continue
                    for j in range(min(len(t) - 1, len(parts) - 1), 0, -1):
                        if parts[-j:] == t[:j]:
                            base = os.sep.join(parts[:-j]) or os.sep
                            rel = os.path.join(base, *t)
                            if os.path.isfile(rel + ".py") or os.path.isdir(rel):
                                out[root] = (base, tuple(t[:j]))
                                break
                    if root in out:
                        break
                if root in out:
                    break
    return out


def _enclosing_package(folder: str, levels: int = 8) -> str | None:
    """The highest folder above ``folder`` (at most ``levels`` up) that holds an ``__init__.py``,
    when there is one: ``folder`` is then a namespace portion inside that package."""
    found = None
    d = folder
    for _ in range(levels):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        if os.path.isfile(os.path.join(d, "__init__.py")):
            found = d
    return found


def infer_module(path: str, src, env_paths) -> str | None:
    """The module a lone file (no package around it) is a copy of: the one module named like the
    file in the packages of the ``src`` folders and the environment whose package satisfies all
    of the file's relative imports (each target exists as a module or package).  ``None`` when
    no module or more than one matches."""
    rel = [(level, target) for level, target in _imports(path) if level > 0]
    stem = os.path.basename(path)[:-3]
    matches: list[str] = []
    for base in dict.fromkeys([os.path.abspath(s) for s in src] + list(env_paths)):
        for cand in _modules_named(base, stem):
            if os.path.abspath(cand) == os.path.abspath(path):
                continue
            parts = os.path.relpath(cand, base)[:-3].split(os.sep)
            if all(_relative_target_exists(base, parts, level, target) for level, target in rel):
                name = ".".join(parts)
                if name not in matches:
                    matches.append(name)
    return matches[0] if len(matches) == 1 else None


def _modules_named(base: str, stem: str) -> list[str]:
    """Files ``stem.py`` inside regular packages (folders with ``__init__.py``) under ``base``."""
    out = []
    try:
        tops = [e for e in os.scandir(base) if e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py"))]
    except OSError:
        return out
    stack = [e.path for e in tops]
    while stack:
        d = stack.pop()
        f = os.path.join(d, stem + ".py")
        if os.path.isfile(f):
            out.append(f)
        try:
            for e in os.scandir(d):
                if e.is_dir(follow_symlinks=False) and e.name != "__pycache__" and os.path.isfile(os.path.join(e.path, "__init__.py")):
                    stack.append(e.path)
        except OSError:
            continue
    return out


def _relative_target_exists(base: str, parts: list[str], level: int, target: str) -> bool:
    pkg = parts[:-1]
    if level - 1 > len(pkg) or (level - 1 == len(pkg) and not target):
        return False
    pkg = pkg[: len(pkg) - (level - 1)]
    full = os.path.join(base, *pkg, *(target.split(".") if target else []))
    return os.path.isfile(full + ".py") or os.path.isdir(full)


def _analyze_group(project: Project, states: list, rules, explicit,
                   jobs: int = 1) -> tuple[list[Finding], list[NotJudged]]:
    """Run every rule on every checked file of one project group, with one shared resolver.  A
    rule's ``check`` yields findings and :class:`NotJudged` records (reads it could not judge).
    The files the prefilter accepts are summarized first, over up to ``jobs`` processes."""
    from .facts import merged_settings
    from .plugin import FileContext
    from .resolve import Resolver, Unresolved

    findings: list[Finding] = []
    unjudged: list[NotJudged] = []
    reported: set[str] = set()  # files with an invalid-syntax / io-error finding
    checked = []
    settings = merged_settings([r.settings for r in rules if r.settings is not None])
    # in worker processes when many files changed, resolving ahead what the rules will ask for
    for st in project.scan(states, explicit, jobs, ahead=lambda p: Resolver(p, settings)):
        summary = project.load(st)
        if st.error or st.syntax_error:
            findings.append(_broken_file(st))
            reported.add(st.path)
            continue
        if summary is not None:
            checked.append(st)
    resolver = Resolver(project, settings)
    shared: dict = {}
    for st in checked:
        ctx = FileContext(file=st, project=project, resolver=resolver, checked=checked, shared=shared)
        file_unjudged = []
        mask = True if st.path in explicit else (st.hit or 0)
        for rule in rules:
            if not project.spec.wants(rule, mask):
                continue  # its prefilter turned the file down: another rule's hit made it checked
            try:
                got = list(rule.check(ctx))
            except (RecursionError, Unresolved):  # too deep to follow, or not understood: silent
                continue
            for f in got:
                if isinstance(f, NotJudged):
                    file_unjudged.append(f)
                else:
                    findings.append(f)
        if file_unjudged:
            unjudged.extend(_drop_noqa(st.path, file_unjudged))
    # a file that does not parse while a read depends on it: always an invalid-syntax finding
    for n in unjudged:
        if n.reason == "syntax-error" and n.dep_path and n.dep_path not in reported:
            dep = project.state_of(n.dep_path)
            if dep is not None and (dep.syntax_error or dep.error):
                findings.append(_broken_file(dep))
                reported.add(n.dep_path)
    return findings, unjudged


def _broken_file(st) -> Finding:
    if st.error:
        return Finding(code=None, name="io-error", message=st.error, path=st.path,
                       row=1, column=1, end_row=1, end_column=1)
    msg, line, col = st.syntax_error
    return Finding(code=None, name="invalid-syntax", message=f"SyntaxError: {msg}",
                   path=st.path, row=line, column=col + 1, end_row=line, end_column=col + 1)


def _drop_noqa(path: str, records: list[NotJudged]) -> list[NotJudged]:
    """``records`` without those on a line whose ``# noqa`` covers their rule."""
    from .textio import read_source

    try:
        marks = noqa_map(read_source(path).text)
    except (OSError, UnicodeDecodeError, SyntaxError):
        return records
    return [n for n in records if not ((c := marks.get(n.row)) and ("*" in c or n.code in c))]


def _module_roots(module: str, src: list[Path], env_paths=()) -> list[Path]:
    """Folders where ``module``'s top package can be found: ``src`` first, then the environment's
    folders, then ``sys.path`` (found with :func:`importlib.machinery.PathFinder.find_spec`,
    which imports nothing)."""
    import importlib.machinery

    top = module.split(".")[0]
    for s in [*src, *env_paths]:
        if (Path(s) / top).is_dir() or (Path(s) / f"{top}.py").is_file():
            return [Path(s)]
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is not None and spec.submodule_search_locations:
        return [Path(list(spec.submodule_search_locations)[0]).parent]
    return []

"""Check: run the rules over the checked files, apply noqa and per-file ignores, collect findings.

:func:`check` is the one entry point: files in, findings out.  A finding is made only when the
receiver's candidate classes are all resolved, none of them can have the attribute, and all of them
reach a class that sets it in its executed ``__init__`` through the same submodule path.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .model import Finding
from .project import Cache, Project
from .rules import Rule
from .textio import display_path  # noqa: F401  (re-exported for the CLI and reports)


@dataclass
class CheckResult:
    """What a check produced: findings (sorted), how many files were checked, their sources."""

    findings: list[Finding]
    files_checked: int
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings


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


def check(files: list[Path], rules: list[Rule], *, cache: Cache, src: list[Path] = (),
          as_module: str | None = None, explicit: set[str] = frozenset(),
          ignore_for: callable = None) -> CheckResult:
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

    Returns:
        A :class:`CheckResult`.  Files that cannot be read, decoded or parsed give a finding with
        ``code=None`` (``io-error`` / ``invalid-syntax``) instead of raising.
    """
    import hashlib
    import marshal

    from .model import finding_from_dict, finding_to_dict
    from .project import unchanged

    paths = [os.path.abspath(f) for f in files]
    memo_key = hashlib.blake2b(marshal.dumps((
        [(r.code, r.source, repr(r)) for r in rules],
        paths, [os.path.abspath(s) for s in src], as_module, sorted(explicit), os.getcwd(),
    )), digest_size=16).hexdigest()
    memo = cache.memo(memo_key)
    if memo is not None and unchanged(memo["touched"]):
        raw = [finding_from_dict(d) for d in memo["findings"]]
    else:
        touched, raw = _analyze(paths, rules, cache, src, as_module, explicit)
        cache.put_memo(memo_key, {"touched": touched, "findings": [finding_to_dict(f) for f in raw]})
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
            noqa[f.path] = noqa_map(sources[f.path])
        codes = noqa[f.path].get(f.noqa_row or f.row)
        if codes is not None and ("*" in codes or f.code in codes):
            continue
        findings.append(f)
    findings.sort(key=Finding.sort_key)
    return CheckResult(findings=findings, files_checked=len(paths), sources=sources)


def _analyze(paths, rules, cache, src, as_module, explicit):
    """Run the rules over ``paths``: what the run depended on (``{path: (mtime_ns, size) or None}``)
    and raw findings, before per-file ignores and noqa.

    Files are grouped by the folder that holds their top package, and each group is resolved in
    its own project (that folder plus ``src``), as Python would run it: two trees that hold a
    package of the same name (two vLLM releases side by side) never resolve into each other."""
    from .plugin import index_spec
    from .project import package_root

    spec = index_spec(rules)
    touched: dict = {}
    findings: list[Finding] = []
    if as_module:
        roots = list(src) + _module_roots(as_module, src)
        # a lone module checked as part of an installed package: only that package is first-party,
        # not everything else in the folder that holds it (torch, transformers in site-packages)
        project = Project(roots, spec, cache, first_party={as_module.split(".")[0]})
        findings += _analyze_group(project, [project.file_state(p, as_module) for p in paths], rules, explicit)
        return project.touched, findings
    groups: dict[str, list[str]] = {}
    for p in paths:
        groups.setdefault(package_root(p)[0], []).append(p)
    for root, group in groups.items():
        project = Project([root, *src], spec, cache)
        findings += _analyze_group(project, [project.file_state(p) for p in group], rules, explicit)
        touched.update(project.touched)
    return touched, findings


def _analyze_group(project: Project, states: list, rules, explicit) -> list[Finding]:
    """Run every rule on every checked file of one project group, with one shared resolver."""
    from .facts import merged_settings
    from .plugin import FileContext
    from .resolve import Resolver, Unresolved

    findings: list[Finding] = []
    checked = []
    for st in states:
        hit = project.prefilter_hit(st)
        if not hit and st.path not in explicit:
            continue
        summary = project.load(st)
        if st.error:
            findings.append(Finding(code=None, name="io-error", message=st.error, path=st.path,
                                    row=1, column=1, end_row=1, end_column=1))
            continue
        if st.syntax_error:
            msg, line, col = st.syntax_error
            findings.append(Finding(code=None, name="invalid-syntax", message=f"SyntaxError: {msg}",
                                    path=st.path, row=line, column=col + 1, end_row=line, end_column=col + 1))
            continue
        if summary is not None:
            checked.append(st)
    resolver = Resolver(project, merged_settings([r.settings for r in rules if r.settings is not None]))
    shared: dict = {}
    for st in checked:
        ctx = FileContext(file=st, project=project, resolver=resolver, checked=checked, shared=shared)
        for rule in rules:
            try:
                findings.extend(rule.check(ctx))
            except (RecursionError, Unresolved):  # too deep to follow, or not understood: silent
                continue
    return findings


def _module_roots(module: str, src: list[Path]) -> list[Path]:
    """Folders where ``module``'s top package can be found: ``src`` first, then ``sys.path``
    (found with :func:`importlib.machinery.PathFinder.find_spec`, which imports nothing)."""
    import importlib.machinery

    top = module.split(".")[0]
    for s in src:
        if (Path(s) / top).is_dir() or (Path(s) / f"{top}.py").is_file():
            return [Path(s)]
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is not None and spec.submodule_search_locations:
        return [Path(list(spec.submodule_search_locations)[0]).parent]
    return []

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


@dataclass
class CheckResult:
    """What a check produced: findings (sorted), how many files were checked / read / parsed."""

    findings: list[Finding]
    files_checked: int
    files_read: int = 0
    files_parsed: int = 0
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it, else unchanged."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def noqa_codes(text: str, row: int) -> set[str] | None:
    """The codes a ``# noqa`` comment on line ``row`` suppresses: ``{"*"}`` for a bare
    ``# noqa``, ``None`` when there is no noqa comment.  Uses :mod:`tokenize` so that ``# noqa``
    inside a string does not count."""
    lines = text.splitlines(keepends=True)
    if row - 1 >= len(lines) or "noqa" not in lines[row - 1].lower():
        return None
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and tok.start[0] == row:
                m = _NOQA.search(tok.string)
                if m:
                    codes = m.group("codes")
                    return {"*"} if not codes else {c.strip().upper() for c in codes.split(",")}
            elif tok.start[0] > row:
                break
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


def _scopes(summary: dict) -> dict:
    scopes = {}
    for cname, crec in summary["classes"].items():
        for scope in crec["methods"].values():
            scopes[(cname, scope["line"])] = scope
    for scope in summary["functions"].values():
        scopes[(None, scope["line"])] = scope
    return scopes


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
        [(r.code, r.name, r.attributes, r.message, r.fix_applicability, r.fix_message, r.url, repr(r.settings))
         for r in rules],
        paths, [os.path.abspath(s) for s in src], as_module, sorted(explicit), os.getcwd(),
    )), digest_size=16).hexdigest()
    memo = cache.memo(memo_key)
    if memo is not None and unchanged(memo["touched"]):
        raw = [finding_from_dict(d) for d in memo["findings"]]
        read = parsed = 0
    else:
        project, raw = _analyze(paths, rules, cache, src, as_module, explicit)
        cache.put_memo(memo_key, {"touched": project.touched, "findings": [finding_to_dict(f) for f in raw]})
        cache.flush()
        read, parsed = project.read_files, project.parsed_files
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    for f in raw:
        if f.code is None:
            findings.append(f)
            continue
        if ignore_for and ignore_for(f.path, f.code):
            continue
        if f.path not in sources:
            from .textio import read_source

            sources[f.path] = read_source(f.path).text
        codes = noqa_codes(sources[f.path], f.noqa_row or f.row)
        if codes is not None and ("*" in codes or f.code in codes):
            continue
        findings.append(f)
    findings.sort(key=Finding.sort_key)
    return CheckResult(findings=findings, files_checked=len(paths), files_read=read, files_parsed=parsed,
                       sources=sources)


def _analyze(paths, rules, cache, src, as_module, explicit):
    """Run the rules over ``paths``: the project (for its ``touched`` files) and raw findings,
    before per-file ignores and noqa."""
    from .analysis import RuleRunner

    attrs = frozenset(a for r in rules for a in r.attributes)
    roots = list(src)
    if as_module:
        roots += _module_roots(as_module, src)
    # a lone module checked as part of an installed package: only that package is first-party,
    # not everything else in the folder that holds it (torch, transformers in site-packages)
    project = Project(roots, attrs, cache, first_party={as_module.split(".")[0]} if as_module else None)
    states = [project.file_state(p, as_module if as_module else None) for p in paths]
    runners = [RuleRunner(r, project) for r in rules]
    findings: list[Finding] = []
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
        if summary is None or not summary["reads"]:
            continue
        scopes = _scopes(summary)
        for read in summary["reads"]:
            for runner in runners:
                if read["attr"] in runner.rule.attributes:
                    f = runner.evaluate(st, read, scopes)
                    if f is not None:
                        findings.append(f)
    return project, findings


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

"""Rules: which reads are wrong.  Applies each rule to the watched reads of the checked files.

:func:`check` is the one entry point: files in, findings out.  A finding is made only when the
receiver's candidate classes are all resolved, none of them can have the attribute, and all of them
reach a class that sets it in its executed ``__init__`` through the same submodule path.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from .model import Edit, Finding, Fix
from .project import Cache, FileState, Project
from .resolve import EXTERNAL, ClassKey, Resolver, Unresolved, Where
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


def _where(w: Where) -> str:
    return f"{display_path(w.path) if w.path else w.module}:{w.line}"


class _RuleRunner:
    def __init__(self, rule: Rule, project: Project):
        self.rule = rule
        self.project = project
        self.resolver = Resolver(project, rule.settings)

    # paths from a wrapper to a class that really sets the attribute
    def _paths(self, key: ClassKey, attr: str) -> dict[tuple[str, ...], list]:
        r = self.resolver
        out: dict[tuple[str, ...], list] = {}
        frontier: list[tuple[tuple[str, ...], ClassKey, list]] = [((), key, [])]
        for _depth in range(self.rule.settings.max_path_depth):
            nxt = []
            for path, ck, trail in frontier:
                for step in sorted(self._assigned_attrs(ck)):
                    got = r.attr_candidates(ck, step)
                    if got is None:
                        continue
                    cands, wheres = got
                    defs = [r.definition(c, attr) for c in sorted(cands)]
                    new_trail = trail + [(ck, step, sorted(cands), wheres)]
                    if all(d is not None for d in defs):
                        out[path + (step,)] = new_trail + [("def", sorted(cands), defs)]
                    elif len(cands) == 1:
                        nxt.append((path + (step,), next(iter(cands)), new_trail))
            if out:
                break
            frontier = nxt
        return out

    def _assigned_attrs(self, key: ClassKey) -> set[str]:
        names: set[str] = set()
        for entry in self.resolver.mro(key):
            if entry[0] == EXTERNAL:
                continue
            rec = self.resolver.class_record(entry)
            names.update(rec["annotations"])
            for scope in rec["methods"].values():
                names.update(scope["assigns"])
        return names

    def evaluate(self, st: FileState, read: dict, scopes: dict) -> Finding | None:
        chain = read["chain"]
        if not chain:
            return None
        cls = read["class"]
        scope = scopes.get((cls, read["function"]))
        if scope is None:
            return None
        if len(chain) == 1 and chain[0] == scope.get("self"):
            return None  # `self.start_layer`: the enclosing class is what it is
        r = self.resolver
        clskey = (st.module, cls) if cls else None
        try:
            cands = r.chain_candidates(tuple(chain), st.module, clskey, scope)
            if not cands:
                return None
            for k in cands:
                if r.attribute_status(k, read["attr"]) != "absent":
                    return None
            common: dict[tuple[str, ...], dict] | None = None
            for k in sorted(cands):
                paths = self._paths(k, read["attr"])
                per = {p: {k: t} for p, t in paths.items()}
                if common is None:
                    common = per
                else:
                    common = {p: {**common[p], **per[p]} for p in common if p in per}
                if not common:
                    return None
        except Unresolved:
            return None
        assert common
        return self._finding(st, read, sorted(cands), common)

    def _finding(self, st: FileState, read: dict, cands: list[ClassKey], common: dict) -> Finding:
        rule, attr = self.rule, read["attr"]
        best_len = min(len(p) for p in common)
        best = sorted(p for p in common if len(p) == best_len)
        path = best[0]
        receiver = ".".join(read["chain"])
        trails = common[path]
        inner_keys: list[ClassKey] = []
        defs: list[Where] = []
        for k in cands:
            last = trails[k][-1]
            for ck, d in zip(last[1], last[2]):
                if ck not in inner_keys:
                    inner_keys.append(ck)
                    defs.append(d)
        wrapper = " | ".join(k[1] for k in cands)
        inner = " | ".join(k[1] for k in inner_keys)
        where = ", ".join(dict.fromkeys(_where(d) for d in defs))
        dotted = ".".join(path)
        if read["kind"] == "getattr":
            fixed = f'getattr({receiver}.{dotted}, "{attr}")'
        else:
            fixed = f"{receiver}.{dotted}.{attr}"
        message = rule.message.format(receiver=receiver, wrapper=wrapper, attr=attr, inner=inner,
                                      path=dotted, where=where, fixed=fixed)
        explanation = self._explain(receiver, cands, attr, path, trails, defs)
        fix = None
        if rule.fix_applicability and len(best) == 1:
            edit = Edit(content="." + dotted, row=read["recv_end_line"], column=read["recv_end_col"] + 1,
                        end_row=read["recv_end_line"], end_column=read["recv_end_col"] + 1)
            fix = Fix(applicability=rule.fix_applicability,
                      message=(rule.fix_message or "Read `{fixed}`").format(fixed=fixed, path=dotted, attr=attr),
                      edits=(edit,))
        elif len(best) > 1:
            explanation.append("no fix: several submodule paths lead to the attribute: "
                               + ", ".join("." + ".".join(p) for p in best))
        return Finding(
            code=rule.code, name=rule.name, message=message, path=st.path,
            row=read["line"], column=read["col"] + 1, end_row=read["end_line"], end_column=read["end_col"] + 1,
            fix=fix, url=rule.url, noqa_row=read["line"], explanation=explanation,
            fix_data={"chain": list(read["chain"]), "path": list(path), "attr": attr, "kind": read["kind"]},
        )

    def _explain(self, receiver, cands, attr, path, trails, defs) -> list[str]:
        r = self.resolver
        lines = []
        for k in cands:
            rec = r.class_record(k)
            mro = " -> ".join(e[1] if e[0] != EXTERNAL else e[1] for e in r.mro(k))
            lines.append(f"`{receiver}` is a `{k[1]}` ({_where(Where(k[0], r.src.path(k[0]), rec['line'], ''))}); MRO: {mro}")
            inits = r.executed_inits(k)
            ran = ", ".join(f"{owner[1]}.__init__" for owner, _ in inits) or "no project __init__"
            lines.append(f"`{k[1]}()` runs {ran}; none of them sets `{attr}`, and no class on its MRO declares it")
            for ck, step, step_cands, wheres in trails[k][:-1]:
                at = ", ".join(dict.fromkeys(_where(w) for w in wheres))
                lines.append(f"`{ck[1]}.{step}` is a `{' | '.join(c[1] for c in step_cands)}` (set at {at})")
        for d, ck in zip(defs, [c for k in cands for c in trails[k][-1][1]]):
            lines.append(f"`{ck[1]}` sets `{attr}` in {d.what} at {_where(d)}")
        return lines


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def noqa_codes(text: str, row: int) -> set[str] | None:
    """The codes a ``# noqa`` comment on line ``row`` suppresses: ``{"*"}`` for a bare
    ``# noqa``, ``None`` when there is no noqa comment.  Uses :mod:`tokenize` so that ``# noqa``
    inside a string does not count."""
    lines = text.splitlines(keepends=True)
    if row - 1 >= len(lines) or "noqa" not in lines[row - 1].lower():
        return None
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
    attrs = frozenset(a for r in rules for a in r.attributes)
    roots = list(src)
    if as_module:
        roots += _module_roots(as_module, src)
    project = Project(roots, attrs, cache)
    states = []
    for f in files:
        st = project.file_state(str(f), as_module if as_module else None)
        states.append(st)
    runners = [_RuleRunner(r, project) for r in rules]
    findings: list[Finding] = []
    sources: dict[str, str] = {}
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
        file_findings = []
        for read in summary["reads"]:
            for runner in runners:
                if read["attr"] in runner.rule.attributes:
                    f = runner.evaluate(st, read, scopes)
                    if f is not None and not (ignore_for and ignore_for(st.path, f.code)):
                        file_findings.append(f)
        if file_findings:
            from .textio import read_source

            text = read_source(st.path).text
            sources[st.path] = text
            for f in file_findings:
                codes = noqa_codes(text, f.noqa_row or f.row)
                if codes is not None and ("*" in codes or f.code in codes):
                    continue
                findings.append(f)
    cache.flush()
    findings.sort(key=Finding.sort_key)
    return CheckResult(findings=findings, files_checked=len(states), files_read=project.read_files,
                       files_parsed=project.parsed_files, sources=sources)


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

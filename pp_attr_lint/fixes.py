"""Fixes: apply the findings' fixes, one file at a time, from each finding's edits.

One mechanism for every rule: the edits of the applicable fixes (those that do not overlap an
earlier one, as in ruff) are applied to the text, and the result is checked through ``ast`` (the
whole file) and libcst (one parse of the functions or classes, else top-level statements, that hold
the edits: a 50,000-line file is not parsed whole by libcst, which would take 11 s and 1.1 GB).
Where a rule's fix is a transformation of the syntax tree (the ``wrapper-attribute`` rules insert a
submodule path into a receiver, which may be parenthesized or span lines), the transformation is
made with a libcst transformer on that parse and its output must equal the edits' text.  Every
other byte of the file is kept, including its encoding, BOM, line endings and permission bits.  A
file whose fixed text would not parse is left as it is and reported.

A file is written only if it still holds the bytes its findings were computed on (the check's
content hash, compared when its fix starts; the bytes read then, compared again immediately before
the atomic replace): an edit made during the run is never overwritten.  :func:`fix_until_stable`
is the fix loop of ``check --fix``: fix, check again, fix what is still fixable, until stable.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .model import Edit, Finding
from .textio import ChangedOnDisk, SourceFile, display_path, read_source, write_source_atomic

# libcst is imported when a file is fixed; its codemod package is not (importing it, and the
# matchers it loads, cost 0.3 s): the rewrite is a plain transformer over libcst's positions


def _with_path(expr, path: list[str]):
    import libcst as cst

    for step in path:
        expr = cst.Attribute(value=expr, attr=cst.Name(step))
    return expr


@lru_cache(maxsize=None)
def _insert_submodule_path():
    """The transformer class :class:`InsertSubmodulePath` (made at its first use)."""
    import libcst as cst
    from libcst.metadata import PositionProvider

    class InsertSubmodulePath(cst.CSTTransformer):
        """Insert a submodule path into the receivers of the given reads.

        ``targets`` maps ``(row, column0, attr)`` (1-based row, 0-based character column of the start
        of the read, as libcst's :class:`~libcst.metadata.PositionProvider` reports it) to the path
        to insert, e.g. ``["model"]``.  ``applied`` collects the keys that were rewritten.
        """

        DESCRIPTION = "Insert the submodule path that leads to the inner model"
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self, targets: dict[tuple[int, int, str], list[str]]):
            super().__init__()
            self.targets = targets
            self.applied: set[tuple[int, int, str]] = set()

        def _key(self, node: cst.CSTNode, attr: str) -> tuple[int, int, str]:
            pos = self.get_metadata(PositionProvider, node).start
            return (pos.line, pos.column, attr)

        def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
            if not isinstance(original_node.attr, cst.Name):
                return updated_node
            key = self._key(original_node, original_node.attr.value)
            path = self.targets.get(key)
            if path is None:
                return updated_node
            self.applied.add(key)
            return updated_node.with_changes(value=_with_path(updated_node.value, path))

        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
            args = original_node.args
            if not (isinstance(original_node.func, cst.Name) and original_node.func.value == "getattr"
                    and len(args) == 2 and isinstance(args[1].value, cst.SimpleString)):
                return updated_node
            attr = ast.literal_eval(args[1].value.value)
            key = self._key(original_node, attr)
            path = self.targets.get(key)
            if path is None:
                return updated_node
            self.applied.add(key)
            first = updated_node.args[0]
            return updated_node.with_changes(args=[first.with_changes(value=_with_path(first.value, path)), *updated_node.args[1:]])

    return InsertSubmodulePath


def __getattr__(name: str):
    if name == "InsertSubmodulePath":
        return _insert_submodule_path()
    raise AttributeError(name)


@dataclass
class TransformSuccess:
    """The rewritten code (as libcst's codemod result of that name)."""

    code: str
    warning_messages: list = field(default_factory=list)


@dataclass
class TransformFailure:
    """libcst could not parse or rewrite the code."""

    error: BaseException


def transform_module(cmd, code: str):
    """Parse ``code`` with libcst, once, and rewrite it with the transformer ``cmd``:
    :class:`TransformSuccess` or :class:`TransformFailure` (a Ctrl-C is raised as it is)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    try:
        module = cst.parse_module(code)
        return TransformSuccess(code=MetadataWrapper(module, unsafe_skip_copy=True).visit(cmd).code)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001  (as libcst's codemod runner: any failure leaves the file)
        return TransformFailure(e)


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _line_starts(text: str) -> list[int]:
    """The offset of each line of ``text`` (lines end at "\n", "\r\n" or "\r", as for Python's
    tokenizer); one more entry than newlines."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` applied (1-based rows and character columns; lines end at "\n",
    "\r\n" or "\r" as for Python's tokenizer); the edits must not overlap."""
    starts = _line_starts(text)

    def offset(row: int, col: int) -> int:
        return starts[row - 1] + col - 1

    parts: list[str] = []
    at = len(text)
    for e in sorted(edits, key=lambda e: (e.row, e.column), reverse=True):
        a, b = offset(e.row, e.column), offset(e.end_row, e.end_column)
        parts += [text[b:at], e.content]
        at = a
    parts.append(text[:at])
    return "".join(reversed(parts))


@dataclass
class FileFix:
    """The outcome for one file: its old and new text, how many findings were fixed, or an error;
    ``changed``: the file no longer held the bytes its findings were computed on (nothing fixed)."""

    path: str
    old: str
    new: str
    fixed: list[Finding]
    error: str | None = None
    source: SourceFile | None = None
    changed: bool = False

    def diff(self, display: str) -> str:
        """A unified diff (``--- a/PATH`` / ``+++ b/PATH``) of the change; empty when none."""
        return "".join(difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True),
            fromfile=f"a/{display}", tofile=f"b/{display}"))


def _overlaps(a: Edit, b: Edit) -> bool:
    return (a.row, a.column) < (b.end_row, b.end_column) and (b.row, b.column) < (a.end_row, a.end_column) or (
        (a.row, a.column) == (b.row, b.column))


def _newlines(text: str) -> int:
    return len(_NEWLINE.findall(text))


_BLOCKS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _first_row(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators]) if decorators else node.lineno


def _region(tree: ast.Module, first: int, last: int) -> tuple[int, int]:
    """The rows of the smallest function or class (with its decorators) of ``tree`` that holds
    rows ``first``-``last`` whole, else of the top-level statements that hold them: whole lines
    of whole statements, which libcst can read on their own."""
    body = tree.body
    top = [s for s in body if _first_row(s) <= last and s.end_lineno >= first]  # type: ignore[operator]
    if not top:
        return first, last
    best = (min(first, _first_row(top[0])), max(last, top[-1].end_lineno))  # type: ignore[type-var]
    stmts = top if len(top) == 1 and best == (_first_row(top[0]), top[0].end_lineno) else []
    while stmts:
        [s] = stmts
        if isinstance(s, _BLOCKS):
            best = (_first_row(s), s.end_lineno)  # type: ignore[assignment]
        inner: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            inner += getattr(s, name, None) or []
        for h in getattr(s, "handlers", None) or []:
            inner += h.body
        for c in getattr(s, "cases", None) or []:
            inner += c.body
        stmts = [x for x in inner if _first_row(x) <= first and x.end_lineno >= last]  # type: ignore[operator]
        stmts = stmts[:1]
    return best


def _regions(tree: ast.Module, edits: list[Edit]) -> list[tuple[int, int, int, int, list[Edit]]]:
    """The regions of the fixed text that hold ``edits`` (rows in the old text), each whole
    functions, classes or top-level statements: ``(old_first, old_last, new_first, new_last,
    edits)``, in order, no two sharing a row."""
    spans = []  # (new_first, new_last, edit), with the line shift before the edit
    shift = 0
    for e in sorted(edits, key=lambda e: (e.row, e.column)):
        a = e.row + shift
        delta = _newlines(e.content) - (e.end_row - e.row)
        spans.append((a, e.end_row + shift + delta, e, shift))
        shift += delta
    wanted = sorted((*_region(tree, a, b), i) for i, (a, b, _, _) in enumerate(spans))
    merged: list[list] = []
    for a, b, i in wanted:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
            merged[-1][2].append(i)
        else:
            merged.append([a, b, [i]])
    out = []
    for a, b, idx in merged:
        before = [s for s in spans if s[1] < a]  # edits wholly above the region
        d_a = (before[-1][3] + _newlines(before[-1][2].content) - (before[-1][2].end_row - before[-1][2].row)) if before else 0
        inside = [spans[i] for i in sorted(idx)]
        last = inside[-1]
        d_b = last[3] + _newlines(last[2].content) - (last[2].end_row - last[2].row)
        out.append((a - d_a, b - d_b, a, b, [s[2] for s in inside]))
    return out


def _shift(e: Edit, rows: int) -> Edit:
    return Edit(e.content, e.row + rows, e.column, e.end_row + rows, e.end_column)


def _excerpt(text: str, regions, newline: str) -> tuple[str, dict[Edit, int]]:
    """The old text's ``regions`` as one module libcst can parse (an indented region is placed
    under ``if 1:``), and each edit's row shift into it."""
    starts = _line_starts(text)
    parts: list[str] = []
    rows = 0
    shifts: dict[Edit, int] = {}
    for oa, ob, _, _, edits in regions:
        chunk = text[starts[oa - 1]:starts[ob] if ob < len(starts) else len(text)]
        if chunk[:1] in (" ", "\t", "\f"):
            parts.append("if 1:" + newline)
            rows += 1
        if not chunk.endswith(("\n", "\r")):
            chunk += newline
        for e in edits:
            shifts[e] = rows - (oa - 1)
        parts.append(chunk)
        rows += ob - oa + 1
    return "".join(parts), shifts


def fix_file(path: str, findings: list[Finding], allowed: tuple[str, ...] = ("safe",),
             digest: str | None = None) -> FileFix:
    """Compute the fixed text of ``path`` for ``findings`` (those whose fix applicability is in
    ``allowed``; a fix whose edits overlap an earlier finding's is left for a later run).  Nothing
    is written.  ``digest``: the content hash of the bytes the findings were computed on; a file
    that no longer holds them comes back with ``changed`` and nothing fixed.  Errors (unreadable
    file, libcst failure, fixed text that does not parse) are returned in ``FileFix.error`` with
    ``new == old``.

    The edits are applied to the text, which must parse with ``ast``; libcst then parses the
    functions or classes (else top-level statements) that hold the edits, once: the submodule-path
    insertions are made on that parse by the libcst transformer :class:`InsertSubmodulePath` and
    must equal their edits' text, and the regions with other edits must read back."""
    try:
        src = read_source(Path(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        return FileFix(path, "", "", [], error=f"cannot read: {e}")
    if digest is not None and src.raw is not None and hashlib.blake2b(src.raw, digest_size=16).hexdigest() != digest:
        return FileFix(path, src.text, src.text, [], source=src, changed=True)
    chosen: list[Finding] = []
    taken: list[Edit] = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.fix is None or f.fix.applicability not in allowed or not f.fix.edits:
            continue
        if any(_overlaps(e, t) for e in f.fix.edits for t in taken):
            continue
        chosen.append(f)
        taken.extend(f.fix.edits)
    if not chosen:
        return FileFix(path, src.text, src.text, [], source=src)

    def failed(error: str) -> FileFix:
        return FileFix(path, src.text, src.text, [], error=error, source=src)

    new = apply_edits(src.text, taken)
    try:
        tree = ast.parse(new)
    except SyntaxError as e:  # never write text that does not parse
        return failed(f"fixed text would not parse ({e.msg}); file left unchanged")
    regions = _regions(tree, taken)
    del tree
    excerpt, shifts = _excerpt(src.text, regions, src.newline)
    # the submodule-path insertions, made through libcst and checked against their edits
    targets: dict[tuple[int, int, str], list[str]] = {}
    by_key: dict[tuple[int, int, str], Finding] = {}
    for f in chosen:
        if f.fix_data and "path" in f.fix_data:
            rows = shifts[f.fix.edits[0]]  # type: ignore[union-attr]
            key = (f.row + rows, f.column - 1, f.fix_data["attr"])
            targets[key] = list(f.fix_data["path"])
            by_key[key] = f
    if targets:
        cmd = _insert_submodule_path()(targets)
        result = transform_module(cmd, excerpt)
        kind = type(result).__name__  # also libcst's own codemod results, by name
        if kind == "TransformExit":
            raise KeyboardInterrupt  # libcst's codemod runner turns a Ctrl-C inside the transform into TransformExit
        if kind == "TransformFailure":
            return failed(f"libcst could not transform the file: {result.error}")
        if kind != "TransformSuccess":  # TransformSkip: the codemod declined the file
            return failed(f"libcst skipped the file ({getattr(result, 'skip_description', '')}); file left unchanged")
        made = result.code
        expected = apply_edits(excerpt, [_shift(e, shifts[e]) for f in by_key.values() for e in f.fix.edits])  # type: ignore[union-attr]
        if made != expected and made + expected[len(expected.rstrip("\r\n")):] != expected:
            # (libcst drops a final "\r" of CR-only files; the file's own ending is kept)
            return failed("libcst's output differs from the finding's edits in more than the "
                          "inserted text; file left unchanged")
        if set(targets) - cmd.applied:
            return failed("libcst's output differs from the finding's edits in more than the "
                          "inserted text; file left unchanged")
    if len(by_key) < len(chosen):  # other edits: libcst must read the fixed regions back
        import libcst as cst

        try:
            cst.parse_module(apply_edits(excerpt, [_shift(e, shifts[e]) for e in taken]))
        except cst.ParserSyntaxError:
            return failed("libcst cannot read the fixed text back; file left unchanged")
    return FileFix(path, src.text, new, chosen, source=src)


def write_fix(ff: FileFix) -> None:
    """Write ``ff.new`` over ``ff.path`` atomically, keeping encoding, BOM, line endings and mode,
    provided the file still holds the bytes ``ff`` was computed from, checked immediately before
    the replacement (else :class:`~pp_attr_lint.textio.ChangedOnDisk`, and nothing is written).
    Raises ``OSError``/``UnicodeEncodeError`` and leaves the old file then."""
    if ff.error or ff.changed or ff.new == ff.old or ff.source is None:
        return
    write_source_atomic(Path(ff.path), ff.new, ff.source)


@dataclass
class FixOutcome:
    """What fixing did: the findings fixed (or that the diff fixes), one message per file that
    could not be fixed or written (``path: why``), the files (shown paths) skipped because they
    changed during the run, and the unified diff of every file (``--diff``)."""

    fixed: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    diff_text: str = ""
    skipped: set[str] = field(default_factory=set)  # the paths of the files with an error or changed


def apply_fixes(findings: list[Finding], allowed: tuple[str, ...], diff: bool = False,
                digests: dict[str, str] | None = None) -> FixOutcome:
    """Fix every file that ``findings`` (a check's, sorted) have fixes of an ``allowed``
    applicability for: written in place (:func:`write_fix`), or with ``diff`` only shown.
    ``digests``: the content hash each file's findings were computed on (a check's
    ``CheckResult.digests``); a file that holds other bytes when its fix starts, or by the time
    it would be replaced, is left as it is and listed in ``changed``.  Raises nothing for a file
    it cannot fix or write."""
    out = FixOutcome()
    by_file: dict[str, list] = {}
    for f in findings:
        if f.fix is not None and f.fix.applicability in allowed:
            by_file.setdefault(f.path, []).append(f)
    for path, fs in by_file.items():
        ff = fix_file(path, fs, allowed, digest=(digests or {}).get(path))
        if ff.changed:
            out.changed.append(display_path(path))
            out.skipped.add(path)
            continue
        if ff.error:
            out.errors.append(f"{display_path(path)}: {ff.error}")
            out.skipped.add(path)
            continue
        if diff:
            out.diff_text += ff.diff(display_path(path))
            out.fixed += ff.fixed
            continue
        try:
            write_fix(ff)
        except ChangedOnDisk:
            out.changed.append(display_path(path))
            out.skipped.add(path)
            continue
        except (OSError, UnicodeEncodeError) as e:
            out.errors.append(f"{display_path(path)}: cannot write the fix: {e}")
            out.skipped.add(path)
            continue
        out.fixed += ff.fixed
    return out


MAX_ROUNDS = 10  # fix rounds of one run, as ruff's fix loop (which allows 100)


@dataclass
class FixRun(FixOutcome):
    """What :func:`fix_until_stable` did: :class:`FixOutcome` over every round, the latest check
    (its findings include the fixed ones only for ``--diff``) and the findings that remain."""

    result: object = None
    findings: list[Finding] = field(default_factory=list)
    rounds: int = 0


def fix_until_stable(result, recheck, allowed: tuple[str, ...], diff: bool = False,
                     max_rounds: int = MAX_ROUNDS) -> FixRun:
    """The fix loop: fix the files of ``result`` (a check's
    :class:`~pp_attr_lint.engine.check.CheckResult`), check again (``recheck()``: the same check
    once more, e.g. :func:`pp_attr_lint.engine.check.check` with the same arguments) and fix what
    it still finds fixable, until nothing is, a round fixes nothing, or ``max_rounds`` rounds
    have run (then an error says so).  ``diff`` runs one round and writes nothing.  A file that
    could not be fixed or that changed during the run is not fixed again.

    The findings that remain are the latest check's; without a round that wrote, those of
    ``result`` less the fixed ones (``diff``: all of them)."""
    run = FixRun(result=result)
    skip: set[str] = set()
    current = result
    remaining = list(result.findings)
    while True:
        todo = [f for f in current.findings if f.path not in skip]
        got = apply_fixes(todo, allowed, diff=diff, digests=getattr(current, "digests", None))
        run.rounds += 1
        run.fixed += got.fixed
        run.errors += got.errors
        run.changed += got.changed
        run.diff_text += got.diff_text
        skip |= got.skipped
        if diff:
            break
        fixed_ids = {id(f) for f in got.fixed}
        remaining = [f for f in current.findings if id(f) not in fixed_ids]
        if not got.fixed:
            break
        current = recheck()
        remaining = list(current.findings)
        if not any(f.fix is not None and f.fix.applicability in allowed and f.path not in skip for f in remaining):
            break
        if run.rounds >= max_rounds:
            run.errors.append(f"fixes did not converge after {max_rounds} rounds; "
                              f"{sum(1 for f in remaining if f.fix is not None)} fixable findings remain")
            break
    run.result = current
    run.findings = list(result.findings) if diff else remaining
    return run

"""Fixes: apply the findings' fixes, one file at a time, from each finding's edits.

One mechanism for every rule: the edits of the applicable fixes (those that do not overlap an
earlier one, as in ruff) are applied to the text, and the result is checked through libcst and ``ast`` (it
must parse with both).  Where a rule's fix is a transformation of
the syntax tree (the ``wrapper-attribute`` rules insert a submodule path into a receiver, which may
be parenthesized or span lines), the transformation is made with a libcst codemod and its output
must equal the edits' text.  Every other byte of the file is kept, including its encoding, BOM,
line endings and permission bits.  A file whose fixed text would not parse is left as it is and
reported.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.codemod import (CodemodContext, TransformExit, TransformFailure, TransformSuccess, VisitorBasedCodemodCommand,
                            transform_module)
from libcst.metadata import PositionProvider

from .model import Edit, Finding
from .textio import SourceFile, display_path, read_source, write_source_atomic


def _with_path(expr: cst.BaseExpression, path: list[str]) -> cst.BaseExpression:
    for step in path:
        expr = cst.Attribute(value=expr, attr=cst.Name(step))
    return expr


class InsertSubmodulePath(VisitorBasedCodemodCommand):
    """Insert a submodule path into the receivers of the given reads.

    ``targets`` maps ``(row, column0, attr)`` (1-based row, 0-based character column of the start
    of the read, as libcst's :class:`~libcst.metadata.PositionProvider` reports it) to the path
    to insert, e.g. ``["model"]``.  ``applied`` collects the keys that were rewritten.
    """

    DESCRIPTION = "Insert the submodule path that leads to the inner model"
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext, targets: dict[tuple[int, int, str], list[str]]):
        super().__init__(context)
        self.targets = targets
        self.applied: set[tuple[int, int, str]] = set()

    def _key(self, node: cst.CSTNode, attr: str) -> tuple[int, int, str]:
        pos = self.get_metadata(PositionProvider, node).start
        return (pos.line, pos.column, attr)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if not m.matches(original_node, m.Attribute(attr=m.Name())):
            return updated_node
        key = self._key(original_node, original_node.attr.value)
        path = self.targets.get(key)
        if path is None:
            return updated_node
        self.applied.add(key)
        return updated_node.with_changes(value=_with_path(updated_node.value, path))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not m.matches(original_node, m.Call(func=m.Name("getattr"), args=[m.Arg(), m.Arg(value=m.SimpleString())])):
            return updated_node
        attr = ast.literal_eval(original_node.args[1].value.value)  # type: ignore[attr-defined]
        key = self._key(original_node, attr)
        path = self.targets.get(key)
        if path is None:
            return updated_node
        self.applied.add(key)
        first = updated_node.args[0]
        return updated_node.with_changes(args=[first.with_changes(value=_with_path(first.value, path)), *updated_node.args[1:]])


_NEWLINE = re.compile(r"\r\n|\r|\n")


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` applied (1-based rows and character columns; lines end at "\n",
    "\r\n" or "\r" as for Python's tokenizer).  Used to check libcst's output byte for byte."""
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(row: int, col: int) -> int:
        return starts[row - 1] + col - 1

    out = text
    for e in sorted(edits, key=lambda e: (e.row, e.column), reverse=True):
        a, b = offset(e.row, e.column), offset(e.end_row, e.end_column)
        out = out[:a] + e.content + out[b:]
    return out


@dataclass
class FileFix:
    """The outcome for one file: its old and new text, how many findings were fixed, or an error."""

    path: str
    old: str
    new: str
    fixed: list[Finding]
    error: str | None = None
    source: SourceFile | None = None

    def diff(self, display: str) -> str:
        """A unified diff (``--- a/PATH`` / ``+++ b/PATH``) of the change; empty when none."""
        return "".join(difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True),
            fromfile=f"a/{display}", tofile=f"b/{display}"))


def _overlaps(a: Edit, b: Edit) -> bool:
    return (a.row, a.column) < (b.end_row, b.end_column) and (b.row, b.column) < (a.end_row, a.end_column) or (
        (a.row, a.column) == (b.row, b.column))


def fix_file(path: str, findings: list[Finding], allowed: tuple[str, ...] = ("safe",)) -> FileFix:
    """Compute the fixed text of ``path`` for ``findings`` (those whose fix applicability is in
    ``allowed``; a fix whose edits overlap an earlier finding's is left for a later run).  Nothing
    is written.  Errors (unreadable file, libcst failure, fixed text that does not parse) are
    returned in ``FileFix.error`` with ``new == old``."""
    try:
        src = read_source(Path(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        return FileFix(path, "", "", [], error=f"cannot read: {e}")
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
    # the submodule-path insertions, made through libcst and checked against their edits
    targets: dict[tuple[int, int, str], list[str]] = {}
    by_key: dict[tuple[int, int, str], Finding] = {}
    for f in chosen:
        if f.fix_data and "path" in f.fix_data:
            key = (f.row, f.column - 1, f.fix_data["attr"])
            targets[key] = list(f.fix_data["path"])
            by_key[key] = f
    if targets:
        cmd = InsertSubmodulePath(CodemodContext(filename=path), targets)
        result = transform_module(cmd, src.text)
        if isinstance(result, TransformExit):
            raise KeyboardInterrupt  # libcst's runner turns a Ctrl-C inside the transform into TransformExit
        if isinstance(result, TransformFailure):
            return FileFix(path, src.text, src.text, [], error=f"libcst could not transform the file: {result.error}", source=src)
        if not isinstance(result, TransformSuccess):  # TransformSkip: the codemod declined the file
            return FileFix(path, src.text, src.text, [], source=src,
                           error=f"libcst skipped the file ({getattr(result, 'skip_description', '')}); file left unchanged")
        made = result.code
        expected = apply_edits(src.text, [e for f in by_key.values() for e in f.fix.edits])  # type: ignore[union-attr]
        if made != expected and made + expected[len(expected.rstrip("\r\n")):] != expected:
            # (libcst drops a final "\r" of CR-only files; the file's own ending is kept below)
            return FileFix(path, src.text, src.text, [], source=src,
                           error="libcst's output differs from the finding's edits in more than the "
                                 "inserted text; file left unchanged")
        unapplied = set(targets) - cmd.applied
        chosen = [f for f in chosen if not (f.fix_data and "path" in f.fix_data)
                  or (f.row, f.column - 1, f.fix_data["attr"]) not in unapplied]
    new = apply_edits(src.text, [e for f in chosen for e in f.fix.edits])  # type: ignore[union-attr]
    try:
        ast.parse(new)
    except SyntaxError as e:  # never write text that does not parse
        return FileFix(path, src.text, src.text, [], error=f"fixed text would not parse ({e.msg}); file left unchanged", source=src)
    try:
        cst.parse_module(new)
    except cst.ParserSyntaxError:
        return FileFix(path, src.text, src.text, [], error="libcst cannot read the fixed text back; file left unchanged", source=src)
    return FileFix(path, src.text, new, chosen, source=src)


def write_fix(ff: FileFix) -> None:
    """Write ``ff.new`` over ``ff.path`` atomically, keeping encoding, BOM, line endings and mode.
    Raises ``OSError``/``UnicodeEncodeError`` and leaves the old file then."""
    if ff.error or ff.new == ff.old or ff.source is None:
        return
    write_source_atomic(Path(ff.path), ff.new, ff.source)


def apply_fixes(findings: list[Finding], allowed: tuple[str, ...], diff: bool = False) -> tuple[list, list, str]:
    """Fix every file that ``findings`` (a check's, sorted) have fixes of an ``allowed``
    applicability for: written in place (:func:`write_fix`), or with ``diff`` only shown.

    Returns ``(fixed, errors, diff_text)``: the findings fixed (or that the diff fixes), one
    message per file that could not be fixed or written (``path: why``), and the unified diff of
    every file (empty unless ``diff``).  Raises nothing for a file it cannot fix or write."""
    fixed: list[Finding] = []
    fix_errors: list[str] = []
    diff_text = ""
    by_file: dict[str, list] = {}
    for f in findings:
        if f.fix is not None and f.fix.applicability in allowed:
            by_file.setdefault(f.path, []).append(f)
    for path, fs in by_file.items():
        ff = fix_file(path, fs, allowed)
        if ff.error:
            fix_errors.append(f"{display_path(path)}: {ff.error}")
            continue
        if diff:
            diff_text += ff.diff(display_path(path))
            fixed += ff.fixed
            continue
        try:
            write_fix(ff)
        except (OSError, UnicodeEncodeError) as e:
            fix_errors.append(f"{display_path(path)}: cannot write the fix: {e}")
            continue
        fixed += ff.fixed
    return fixed, fix_errors, diff_text

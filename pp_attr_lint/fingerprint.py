"""Fingerprints of findings: what stays the same when the lines around a finding move.

A finding's fingerprint hashes its rule (the code, or the name of a finding without one), the
text of its line with the whitespace collapsed and the comment left out, the text it points at
on that line, and the names of the classes and functions that enclose it (``Model.forward``),
followed by an occurrence index among the findings of the same file that hash alike (in line
order), so that two identical lines are two fingerprints.  The line number and the file's
path are not part of it: a line moved within its function, or a file renamed, keeps its
fingerprint (the baseline of ``check --baseline-commit`` matches files across renames itself).
SARIF's ``partialFingerprints`` carry it under :data:`SARIF_KEY`.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import Counter

from .model import Finding
from .noqa import physical_lines

SARIF_KEY = "ppAttrLint/v1"


def _comment_starts(text: str) -> dict[int, int]:
    """line -> the column where its comment starts (tokenized: a ``#`` in a string is none)."""
    out: dict[int, int] = {}
    if "#" not in text:
        return out
    try:
        for t in tokenize.generate_tokens(io.StringIO(text).readline):
            if t.type == tokenize.COMMENT:
                out[t.start[0]] = t.start[1]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return out


def _scopes(text: str) -> list[tuple[int, int, str]]:
    """``(first line, last line, qualified name)`` of every class and function of ``text``
    (decorators included); ``[]`` when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out.append((first, child.end_lineno or child.lineno, name))
                walk(child, name)
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def _enclosing(scopes: list[tuple[int, int, str]], row: int) -> str:
    """The innermost scope holding line ``row`` ("" at module level)."""
    best = ""
    for first, last, name in scopes:
        if first <= row <= last and len(name) > len(best):
            best = name
    return best


def _normalized(line: str, comment: int | None) -> str:
    return " ".join((line[:comment] if comment is not None else line).split())


def fingerprints(findings: list[Finding], sources: dict[str, str]) -> list[str]:
    """The fingerprint of each of ``findings`` (same order; 16 bytes of blake2b, hex, then
    ``:N``, the occurrence index).  ``sources``: path -> text; a finding whose file is not
    there is fingerprinted from its rule and message alone (a file that could not be read)."""
    per_file: dict[str, tuple[list[str], dict[int, int], list]] = {}
    base: list[str] = []
    for f in findings:
        text = sources.get(f.path)
        if text is None:
            key = f"{f.code or f.name}\0{f.message}"
        else:
            if f.path not in per_file:
                per_file[f.path] = ([x.rstrip("\r\n") for x in physical_lines(text)], _comment_starts(text),
                                    _scopes(text))
            lines, comments, scopes = per_file[f.path]
            line = lines[f.row - 1] if 0 < f.row <= len(lines) else ""
            end = f.end_column - 1 if f.end_row == f.row else len(line)
            span = line[f.column - 1:max(end, f.column - 1)] if f.column > 0 else ""
            key = "\0".join((f.code or f.name, _normalized(line, comments.get(f.row)),
                             " ".join(span.split()), _enclosing(scopes, f.row)))
        base.append(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest())
    # occurrence index, in line order within each file
    order = sorted(range(len(findings)), key=lambda i: (findings[i].path, findings[i].row, findings[i].column))
    seen: Counter = Counter()
    out = [""] * len(findings)
    for i in order:
        k = (findings[i].path, base[i])
        out[i] = f"{base[i]}:{seen[k]}"
        seen[k] += 1
    return out


def read_sources(findings: list[Finding], known: dict[str, str] | None = None) -> dict[str, str]:
    """path -> text of the files of ``findings``: ``known`` ones as given, the others read (a file
    that cannot be read or decoded is left out)."""
    from .textio import read_source

    out = dict(known or {})
    for f in findings:
        if f.path not in out:
            try:
                out[f.path] = read_source(f.path).text
            except (OSError, UnicodeDecodeError, SyntaxError):
                pass
    return out



"""``# noqa`` comments: reading them, checking their codes, and adding them (``check --add-noqa``).

The semantics are ruff's and flake8's: ``# noqa`` alone suppresses every finding on its line;
``# noqa: CODE[, CODE...]`` suppresses the findings whose rule code starts with one of the codes, so a
prefix selects its rules (``PPA`` every PPA rule, ``PPA0`` PPA001..PPA003, ``PPA10`` PPA101..PPA103).
Codes are separated by commas (or by spaces, between codes that end in a digit), case does not
matter, and text after the codes is a free comment (``# noqa: E402  (why)``).

Where a ``# noqa`` goes: a finding's line (its ``noqa_row``), unless that line ends inside a
string that spans lines or is continued with a backslash, where no comment can be written; then
the line where that string or continuation ends (as ruff).  :func:`comment_rows` computes that
placement; the reader (:func:`suppressed`) and the writer (:func:`add_noqa`) both use it, so a
comment added by ``--add-noqa`` is always one that suppresses the finding.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

# the codes: the first may be a prefix of letters only; after a comma any code or prefix; after
# spaces only a code that ends in digits (so `# noqa: E402 the reason` ends at E402)
NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*|\s+[A-Z]+[0-9]+(?![A-Z0-9]))*))?",
    re.IGNORECASE)
ALL = "*"  # the code set of a bare `# noqa`


@dataclass(frozen=True)
class Directive:
    """One ``# noqa`` comment: its line, the codes it lists (``{"*"}`` when bare, upper case), and
    where in the line (0-based character columns) its code list ends, for adding a code after it
    (``None`` for a bare one)."""

    row: int
    codes: frozenset[str]
    codes_end: int | None


def physical_lines(text: str) -> list[str]:
    """The lines of ``text`` as the tokenizer numbers them, line endings kept: split after each
    ``\\n`` only (``str.splitlines`` also splits at form feeds and other separators, which
    Python source may hold inside a line)."""
    return io.StringIO(text).readlines()


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``text``; ``None`` when it does not tokenize."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _comments(text: str) -> list[tokenize.TokenInfo] | None:
    """The comment tokens of ``text``; ``None`` when it does not tokenize."""
    toks = _tokens(text)
    return None if toks is None else [t for t in toks if t.type == tokenize.COMMENT]


def scan(text: str) -> tuple[dict[int, Directive], dict[int, int]]:
    """:func:`directives` and :func:`comment_rows` of ``text``, from one tokenization."""
    if "noqa" not in text.lower():
        return {}, {}
    toks = _tokens(text)
    if toks is None:
        return {}, {}
    return _directives(toks), _comment_rows(text, toks)


def directives(text: str) -> dict[int, Directive]:
    """The ``# noqa`` comments of a file: line -> :class:`Directive`.  Uses :mod:`tokenize`, so that
    ``# noqa`` inside a string does not count; a file that does not tokenize has none."""
    if "noqa" not in text.lower():
        return {}
    toks = _tokens(text)
    return {} if toks is None else _directives(toks)


def _directives(toks: list[tokenize.TokenInfo]) -> dict[int, Directive]:
    out: dict[int, Directive] = {}
    for tok in toks:
        if tok.type != tokenize.COMMENT:
            continue
        m = NOQA.search(tok.string)
        if m:
            codes = m.group("codes")
            if codes:
                found = frozenset(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c)
                end = tok.start[1] + m.end("codes")
            else:
                found, end = frozenset((ALL,)), None
            out[tok.start[0]] = Directive(tok.start[0], found, end)
    return out


def noqa_map(text: str) -> dict[int, frozenset[str]]:
    """The codes of every ``# noqa`` of a file: line -> codes (``{"*"}`` for a bare ``# noqa``)."""
    return {row: d.codes for row, d in directives(text).items()}


def covers(codes, code: str | None) -> bool:
    """Whether a ``# noqa`` listing ``codes`` suppresses a finding of rule ``code``: a bare one
    always, else when ``code`` starts with one of the codes (a prefix selects its rules)."""
    if ALL in codes:
        return True
    return code is not None and any(code.upper().startswith(c) for c in codes)


def comment_rows(text: str) -> dict[int, int]:
    """Lines where no comment can be written, mapped to the line where the ``# noqa`` for them
    goes: a line that ends inside a string spanning lines goes to the string's last line, a line
    continued with a backslash to the line the continuation ends on (chains followed).  Lines not
    in the map take their own ``# noqa``.  A file that does not tokenize gives ``{}``."""
    toks = _tokens(text)
    return {} if toks is None else _comment_rows(text, toks)


def _comment_rows(text: str, toks: list[tokenize.TokenInfo]) -> dict[int, int]:
    out: dict[int, int] = {}
    lines = physical_lines(text)
    in_string: set[int] = set()
    fstart: list[int] = []  # rows of open f-strings (Python 3.12 tokenizes them in pieces)
    for t in toks:
        name = tokenize.tok_name.get(t.type, "")
        if name == "FSTRING_START":
            fstart.append(t.start[0])
            continue
        if name == "FSTRING_END" and fstart:
            start = fstart.pop()
            if not fstart and t.end[0] > start:
                for r in range(start, t.end[0]):
                    out[r] = t.end[0]
                    in_string.add(r)
            continue
        if t.type == tokenize.STRING and t.end[0] > t.start[0] and not fstart:
            for r in range(t.start[0], t.end[0]):
                out[r] = t.end[0]
                in_string.add(r)
    for i, line in enumerate(lines, start=1):
        if i not in in_string and line.rstrip("\r\n").endswith("\\"):
            out[i] = i + 1
    for r in sorted(out, reverse=True):  # follow chains: a continuation onto a string's first line
        nxt = out[r]
        while nxt in out and out[nxt] != nxt:
            nxt = out[nxt]
        out[r] = nxt
    return out


# a triple-quoted f-string: a finding inside one of its replacement fields lies in a string
_LONG_FSTRING = re.compile(r"(?<!\w)(?:[rRbB]?[fF]|[fF][rRbB])(?:'''|\"\"\")")


def _line(text: str, row: int) -> str:
    """Line ``row`` (1-based) of ``text``, without its ending ("" past the end), numbered as
    :func:`physical_lines` numbers them."""
    start = 0
    for _ in range(row - 1):
        nl = text.find("\n", start)
        if nl < 0:
            return ""
        start = nl + 1
    end = text.find("\n", start)
    return (text[start:] if end < 0 else text[start:end]).rstrip("\r")


def could_be_suppressed(text: str, row: int) -> bool:
    """A fast test, without tokenizing: false when no ``# noqa`` can apply to line ``row`` --
    the line has no ``noqa``, and it can neither end inside a string that spans lines (it opens
    no triple quote, and the file has no triple-quoted f-string a finding could lie in) nor be
    continued with a backslash."""
    line = _line(text, row)
    if "noqa" in line.lower():
        return True
    if line.endswith("\\") or '"""' in line or "'''" in line:
        return "noqa" in text.lower()
    return bool(_LONG_FSTRING.search(text)) and "noqa" in text.lower()


def suppressed(text: str, row: int, code: str | None, marks: dict[int, Directive] | None = None,
               rows: dict[int, int] | None = None) -> bool:
    """Whether a finding of ``code`` at line ``row`` (its ``noqa_row``) of ``text`` is suppressed by
    a ``# noqa`` on that line or where :func:`comment_rows` places it.  ``marks`` / ``rows``:
    :func:`directives` / :func:`comment_rows` of ``text`` when already computed.  Files are
    tokenized only when :func:`could_be_suppressed` says a ``# noqa`` may apply."""
    if not could_be_suppressed(text, row):
        return False
    if marks is None or rows is None:
        marks, rows = scan(text)
    if not marks:
        return False
    for r in {row, rows.get(row, row)}:
        d = marks.get(r)
        if d is not None and covers(d.codes, code):
            return True
    return False


def letters(code: str) -> str:
    """The letters a rule code starts with (``PPA`` of ``PPA101``)."""
    m = re.match(r"[A-Za-z]*", code)
    return m.group(0).upper() if m else ""


def unknown_codes(text: str, known: set[str]) -> list[tuple[int, str]]:
    """``(line, code)`` of each code in the ``# noqa`` comments of ``text`` that selects none of the
    ``known`` rule codes while it looks like one of them: its letters are those of a known code
    or a prefix of them (``PPA999``, ``PPX`` is not: ``E501`` and ``F401`` belong to other linters,
    and are left alone as ruff leaves its ``external`` codes)."""
    known = {k.upper() for k in known}
    ours = {letters(k) for k in known}
    out = []
    for row, d in sorted(directives(text).items()):
        for c in sorted(d.codes - {ALL}):
            if any(k.startswith(c) for k in known):
                continue
            if any(x.startswith(letters(c)) for x in ours) and letters(c):
                out.append((row, c))
    return out


def add_noqa(text: str, wanted: dict[int, set[str]]) -> tuple[str, int]:
    """``text`` with ``# noqa: CODE`` comments for ``wanted`` (finding line -> the codes to
    suppress there), and how many lines got a comment or a code.

    Each line's codes are written where :func:`comment_rows` places them; an existing ``# noqa:
    X`` there gets ``, CODE`` after its codes, a line with another comment gets ``  # noqa:
    CODE`` after it, any other line gets it before its line ending; codes it already covers are
    not added.  No other character changes, line endings included.  Raises ``ValueError`` when
    the text does not tokenize (no comment can be placed safely)."""
    if _comments(text) is None:
        raise ValueError("the file does not tokenize")
    rows = comment_rows(text)
    marks = directives(text)
    per_row: dict[int, set[str]] = {}
    for row, codes in wanted.items():
        target = rows.get(row, row)
        for code in codes:
            d = marks.get(target)
            if d is None or not covers(d.codes, code):
                per_row.setdefault(target, set()).add(code.upper())
    if not per_row:
        return text, 0
    lines = physical_lines(text)
    changed = 0
    for row, codes in sorted(per_row.items()):
        if not 0 < row <= len(lines):
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        new = ", ".join(sorted(codes))
        d = marks.get(row)
        if d is not None and d.codes_end is not None:
            body = body[:d.codes_end] + ", " + new + body[d.codes_end:]
        else:
            body = body + ("  " if body.strip() else "") + f"# noqa: {new}"
        lines[row - 1] = body + ending
        changed += 1
    return "".join(lines), changed


@dataclass
class NoqaOutcome:
    """What :func:`write_noqa` did: the lines that got a comment or a code, one message per file
    that could not be read or written (``path: why``), the files (shown paths) left because
    they changed during the run, and the findings no ``# noqa`` can suppress (no rule code:
    a file that cannot be read or parsed)."""

    lines: int = 0
    errors: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    left: list = field(default_factory=list)


def write_noqa(findings: list, digests: dict[str, str] | None = None) -> NoqaOutcome:
    """``check --add-noqa``: add the ``# noqa`` of every finding with a rule code to its file
    (:func:`add_noqa` at the finding's ``noqa_row``), written atomically as ``--fix`` writes
    (:func:`pp_attr_lint.textio.write_source_atomic`: encoding, BOM, line endings and mode kept).

    A file is written only when the new text parses to the same syntax tree as the old (only
    comments changed) and suppresses every finding it was written for; only when it still holds
    the bytes its findings were computed on (``digests``: path -> content hash, a check's
    ``CheckResult.digests``), checked when it is read and again before it is replaced.  Raises
    nothing for a file it cannot change."""
    import ast
    import hashlib
    from pathlib import Path

    from .textio import ChangedOnDisk, display_path, read_source, write_source_atomic

    out = NoqaOutcome()
    wanted: dict[str, dict[int, set[str]]] = {}
    for f in findings:
        if f.code is None:
            out.left.append(f)
            continue
        wanted.setdefault(f.path, {}).setdefault(f.noqa_row or f.row, set()).add(f.code)
    for path, rows in wanted.items():
        shown = display_path(path)
        try:
            src = read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError) as e:
            out.errors.append(f"{shown}: cannot read: {e}")
            continue
        digest = (digests or {}).get(path)
        if digest and src.raw is not None and hashlib.blake2b(src.raw, digest_size=16).hexdigest() != digest:
            out.changed.append(shown)
            continue
        try:
            new, n = add_noqa(src.text, rows)
            same = n == 0 or ast.dump(ast.parse(new)) == ast.dump(ast.parse(src.text))
        except (ValueError, SyntaxError) as e:
            out.errors.append(f"{shown}: cannot add noqa: {e}")
            continue
        if not same or not all(suppressed(new, r, c) for r, codes in rows.items() for c in codes):
            out.errors.append(f"{shown}: cannot add noqa: the comments would change the code or not suppress "
                              "the findings; file left unchanged")
            continue
        if not n:
            continue
        try:
            write_source_atomic(Path(path), new, src)
        except ChangedOnDisk:
            out.changed.append(shown)
            continue
        except (OSError, UnicodeEncodeError) as e:
            out.errors.append(f"{shown}: cannot write: {e}")
            continue
        out.lines += n
    return out

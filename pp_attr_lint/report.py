"""Reports: findings as text (rich), ruff-compatible JSON, concise lines, GitHub annotations, SARIF.

Every function takes the sorted findings and returns or prints text; none of them changes files.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import TextIO

from . import __version__
from .model import Finding, NotJudged, applied_fix, help_text, hidden_fix_note, is_hidden_fix
from .rule_api import Rule
from .textio import display_path
from .unjudged import describe, summary_line

FORMATS = ("text", "json", "concise", "github", "sarif")


def found_line(remaining: int, fixed: int = 0, incomplete: bool = False) -> str:
    """The summary line of the text and concise reports: ``Found 3 errors (1 fixed, 2
    remaining).``, ``Found 1 error.`` or ``All checks passed!``; with ``incomplete`` (an engine the
    checked code imports was not found, so its reads were not judged) never the last."""
    total = remaining + fixed
    if fixed:
        return f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {remaining} remaining)."
    if remaining:
        return f"Found {remaining} error{'s' if remaining != 1 else ''}."
    return "No finding, but the checks are incomplete (see the error below)." if incomplete else "All checks passed!"


def not_judged_lines(records: list[NotJudged]) -> str:
    """One line per read not judged: ``path:row:col: CODE not judged (reason): detail``."""
    return "".join(f"{display_path(n.path)}:{n.row}:{n.column}: {n.code} not judged ({n.reason}): {n.detail}\n"
                   for n in records)


def _fix_json(f: Finding, allowed: tuple[str, ...]) -> dict | None:
    fix = applied_fix(f, allowed)
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.row, "column": e.column},
                "end_location": {"row": e.end_row, "column": e.end_column},
            }
            for e in fix.edits
        ],
    }


def to_json(findings: list[Finding], not_judged: list[NotJudged] = (), allowed: tuple[str, ...] = ("safe",)) -> str:
    """Ruff's JSON output format: a list of objects with ``code``, ``message``, ``filename``,
    ``location``/``end_location`` (``row``, ``column``; 1-based), ``fix``, ``url``, ``noqa_row``;
    plus ``name``, ``explanation`` (the resolution chain) and ``help`` (the advice: the fix's
    message, else the rule's).  ``fix`` is present only when ``check --fix`` with the fix
    applicabilities ``allowed`` (:func:`pp_attr_lint.model.fix_applicabilities`) would apply it;
    an unsafe fix left out is named in ``help`` (:func:`pp_attr_lint.model.help_text`).  Each read no rule could judge in
    ``not_judged`` (the CLI passes them with ``--show-unresolved``) follows the findings as an object with ``"name": "not-judged"``, ``"code": null``, the rule
    in ``"rule"``, ``"reason"`` (a code of :data:`pp_attr_lint.unjudged.REASONS`), ``"detail"`` and
    ``"dependency"`` (the file that caused it, or ``null``)."""
    out = []
    for f in findings:
        out.append({
            "cell": None,
            "code": f.code,
            "end_location": {"row": f.end_row, "column": f.end_column},
            "filename": f.path,
            "fix": _fix_json(f, allowed),
            "location": {"row": f.row, "column": f.column},
            "message": f.message,
            "noqa_row": f.noqa_row,
            "url": f.url,
            "name": f.name,
            "explanation": f.explanation,
            "help": help_text(f, allowed),
            **({"witness": f.witness} if f.witness else {}),
        })
    for n in not_judged:
        out.append({
            "cell": None,
            "code": None,
            "end_location": {"row": n.row, "column": n.column},
            "filename": n.path,
            "fix": None,
            "location": {"row": n.row, "column": n.column},
            "message": f"not judged ({n.reason}): {n.detail}",
            "noqa_row": n.row,
            "url": None,
            "name": "not-judged",
            "rule": n.code,
            "reason": n.reason,
            "detail": n.detail,
            "dependency": n.dep_path,
        })
    return json.dumps(out, indent=2) + "\n"


def _label(f: Finding) -> str:
    return f.code if f.code else f.name


def _fixable(f: Finding, allowed: tuple[str, ...]) -> bool:
    """Whether ``--fix`` with the applicabilities ``allowed`` applies ``f``'s fix (a ``safe`` one;
    an ``unsafe`` one with ``--unsafe-fixes``), as ruff marks a finding ``[*]``."""
    return applied_fix(f, allowed) is not None


def to_concise(findings: list[Finding], allowed: tuple[str, ...] = ("safe",)) -> str:
    """One line per finding: ``path:row:col: CODE message``, with ``[*]`` after the code when
    ``--fix`` with the applicabilities ``allowed`` fixes it."""
    return "".join(
        f"{display_path(f.path)}:{f.row}:{f.column}: {_label(f)}{' [*]' if _fixable(f, allowed) else ''} {f.message}\n"
        for f in findings
    )


def gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands (``::error title=...,file=...,line=...::message``), which
    the runner turns into annotations on the pull request's diff."""
    lines = []
    for f in findings:
        props = (f"title={_gh_escape_prop('pp-attr-lint (' + _label(f) + ')')},file={_gh_escape_prop(display_path(f.path))},"
                 f"line={f.row},col={f.column},endLine={f.end_row},endColumn={f.end_column}")
        lines.append(f"::error {props}::{gh_escape_data(_label(f) + ' ' + f.message)}\n")
    return "".join(lines)


def _uri(path: str) -> str:
    """A SARIF ``uri``: relative to the working directory when below it, else a ``file:`` URI;
    percent-encoded either way (a space or ``#`` in a path must not break the URI)."""
    from pathlib import Path
    from urllib.parse import quote

    rel = display_path(path)
    return quote(rel.replace(os.sep, "/")) if not os.path.isabs(rel) else Path(path).as_uri()


PROJECT_URL = "https://github.com/OWNER/pp-attr-lint"  # as pyproject.toml's [project.urls] Homepage


def project_url() -> str:
    """The project's home page: the ``Homepage`` of the installed distribution's ``Project-URL``s
    (pyproject.toml's ``[project.urls]``), else :data:`PROJECT_URL`."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        for entry in metadata("pp-attr-lint").get_all("Project-URL") or ():
            label, _, url = entry.partition(",")
            if label.strip().lower() == "homepage" and url.strip():
                return url.strip()
    except (ImportError, PackageNotFoundError, OSError, ValueError):
        pass
    return PROJECT_URL


def to_sarif(findings: list[Finding], rules: list[Rule], not_judged: list[NotJudged] = (),
             sources: dict[str, str] | None = None, fingerprints: list[str] | None = None,
             allowed: tuple[str, ...] = ("safe",)) -> str:
    """SARIF 2.1.0: one run, the tool (``informationUri``: :func:`project_url`) and its rules as
    ``reportingDescriptor``s (with their documentation), one result per finding with its region,
    its fix as ``fixes[].artifactChanges[].replacements`` and its fingerprint
    (:mod:`pp_attr_lint.fingerprint`) in ``partialFingerprints`` under ``ppAttrLint/v1``, so that
    code scanning follows a finding across commits; each read no rule could judge as a
    ``note``-level ``invocations[0].toolExecutionNotifications`` entry (descriptor id
    ``not-judged/REASON``, the rule in ``associatedRule``).  ``sources``: path -> text of files
    already read; ``fingerprints``: those of ``findings`` when computed over more findings (a
    ``--baseline-commit`` run's), else they are computed here.  A result's ``fixes`` are there only
    when ``check --fix`` with the fix applicabilities ``allowed`` would apply them (as the JSON's
    ``fix``); an unsafe fix left out is named in the result's ``properties.help``.
    Schema: https://json.schemastore.org/sarif-2.1.0.json"""
    from . import fingerprint

    if fingerprints is None:
        fingerprints = fingerprint.fingerprints(findings, fingerprint.read_sources(findings, sources))
    rule_index = {r.code: i for i, r in enumerate(rules)}
    descriptors = []
    for r in rules:
        d = {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": (r.docs.get("what_it_does") or r.summary).strip()},
            "help": {"text": _rule_doc_text(r), "markdown": rule_markdown(r)},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fixApplicability": r.fix_applicability or "none"},
        }
        if r.url:
            d["helpUri"] = r.url
        descriptors.append(d)
    results = []
    for f, fp in zip(findings, fingerprints):
        region = {"startLine": f.row, "startColumn": f.column, "endLine": f.end_row, "endColumn": f.end_column}
        loc = {"physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}, "region": region}}
        res = {
            "ruleId": f.code or f.name,
            "level": "error",
            "message": {"text": f.message},
            "locations": [loc],
            "partialFingerprints": {fingerprint.SARIF_KEY: fp},
        }
        if f.code in rule_index:
            res["ruleIndex"] = rule_index[f.code]
        if f.explanation:
            res["properties"] = {"explanation": f.explanation}
        if f.witness:
            res.setdefault("properties", {})["witness"] = f.witness
        fix = applied_fix(f, allowed)
        if fix is None and is_hidden_fix(f, allowed):
            res.setdefault("properties", {})["help"] = help_text(f, allowed)
        if fix is not None:
            res["fixes"] = [{
                "description": {"text": fix.message},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path)},
                    "replacements": [{
                        "deletedRegion": {"startLine": e.row, "startColumn": e.column,
                                          "endLine": e.end_row, "endColumn": e.end_column},
                        "insertedContent": {"text": e.content},
                    } for e in fix.edits],
                }],
            }]
        results.append(res)
    run: dict = {
        "tool": {"driver": {"name": "pp-attr-lint", "version": __version__, "informationUri": project_url(),
                            "rules": descriptors}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if not_judged:
        notes = []
        for n in not_judged:
            note = {
                "level": "note",
                "message": {"text": f"not judged ({n.reason}: {describe(n.reason)}): {n.detail}"},
                "descriptor": {"id": f"not-judged/{n.reason}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(n.path)},
                                                    "region": {"startLine": n.row, "startColumn": n.column}}}],
                "properties": {"reason": n.reason, "detail": n.detail},
            }
            if n.code in rule_index:
                note["associatedRule"] = {"id": n.code, "index": rule_index[n.code]}
            notes.append(note)
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": notes}]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    }
    return json.dumps(doc, indent=2) + "\n"


def _rule_doc_text(r: Rule) -> str:
    return rule_markdown(r)


def rule_markdown(r: Rule) -> str:
    """A rule's documentation in ruff's shape: What it does / Why is this bad? / Example / Fix
    safety / References (from its folder's ``README.md`` or a rule file's ``docs``)."""
    d = r.docs
    parts = [f"# {r.name} ({r.code})", ""]
    if r.fix_applicability:
        parts += [f"Fix is sometimes available ({r.fix_applicability}).", ""]
    parts += ["## What it does", (d.get("what_it_does") or r.summary).strip(), ""]
    if d.get("why_bad"):
        parts += ["## Why is this bad?", d["why_bad"].strip(), ""]
    if d.get("example"):
        example = d["example"].rstrip()
        parts += ["## Example"] + ([example] if "```" in example else ["```python", example, "```"]) + [""]
    if d.get("fix"):
        parts += ["## Fix safety", d["fix"].strip(), ""]
    if d.get("references"):
        parts += ["## References", d["references"].strip(), ""]
    if r.attributes:
        parts += ["## Watched attributes", ", ".join(f"`{a}`" for a in r.attributes), ""]
    return "\n".join(parts)


def statistics(findings: list[Finding], allowed: tuple[str, ...] = ("safe",),
               not_judged: list[NotJudged] = ()) -> str:
    """Counts per code, like ``ruff --statistics``: ``count  CODE  [*]  name`` (``[*]`` all of
    them fixable by ``--fix`` with the applicabilities ``allowed``, ``[-]`` some); then, for
    ``not_judged``, a count per code and reason: ``count  CODE  not judged (reason)``."""
    counts = Counter((_label(f), f.name) for f in findings)
    fixable = Counter(_label(f) for f in findings if _fixable(f, allowed))
    lines = []
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable.get(code) == n else ("[-]" if fixable.get(code) else "[ ]")
        lines.append(f"{n:>5}\t{code}\t{mark} {name}\n")
    unjudged = Counter((n.code, n.reason) for n in not_judged)
    for (code, reason), n in sorted(unjudged.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"{n:>5}\t{code}\tnot judged ({reason})\n")
    return "".join(lines)


def print_text(findings: list[Finding], sources: dict[str, str], out: TextIO, *, show_fixes: bool = False,
               fixed: list[Finding] = (), color: bool | None = None, not_judged: list[NotJudged] = (),
               show_unresolved: bool = False, quiet: bool = False, fix_errors: list[str] = (),
               incomplete: bool = False, allowed: tuple[str, ...] = ("safe",), given=frozenset()) -> None:
    """Ruff-style text: a header line per finding, the source line with the read underlined, the
    resolution chain (``= why:``) and the fix (``= help:``), then a summary line (see
    :func:`found_line` for ``incomplete``); with
    ``show_unresolved`` the reads not judged, one per line; when any read was not judged, one
    last line that counts them by reason (:func:`pp_attr_lint.unjudged.summary_line`).  ``quiet``
    (``-q``) leaves out the summary lines (found, fixable, not judged).  ``fix_errors``: why
    ``--fix`` could not fix some files (``path: cannot write the fix: ...``); the fixable line then
    says that the fix failed and why, instead of suggesting ``--fix``.  ``allowed``: the fix
    applicabilities ``--fix`` applies (:func:`pp_attr_lint.model.fix_applicabilities`); a finding
    is marked ``[*]`` only when its fix is one of them, and the unsafe fixes left out are counted
    as ruff does (``N hidden fixes can be enabled with the `--unsafe-fixes` option``).

    ``color``: ``True``/``False`` forces styles on or off; ``None`` leaves it to rich (a terminal
    gets them).  Styled output is written by rich; output that rich would not style (a pipe, a
    file, ``color=False``) is written directly, as rich writes it there, which spares importing
    and running rich (45 ms of a 1.2 s cold run of vLLM 0.21.0)."""
    lines: list[list[tuple[str | None, str]]] = []  # each line: (style or None, text) segments
    for f in findings:
        head = [("bold", display_path(f.path)), (None, f":{f.row}:{f.column}: "), ("bold red", _label(f))]
        if _fixable(f, allowed):
            head += [(None, " "), ("cyan", "[*]")]
        lines.append(head + [(None, f" {f.message}")])
        text = sources.get(f.path)
        if text is not None:
            src = text.splitlines()
            if 0 < f.row <= len(src):
                width = len(str(f.row))
                end_col = f.end_column if f.end_row == f.row else len(src[f.row - 1]) + 1
                carets = "^" * max(1, end_col - f.column)
                lines += [[("blue", f"{' ' * width} |")],
                          [("blue", f"{f.row} |"), (None, f" {src[f.row - 1]}")],
                          [("blue", f"{' ' * width} |"), (None, f" {' ' * (f.column - 1)}"), ("red", f"{carets} {_label(f)}")],
                          [("blue", f"{' ' * width} |")]]
        lines += [[(None, "  "), ("blue", "= why:"), (None, f" {line}")] for line in f.explanation]
        advice = help_text(f, allowed)
        if advice:
            lines.append([(None, "  "), ("blue", "= help:"), (None, f" {advice}")])
        lines.append([])
    if show_unresolved and not_judged:
        lines += [[(None, line)] for line in not_judged_lines(not_judged).splitlines()]
        lines.append([])
    if not quiet:
        lines.append([(None, found_line(len(findings), len(fixed), incomplete))])
    fixable = sum(1 for f in findings if _fixable(f, allowed))
    hidden = sum(1 for f in findings if is_hidden_fix(f, allowed))
    if fixable and not quiet and fix_errors:
        more = f" (and {len(fix_errors) - 1} more file{'s' if len(fix_errors) > 2 else ''})" if len(fix_errors) > 1 else ""
        lines.append([("cyan", "[*]"), (None, f" {fixable} fixable, but the fix failed: {fix_errors[0]}{more}.")])
    elif fixable and not quiet:
        lines.append([("cyan", "[*]"), (None, f" {fixable} fixable with the `--fix` option"
                                              f"{hidden_fix_note(hidden, ' (', ')')}.")])
    elif hidden and not quiet and not fix_errors:
        lines.append([(None, hidden_fix_note(hidden) + ".")])
    if show_fixes and fixed:
        lines += [[], [(None, "Fixed:")]]
        lines += [[(None, f"  {display_path(f.path)}:{f.row}:{f.column}: {_label(f)} {f.fix.message if f.fix else ''}")]
                  for f in fixed]
    if not_judged and not quiet:
        lines.append([(None, summary_line(not_judged, shown=show_unresolved, given=given))])
    if _styled(out, color):
        from rich.console import Console
        from rich.text import Text

        console = Console(file=out, highlight=False, soft_wrap=True,
                          force_terminal=color if color is not None else None, no_color=color is False)
        for segs in lines:  # styled text, not markup: no escaping, no `:name:` emoji codes
            console.print(Text.assemble(*((t, style) if style else t for style, t in segs)))
    else:
        out.write("".join(_unstyled("".join(t for _, t in segs)) + "\n" for segs in lines))


def _styled(out: TextIO, color: bool | None) -> bool:
    """Whether rich could style ``out`` (rich 15's ``Console.is_terminal``: ``force_terminal``,
    then ``TTY_COMPATIBLE``, ``FORCE_COLOR``, ``isatty()``); when unsure, true (rich decides)."""
    if color is not None:
        return color
    if os.environ.get("TTY_COMPATIBLE", "") or os.environ.get("FORCE_COLOR") is not None:
        return True
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return True


_CONTROL = {7: None, 8: None, 11: None, 12: None, 13: None}  # what rich's Text drops (BEL BS VT FF CR)


def _unstyled(line: str) -> str:
    """``line`` as rich writes it where it does not style: control characters dropped, tabs
    expanded to 8 columns (rich.text.Text).  Rich counts columns in terminal cells (a CJK
    character takes two, a combining accent none), so a line with a tab and non-ASCII text is
    expanded by rich itself."""
    line = line.translate(_CONTROL)
    if "\t" not in line:
        return line
    if line.isascii():
        return line.expandtabs(8)
    from rich.text import Text

    text = Text(line)
    text.expand_tabs(8)
    return text.plain

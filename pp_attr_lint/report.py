"""Reports: findings as text (rich), ruff-compatible JSON, concise lines, GitHub annotations, SARIF.

Every function takes the sorted findings and returns or prints text; none of them changes files.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import TextIO

from . import __version__
from .model import Finding, NotJudged
from .rules import Rule
from .textio import display_path
from .unjudged import describe, summary_line

FORMATS = ("text", "json", "concise", "github", "sarif")


def found_line(remaining: int, fixed: int = 0) -> str:
    """The summary line of the text and concise reports: ``Found 3 errors (1 fixed, 2
    remaining).``, ``Found 1 error.`` or ``All checks passed!``."""
    total = remaining + fixed
    if fixed:
        return f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {remaining} remaining)."
    if remaining:
        return f"Found {remaining} error{'s' if remaining != 1 else ''}."
    return "All checks passed!"


def not_judged_lines(records: list[NotJudged]) -> str:
    """One line per read not judged: ``path:row:col: CODE not judged (reason): detail``."""
    return "".join(f"{display_path(n.path)}:{n.row}:{n.column}: {n.code} not judged ({n.reason}): {n.detail}\n"
                   for n in records)


def _fix_json(f: Finding) -> dict | None:
    if f.fix is None:
        return None
    return {
        "applicability": f.fix.applicability,
        "message": f.fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.row, "column": e.column},
                "end_location": {"row": e.end_row, "column": e.end_column},
            }
            for e in f.fix.edits
        ],
    }


def to_json(findings: list[Finding], not_judged: list[NotJudged] = ()) -> str:
    """Ruff's JSON output format: a list of objects with ``code``, ``message``, ``filename``,
    ``location``/``end_location`` (``row``, ``column``; 1-based), ``fix``, ``url``, ``noqa_row``;
    plus ``name`` and ``explanation`` (the resolution chain).  Each read no rule could judge in
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
            "fix": _fix_json(f),
            "location": {"row": f.row, "column": f.column},
            "message": f.message,
            "noqa_row": f.noqa_row,
            "url": f.url,
            "name": f.name,
            "explanation": f.explanation,
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


def to_concise(findings: list[Finding]) -> str:
    """One line per finding: ``path:row:col: CODE message``."""
    return "".join(
        f"{display_path(f.path)}:{f.row}:{f.column}: {_label(f)}{' [*]' if f.fix else ''} {f.message}\n"
        for f in findings
    )


def _gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands (``::error title=...,file=...,line=...::message``), which
    the runner turns into annotations on the pull request's diff."""
    lines = []
    for f in findings:
        props = (f"title={_gh_escape_prop('pp-attr-lint (' + _label(f) + ')')},file={_gh_escape_prop(display_path(f.path))},"
                 f"line={f.row},col={f.column},endLine={f.end_row},endColumn={f.end_column}")
        lines.append(f"::error {props}::{_gh_escape_data(_label(f) + ' ' + f.message)}\n")
    return "".join(lines)


def _uri(path: str) -> str:
    """A SARIF ``uri``: relative to the working directory when below it, else a ``file:`` URI;
    percent-encoded either way (a space or ``#`` in a path must not break the URI)."""
    from pathlib import Path
    from urllib.parse import quote

    rel = display_path(path)
    return quote(rel.replace(os.sep, "/")) if not os.path.isabs(rel) else Path(path).as_uri()


def to_sarif(findings: list[Finding], rules: list[Rule], not_judged: list[NotJudged] = ()) -> str:
    """SARIF 2.1.0: one run, the tool's rules as ``reportingDescriptor``s (with their
    documentation), one result per finding with its region and its fix as
    ``fixes[].artifactChanges[].replacements``; each read no rule could judge as a
    ``note``-level ``invocations[0].toolExecutionNotifications`` entry (descriptor id
    ``not-judged/REASON``, the rule in ``associatedRule``).
    Schema: https://json.schemastore.org/sarif-2.1.0.json"""
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
    for f in findings:
        region = {"startLine": f.row, "startColumn": f.column, "endLine": f.end_row, "endColumn": f.end_column}
        loc = {"physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}, "region": region}}
        res = {
            "ruleId": f.code or f.name,
            "level": "error",
            "message": {"text": f.message},
            "locations": [loc],
        }
        if f.code in rule_index:
            res["ruleIndex"] = rule_index[f.code]
        if f.explanation:
            res["properties"] = {"explanation": f.explanation}
        if f.fix is not None:
            res["fixes"] = [{
                "description": {"text": f.fix.message},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path)},
                    "replacements": [{
                        "deletedRegion": {"startLine": e.row, "startColumn": e.column,
                                          "endLine": e.end_row, "endColumn": e.end_column},
                        "insertedContent": {"text": e.content},
                    } for e in f.fix.edits],
                }],
            }]
        results.append(res)
    run: dict = {
        "tool": {"driver": {"name": "pp-attr-lint", "version": __version__, "rules": descriptors}},
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


def statistics(findings: list[Finding]) -> str:
    """Counts per code, like ``ruff --statistics``: ``count  CODE  [*]  name``."""
    counts = Counter((_label(f), f.name) for f in findings)
    fixable = Counter(_label(f) for f in findings if f.fix)
    lines = []
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable.get(code) == n else ("[-]" if fixable.get(code) else "[ ]")
        lines.append(f"{n:>5}\t{code}\t{mark} {name}\n")
    return "".join(lines)


def print_text(findings: list[Finding], sources: dict[str, str], out: TextIO, *, show_fixes: bool = False,
               fixed: list[Finding] = (), color: bool | None = None, not_judged: list[NotJudged] = (),
               show_unresolved: bool = False, quiet: bool = False) -> None:
    """Ruff-style text: a header line per finding, the source line with the read underlined, the
    resolution chain (``= why:``) and the fix (``= help:``), then a summary line; with
    ``show_unresolved`` the reads not judged, one per line; when any read was not judged, one
    last line that counts them by reason (:func:`pp_attr_lint.unjudged.summary_line`).  ``quiet``
    (``-q``) leaves out the summary lines (found, fixable, not judged)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=out, highlight=False, soft_wrap=True,
                      force_terminal=color if color is not None else None, no_color=color is False)
    for f in findings:
        path = display_path(f.path)
        mark = " [cyan]\\[*][/]" if f.fix else ""
        console.print(f"[bold]{escape(path)}[/]:{f.row}:{f.column}: [bold red]{escape(_label(f))}[/]{mark} {escape(f.message)}")
        text = sources.get(f.path)
        if text is not None:
            lines = text.splitlines()
            if 0 < f.row <= len(lines):
                src_line = lines[f.row - 1]
                width = len(str(f.row))
                end_col = f.end_column if f.end_row == f.row else len(src_line) + 1
                carets = "^" * max(1, end_col - f.column)
                console.print(f"[blue]{' ' * width} |[/]")
                console.print(f"[blue]{f.row} |[/] {escape(src_line)}")
                console.print(f"[blue]{' ' * width} |[/] {' ' * (f.column - 1)}[red]{carets} {escape(_label(f))}[/]")
                console.print(f"[blue]{' ' * width} |[/]")
        for line in f.explanation:
            console.print(f"  [blue]= why:[/] {escape(line)}")
        if f.fix is not None:
            console.print(f"  [blue]= help:[/] {escape(f.fix.message)}")
        console.print("")
    remaining = len(findings)
    n_fixed = len(fixed)
    if show_unresolved and not_judged:
        for line in not_judged_lines(not_judged).splitlines():
            console.print(escape(line))
        console.print("")
    if not quiet:
        console.print(escape(found_line(remaining, n_fixed)))
    fixable = sum(1 for f in findings if f.fix is not None)
    if fixable and not quiet:
        console.print(f"[cyan]\\[*][/] {fixable} fixable with the `--fix` option.")
    if show_fixes and fixed:
        console.print("\nFixed:")
        for f in fixed:
            console.print(f"  {escape(display_path(f.path))}:{f.row}:{f.column}: {escape(_label(f))} {escape(f.fix.message if f.fix else '')}")
    if not_judged and not quiet:
        console.print(escape(summary_line(not_judged, shown=show_unresolved)))

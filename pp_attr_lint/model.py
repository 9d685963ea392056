"""Findings, fixes and edits: what the rules produce and the reporters print.

Rows are 1-based; columns are 1-based character columns (as in ruff's JSON output).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``(row, column)`` and ``(end_row, end_column)`` by ``content``."""

    content: str
    row: int
    column: int
    end_row: int
    end_column: int


@dataclass(frozen=True)
class Fix:
    """A fix: its applicability (``safe``, ``unsafe``, ``display-only``), a message and edits."""

    applicability: str
    message: str
    edits: tuple[Edit, ...]


@dataclass
class Finding:
    """One diagnostic.

    ``code`` is ``None`` for a file that could not be checked at all (``invalid-syntax``, an
    undecodable or unreadable file); ``name`` is the rule name (``layer-range-on-wrapper``,
    ``invalid-syntax``, ``io-error``).  ``explanation`` holds the resolution chain, one line each
    (which class the receiver is, where the attribute really lives); ``help`` the advice (what to
    change), given by every rule; the text report shows the fix's message instead when there is a
    fix (see :func:`help_text`).  ``witness`` says where it fails: ``{"ranks": text, "config": {key:
    value}}``, the pipeline-parallel ranks and the model configuration under which the failing line
    runs (``validate --findings`` applies the configuration to its red run); an optional
    ``"layer_partition": "front-loaded"`` says it fails only when a stage starts after more layers
    than it holds (every stage after the first holding one layer: vLLM's
    ``VLLM_PP_LAYER_PARTITION``, which the red run sets).
    """

    code: str | None
    name: str
    message: str
    path: str  # absolute
    row: int
    column: int
    end_row: int
    end_column: int
    fix: Fix | None = None
    url: str | None = None
    noqa_row: int | None = None
    explanation: list[str] = field(default_factory=list)
    # for fixes: the receiver's chain and the path to insert, and the read's kind
    fix_data: dict | None = None
    help: str | None = None
    # where it fails: {"ranks": "the last pipeline-parallel rank (rank > 0)", "config": {"tie_word_embeddings":
    # True}}; the configuration (model config keys) under which the engine reaches the failing line
    witness: dict | None = None

    def sort_key(self):
        return (self.path, self.row, self.column, self.code or "")


def finding_to_dict(f: Finding) -> dict:
    """Plain data for the cache (marshal-able)."""
    d = {k: getattr(f, k) for k in ("code", "name", "message", "path", "row", "column", "end_row",
                                     "end_column", "url", "noqa_row", "explanation", "fix_data", "help", "witness")}
    if f.fix is not None:
        d["fix"] = (f.fix.applicability, f.fix.message,
                    [(e.content, e.row, e.column, e.end_row, e.end_column) for e in f.fix.edits])
    else:
        d["fix"] = None
    return d


def fix_applicabilities(unsafe_fixes: bool = False) -> tuple[str, ...]:
    """The fix applicabilities that ``check --fix`` applies: ``safe``, and ``unsafe`` too with
    ``unsafe_fixes`` (``--unsafe-fixes``); ``display-only`` never (ruff's semantics)."""
    return ("safe", "unsafe") if unsafe_fixes else ("safe",)


def applied_fix(f: Finding, allowed: tuple[str, ...] = ("safe",)) -> Fix | None:
    """``f``'s fix when ``check --fix`` with the applicabilities ``allowed`` (see
    :func:`fix_applicabilities`) would apply it (it has edits and one of those applicabilities),
    else ``None``.  The reports show a finding as fixable (``[*]``, the JSON's and SARIF's fix) by
    this alone, so that what they call fixable is what ``--fix`` changes."""
    fix = f.fix
    return fix if fix is not None and fix.applicability in allowed and fix.edits else None


def hidden_fix_note(hidden: int, before: str = "", after: str = "") -> str:
    """ruff's note on unsafe fixes left out: ``N hidden fix(es) can be enabled with the
    `--unsafe-fixes` option`` inside ``before``/``after``; empty when ``hidden`` is 0."""
    if not hidden:
        return ""
    return f"{before}{hidden} hidden fix{'es' if hidden > 1 else ''} can be enabled with the `--unsafe-fixes` option{after}"


def is_hidden_fix(f: Finding, allowed: tuple[str, ...] = ("safe",)) -> bool:
    """Whether ``f`` has an ``unsafe`` fix that ``allowed`` leaves out (ruff's hidden fix)."""
    return f.fix is not None and f.fix.applicability == "unsafe" and "unsafe" not in allowed and bool(f.fix.edits)


def help_text(f: Finding, allowed: tuple[str, ...] = ("safe",)) -> str | None:
    """The one piece of advice a report gives for ``f``: its fix's message when it has a fix, else
    its rule's ``help``.  An ``unsafe`` fix that ``allowed`` leaves out (see
    :func:`fix_applicabilities`) is not shown as a fix, so its message says how to enable it:
    ``... (1 hidden fix can be enabled with the `--unsafe-fixes` option)``."""
    if f.fix is None:
        return f.help
    return f.fix.message + (hidden_fix_note(1, " (", ")") if is_hidden_fix(f, allowed) else "")


def finding_from_dict(d: dict) -> Finding:
    """The inverse of :func:`finding_to_dict`."""
    d = dict(d)
    fix = d.pop("fix")
    if fix is not None:
        fix = Fix(fix[0], fix[1], tuple(Edit(*e) for e in fix[2]))
    return Finding(fix=fix, **d)


@dataclass
class NotJudged:
    """A watched read that a rule could neither report nor prove fine.

    ``reason`` is a code of :data:`pp_attr_lint.unjudged.REASONS` (``module-not-found``,
    ``syntax-error``, ``unknown-base``, ...); ``detail`` says which name, module or class stopped it
    (``base HasInnerState of Plugin cannot be resolved``); ``dep_path`` is the file that caused it
    when known (the broken file for ``syntax-error``).  Rows and columns as in :class:`Finding`."""

    code: str  # the rule that could not judge the read
    reason: str
    detail: str
    path: str  # absolute
    row: int
    column: int
    dep_path: str | None = None

    def sort_key(self):
        return (self.path, self.row, self.column, self.code)


def not_judged_to_dict(n: NotJudged) -> dict:
    """Plain data for the cache and the JSON report."""
    return {k: getattr(n, k) for k in ("code", "reason", "detail", "path", "row", "column", "dep_path")}


def not_judged_from_dict(d: dict) -> NotJudged:
    """The inverse of :func:`not_judged_to_dict`."""
    return NotJudged(**d)

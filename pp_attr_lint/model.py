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


def help_text(f: Finding) -> str | None:
    """The one piece of advice a report gives for ``f``: its fix's message when it has a fix, else
    its rule's ``help``."""
    return f.fix.message if f.fix is not None else f.help


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

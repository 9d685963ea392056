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
    (which class the receiver is, where the attribute really lives).
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

    def sort_key(self):
        return (self.path, self.row, self.column, self.code or "")

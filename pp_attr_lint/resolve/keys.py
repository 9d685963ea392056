"""The resolver's vocabulary: class keys, the failure it raises, where a value comes from, and
the source of per-file summaries it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

ClassKey = tuple[str, str]  # (module, class name)


class Unresolved(Exception):
    """Raised inside the resolver when a fact cannot be established.

    ``reason`` is a code of :data:`pp_attr_lint.unjudged.REASONS` (``module-not-found``,
    ``unknown-base``, ``dynamic-class``, ...), ``detail`` names what stopped it and ``path`` the
    file that caused it when known (a file that does not parse).  Rules turn it into a
    :class:`pp_attr_lint.model.NotJudged` record."""

    def __init__(self, reason: str, detail: str = "", path: str | None = None):
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason
        self.path = path


class SummarySource(Protocol):
    def summary(self, module: str) -> dict | None:  # pragma: no cover - protocol
        """The summary of ``module`` or ``None`` when it is not in the project (or does not parse)."""

    def is_package(self, module: str) -> bool:  # pragma: no cover - protocol
        """Whether ``module`` is a package (an ``__init__.py``)."""

    def path(self, module: str) -> str | None:  # pragma: no cover - protocol
        """The file of ``module``."""

    def in_checked_root(self, module: str) -> bool:  # pragma: no cover - protocol
        """Whether ``module`` lies in the folder of a checked file's top package."""

    def failure(self, module: str) -> tuple[str, str, str | None]:  # pragma: no cover - protocol
        """Why ``module`` has no summary: ``(reason, detail, path)``."""


@dataclass
class Where:
    """Where an attribute or a value comes from, for messages."""

    module: str
    path: str | None
    line: int
    what: str


EXTERNAL = "<external>"
NONE_KEY: ClassKey = ("builtins", "None")  # in a candidate set: the value may be None

"""What the enabled rules ask of the index (:class:`IndexSpec`: plain data the rule API makes, see
:func:`pp_attr_lint.rule_api.index_spec`), and the column converter the summarizer and the rules'
collectors share (:class:`LineIndex`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SUMMARY_VERSION = 29  # bump when the summary format of pp_attr_lint.index.summary changes
# `__name__` in a folded registration target (`f"{__name__}.model:Arch"`): the module's name, put
# in when the registration is read (pp_attr_lint.resolve ``registrations``)
MODULE_NAME_MARK = "\x00__name__\x00"
# where a summary keeps the facts of the rank collector (pp_attr_lint.semantic.values.collect), which the
# placeholder rules share: one key for the collector and the rules
RANK_FACTS_KEY = "pp-ranks"


class LineIndex:
    """Converts ``ast`` UTF-8 byte columns to character columns, line by line, lazily."""

    def __init__(self, source: str):
        self.source = source  # the whole text: ``"".join(self.lines)``, kept rather than rebuilt
        self.lines = source.splitlines(keepends=True)
        self._all_ascii = source.isascii()

    def col(self, lineno: int, byte_col: int) -> int:
        i = lineno - 1
        if self._all_ascii or i >= len(self.lines) or self.lines[i].isascii():
            return byte_col
        return len(self.lines[i].encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def text(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def span(self, node) -> str:
        """The whole lines ``node`` (an ``ast`` node with a position) stands on, joined."""
        return "".join(self.lines[node.lineno - 1:node.end_lineno])


@dataclass(frozen=True)
class IndexSpec:
    """What the enabled rules ask of the index: the attribute names whose reads are recorded, the
    rules' own prefilters (see :func:`pp_attr_lint.index.prefilter.make_rule_prefilter`), and the rules' own
    collectors ``(code, collect)``; ``key`` names all of it for the cache."""

    attrs: frozenset[str]
    prefilters: tuple[Callable, ...] = ()
    collectors: tuple[tuple[str, Callable], ...] = ()
    key: str = ""
    # the rule code of each of `prefilters`
    prefilter_codes: tuple[str, ...] = ()
    # one `(prefilter or None, attrs)` per rule that says which files it wants (bit k of a
    # prefilter mask is `wanting_codes[k]`; see pp_attr_lint.index.prefilter.make_rule_prefilter)
    wanting: tuple = ()
    wanting_codes: tuple[str, ...] = ()
    # no prefilter: every file is wanted by every rule (for tests of the prefilters' soundness)
    everything: bool = False
    # one per collector: the prefilter bits of the rules it serves (it runs on a file whose mask has
    # one of them), or None: it runs on every parsed file (see pp_attr_lint.rule_api.index_spec)
    collector_gates: tuple = ()

"""The base of the services a :class:`~.model.RankFacts` ties together (values, calls, the tree
reader, the engines): each keeps its own memo for the run and reaches the file being checked
(``ctx``, which changes as the run goes) and the resolver (``r``) through the model."""

from __future__ import annotations


class Service:
    """One service of ``model`` (a :class:`~.model.RankFacts`), with a memo of its own."""

    def __init__(self, model):
        self.m = model
        self._memo: dict = {}

    @property
    def ctx(self):
        """The :class:`~pp_attr_lint.rule_api.FileContext` of the file being checked."""
        return self.m.ctx

    @property
    def r(self):
        """The run's :class:`~pp_attr_lint.resolve.Resolver`."""
        return self.m.r

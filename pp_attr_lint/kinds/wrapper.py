"""The ``wrapper-attribute`` rule kind: the rule object that ``rule.yaml`` files describe (PPA001,
PPA002 and a project's own rules).  Kept light; the analysis is :mod:`pp_attr_lint.kinds.wrapper_analysis`."""

from __future__ import annotations

from dataclasses import dataclass

from ..rule_api import FileContext, Rule


@dataclass
class WrapperAttributeRule(Rule):
    """A data rule (``rule.yaml``): reads of ``attributes`` on a wrapper (see the module docstring).
    ``message`` is a ``str.format`` template with ``receiver``, ``wrapper``, ``attr``, ``inner``,
    ``path``, ``where`` and ``fixed``; ``property_message`` the one of a read that a property of
    the attribute's own name returns (``owner``: its class); ``max_path_depth`` bounds the
    submodule path (1 to 4)."""

    message: str = ""
    property_message: str = ""
    max_path_depth: int = 2

    def check(self, ctx: FileContext):
        from ..index.summary import scopes_by_line
        from ..model import NotJudged
        from .wrapper_analysis import RuleRunner

        runner = ctx.shared.get(("wrapper", self.code))
        if runner is None:
            stores = ctx.shared.get("wrapper-stores")
            if stores is None:
                # stores of watched attributes from outside the class, over every checked file
                stores = [(st, *s) for st in ctx.checked for s in st.summary.get("stores", ())]
                ctx.shared["wrapper-stores"] = stores
            runner = ctx.shared[("wrapper", self.code)] = RuleRunner(self, ctx.project, stores, ctx.resolver)
        summary = ctx.summary
        if not summary["reads"]:
            return []
        scopes = ctx.shared.get(("scopes", ctx.file.path))
        if scopes is None:
            scopes = ctx.shared[("scopes", ctx.file.path)] = scopes_by_line(summary)
        out = []
        for read in summary["reads"]:
            if read["attr"] in self.attributes:
                try:
                    f = runner.evaluate(ctx.file, read, scopes)
                except RecursionError:  # a class hierarchy or chain too deep to follow
                    f = NotJudged(code=self.code, reason="recursion-limit",
                                  detail="Python's recursion limit was reached", path=ctx.file.path,
                                  row=read["line"], column=read["col"] + 1)
                if f is not None:
                    out.append(f)  # a Finding, or a NotJudged record
        return out

"""PPA003 layer-range-on-self: ``self.start_layer`` / ``self.end_layer`` read in a class that never
sets them, while no subclass of it does either (see README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule


class LayerRangeOnSelf(Rule):
    def prefilter(self, data: bytes) -> bool:
        """``self.start_layer`` / ``self.end_layer`` is read and the file assigns neither."""
        for attr in (b"start_layer", b"end_layer"):
            if b"self." + attr in data and attr + b" =" not in data and attr + b"," not in data \
                    and attr + b")" not in data:
                return True
        return False

    def check(self, ctx):
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        r = ctx.resolver
        out = []
        from pp_attr_lint.index.summary import scopes_by_line

        scopes = scopes_by_line(ctx.summary)
        for read in ctx.summary["reads"]:
            if read["attr"] not in F.RANGE_ATTRIBUTES or read.get("guards") or not read["class"]:
                continue
            scope = scopes.get((read["class"], read["function"]))
            if scope is None or not read["chain"] or tuple(read["chain"]) != (scope.get("self"),):
                continue
            key = (ctx.module, read["class"])
            rec = ctx.summary["classes"].get(read["class"])
            if rec is None or _abstract(rec):
                continue
            try:
                r.check_resolved(key)
                if r.attribute_status(key, read["attr"]) != "absent":
                    continue
                mro = r.mro(key)
            except Unresolved:
                continue
            if self._subclass_sets(ctx, key, read["attr"]):
                continue
            attr = read["attr"]
            message = (f"`{read['class']}` reads `self.{attr}`, but neither it nor any class on its MRO sets "
                       f"`{attr}` (only the models built with `make_layers` and the pools given a layer range do), "
                       f"and no subclass in the checked files sets it: AttributeError on every call.")
            explanation = [f"MRO: {' -> '.join(e[1] if e[0] != EXTERNAL else e[1].rsplit('.', 1)[-1] for e in mro)}",
                           f"`{read['class']}()` runs {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(key)) or 'no project __init__'}"]
            help = (f"Set `self.{attr}` in `{read['class']}.__init__` (from `make_layers(...)`, or from the layer "
                    f"range of the module that builds the layers), or read `{attr}` on that module instead")
            out.append(self.finding(ctx, read["line"], read["col"], read["end_line"], read["end_col"], message,
                                    explanation, help=help,
                                    witness={"ranks": "every rank the method runs on", "config": {}}))
        return out

    def _subclass_sets(self, ctx, key, attr) -> bool:
        from pp_attr_lint.resolve import Unresolved
        r = ctx.resolver
        for st in ctx.checked:
            for cname in st.summary["classes"]:
                sub = (st.module, cname)
                if sub == key:
                    continue
                try:
                    if key in r.mro(sub) and r.attribute_status(sub, attr) != "absent":
                        return True
                except Unresolved:
                    return True  # cannot tell: a subclass may set it
        return False


def _abstract(rec: dict) -> bool:
    """A mixin, protocol or abstract base: what it reads, its subclasses set."""
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    return any(b in ("Protocol", "ABC", "Generic") for b in bases) or any(
        "abstractmethod" in (d or "") for m in rec["methods"].values() for d in m.get("decorators", ()))


RULE = LayerRangeOnSelf(
    code="PPA003",
    name="layer-range-on-self",
    summary="self.start_layer / self.end_layer read in a class that never sets them",
    needles=("self.start_layer", "self.end_layer"),
)

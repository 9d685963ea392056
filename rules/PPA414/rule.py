"""PPA414 capture-setter-skips-stages: a setter that marks which layers capture their hidden
states (for an EAGLE-3 or DFlash drafter) returns early on every rank but the last, while the
loop over each rank's layers reads the marks on every rank: the stages before the last never mark
their layers, so what they should capture is lost (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

# the speculative algorithm a setter serves, by a word of its name (SGLang's
# `set_eagle3_layers_to_capture`, `set_dflash_layers_to_capture`)
_ALGORITHMS = {"eagle3": "EAGLE3", "dflash": "DFLASH"}


def _collect(tree, lines) -> list:
    """``[[class, method, attr, line, col, end_line, end_col, store line, reader class, reader line,
    algorithm or None]]``: a store of a non-empty value to ``self.attr`` or ``self.<x>.attr`` whose
    guard holds on the last rank only, when a loop over this rank's layers in a class of the module
    tests membership in ``self.attr`` (``if i in self.layers_to_capture``).  The line is the
    method's early ``if not ...is_last_rank: return`` when it has one, else the store."""
    import ast

    from pp_attr_lint.rule_api import fast_walk
    from pp_attr_lint.semantic import boundary as B
    from pp_attr_lint.semantic import guards as G
    from pp_attr_lint.semantic.flow import FunctionGuards

    src = lines.lines
    readers = {}  # attr -> (class, line) of a membership test in a layer loop
    for cls in module_classes(tree):
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for loop in B.layer_loops(fn, lambda n: "".join(src[n.lineno - 1:n.end_lineno])):
                    for n in fast_walk(loop):
                        if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn)) \
                                and isinstance(n.comparators[0], ast.Attribute) \
                                and isinstance(n.comparators[0].value, ast.Name) \
                                and n.comparators[0].value.id == "self":
                            readers.setdefault(n.comparators[0].attr, (cls.name, n.lineno))
    if not readers:
        return []
    out = []
    for cls in module_classes(tree):
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            stores = [st for st in fast_walk(fn) if isinstance(st, ast.Assign) and len(st.targets) == 1
                      and isinstance(st.targets[0], ast.Attribute) and st.targets[0].attr in readers
                      and not (isinstance(st.value, (ast.List, ast.Tuple, ast.Set)) and not st.value.elts)
                      and not isinstance(st.value, ast.Constant)]
            if not stores:
                continue
            guards = FunctionGuards(fn, lines, cls=cls.name)
            for st in stores:
                g = guards.of(st)
                if g is None or G.satisfying(g) is None or G.satisfying(G.f_and(g, G.f_not(G.LAST))) is not None:
                    continue  # not reached, or some rank but the last stores it too
                gate = next((s for s in fn.body if isinstance(s, ast.If) and s.body
                             and isinstance(s.body[-1], ast.Return) and G.formula(s.test) == G.f_not(G.LAST)), None)
                at = gate.test if gate is not None else st
                attr = st.targets[0].attr
                algo = next((a for w, a in _ALGORITHMS.items() if w in fn.name.lower()), None)
                out.append([cls.name, fn.name, attr, at.lineno, lines.col(at.lineno, at.col_offset), at.end_lineno,
                            lines.col(at.end_lineno, at.end_col_offset), st.lineno, *readers[attr], algo])
                break
    return out


class CaptureSetterSkipsStages(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"is_last_rank" in data and b" in self." in data

    def collect(self, tree, lines):
        text = lines.source
        if "is_last_rank" not in text or " in self." not in text:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        top = ctx.module.split(".", 1)[0]
        allowed = rf.pp_speculative_algorithms(top)
        out = []
        for cls, method, attr, line, col, end_line, end_col, store, reader, read_line, algo in facts:
            if allowed is not None and (not allowed or (algo is not None and algo not in allowed)):
                continue  # the engine refuses this drafter (or every one) under pipeline parallelism
            if algo is None or allowed is None:
                why = (f"whether the engine runs the {algo} drafter under pipeline parallelism (no check of the "
                       f"speculative algorithms it allows under PP is read in the analysed code)") if algo else None
                out.append(NotJudged(code=self.code, reason="engine-fact-unknown", path=ctx.file.path, row=line,
                                     column=col + 1, detail=why or f"whether the engine runs the drafter `{cls}.{method}` "
                                     f"serves under pipeline parallelism (its name names no algorithm this rule reads: "
                                     f"{', '.join(sorted(_ALGORITHMS.values()))})"))
                continue
            message = (f"`{cls}.{method}` marks the layers that capture hidden states (`{attr}`, line {store}) "
                       f"only on the last pipeline-parallel rank, but `{reader}` tests `{attr}` in its loop over "
                       f"each rank's layers (line {read_line}) on every rank: the stages before the last never "
                       f"mark their layers, so the {algo} drafter gets only the last stage's hidden states.")
            explanation = [f"`{method}` returns before the store on every rank but the last",
                           f"the layer loop of `{reader}` runs on every rank and captures a layer only when it is "
                           f"in `self.{attr}`",
                           f"the engine lets {algo} run under pipeline parallelism "
                           f"(it is among {', '.join(sorted(allowed))})"]
            out.append(self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help=f"Mark the layers on every rank (each stage's loop keeps the ones it holds), and send what "
                     f"the earlier stages capture to the last one",
                witness={"ranks": "every pipeline-parallel rank but the last", "config": {}}))
        return out


RULE = CaptureSetterSkipsStages(
    code="PPA414",
    name="capture-setter-skips-stages",
    summary="a layer-capture setter returns on ranks before the last, whose layer loops read its marks",
    version=1,
)

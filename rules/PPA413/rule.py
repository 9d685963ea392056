"""PPA413 runner-drops-raw-tokens: a model runner drops ``input_ids`` on every pipeline-parallel
rank after the first (``model_inputs["input_ids"] = None``) without asking whether the model
declares that it needs the raw token ids on every rank (``requires_raw_input_tokens``), while
models of the tree declare it: their later stages get ``None`` (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

_KEY = "input_ids"
_FLAG = "requires_raw_input_tokens"


def _collect(tree, lines) -> list:
    """``[[class, method, line, col, end_line, end_col, guard]]``: each ``x["input_ids"] = None``
    whose guard holds only on ranks after the first (``self.X`` read as the first rank where the
    module assigns ``self.X = get_pp_group().is_first_rank``) and names no ``requires_raw_input_tokens``."""
    import ast

    from pp_attr_lint.rule_api import fast_walk
    from pp_attr_lint.semantic import guards as G
    from pp_attr_lint.semantic.flow import FunctionGuards

    aliases = {n.targets[0].attr for n in fast_walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Attribute) and isinstance(n.targets[0].value, ast.Name)
               and n.targets[0].value.id == "self" and G.formula(n.value) == G.FIRST}

    def atom_of(node):
        if isinstance(node, ast.Attribute) and node.attr in aliases and isinstance(node.value, ast.Name) \
                and node.value.id == "self":
            return G.FIRST
        return None

    out = []
    for cls in module_classes(tree):
        # methods and the functions nested in them (a forward function the runner builds and captures)
        for fn in fast_walk(cls):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            drops = [st for st in fast_walk(fn) if isinstance(st, ast.Assign) and len(st.targets) == 1
                     and isinstance(st.targets[0], ast.Subscript) and isinstance(st.targets[0].slice, ast.Constant)
                     and st.targets[0].slice.value == _KEY and isinstance(st.value, ast.Constant)
                     and st.value.value is None]
            if not drops:
                continue
            guards = FunctionGuards(fn, lines, cls=cls.name, atom_of=atom_of)
            for st in drops:
                g = guards.of(st)
                if g is None or G.satisfying(g) is None or G.satisfying(G.f_and(g, G.FIRST)) is not None:
                    continue  # not reached, or reached on the first rank too (not a later-stage drop)
                if any(_FLAG in a for a in G.atoms(g)):
                    continue  # the drop asks the model's flag
                t = st.targets[0]
                out.append([cls.name, fn.name, st.lineno, lines.col(st.lineno, st.col_offset), t.end_lineno,
                            lines.col(t.end_lineno, t.end_col_offset), G.describe(g)])
    return out


class RunnerDropsRawTokens(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b'["input_ids"] = None' in data

    def collect(self, tree, lines):
        if '["input_ids"] = None' not in lines.source:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic.model import RankFacts

        top = ctx.module.split(".", 1)[0]
        models = RankFacts.of(ctx).raw_token_models(top)
        if not models:
            return []  # no model of the tree declares the raw tokens and raises without them
        named = ", ".join(f"`{cls}` ({module}:{line}, raises without them at {at})" for module, cls, line, at in models[:3])
        more = f" and {len(models) - 3} more" if len(models) > 3 else ""
        out = []
        for cls, method, line, col, end_line, end_col, guard in facts:
            message = (f"`{cls}.{method}` drops `{_KEY}` on every pipeline-parallel rank after the first without "
                       f"asking `{_FLAG}`, but models of this tree declare that they need the raw token ids and "
                       f"raise without them ({named}{more}): their later stages get `None`.")
            explanation = [f"this line runs when {guard}",
                           f"a model with `{_FLAG} = True` whose code raises when `{_KEY} is None` runs its "
                           f"layers on every stage",
                           f"the test around the drop does not name `{_FLAG}`"]
            out.append(self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help=f"Keep `{_KEY}` on later stages for a model that needs them: drop it only `if not "
                     f"{_FLAG}(model)`",
                witness={"ranks": LATER_RANKS_WORDS,
                         "config": {_FLAG: True}}))
        return out


RULE = RunnerDropsRawTokens(
    code="PPA413",
    name="runner-drops-raw-tokens",
    summary="a runner drops input_ids on later stages although models need the raw tokens there",
    version=1,
)

"""PPA412 drafter-branches-on-target-rank: a module of speculative-decoding drafters (an MTP head)
branches on ``is_first_rank``, the target model's pipeline position, and its branch for the ranks
after the first uses the intermediate tensors; the engine runs the drafter on the last rank only,
where it gets none (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

_PARAM = "intermediate_tensors"


def _hard_uses(statements) -> list:
    """``[(node, statement)]``: each read of ``statements`` (simple statements, as the flow walker
    reaches them) that needs the intermediate tensors: ``assert intermediate_tensors is not None``
    or a subscript of them (``intermediate_tensors["k"]``, ``intermediate_tensors.tensors["k"]``)."""
    import ast

    from pp_attr_lint.rule_api import fast_walk

    def named(node) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "tensors":
            node = node.value
        return isinstance(node, ast.Name) and node.id == _PARAM

    out = []
    for st in statements:
        for n in fast_walk(st):
            if isinstance(n, ast.Assert) and isinstance(n.test, ast.Compare) and named(n.test.left) \
                    and isinstance(n.test.ops[0], ast.IsNot):
                out.append((n, st))
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and named(n.value):
                out.append((n, st))
    return out


def _rank_test(flow, st, later_only) -> tuple | None:
    """The ``if`` statement whose test sends the later ranks to statement ``st`` (flow walker
    ``flow``): the innermost of the tests that decide ``st``
    (:meth:`~pp_attr_lint.semantic.flow.FunctionGuards.deciding_tests`) that is the first rank
    or its negation as the walk read it (through local flags), taken the way that holds only
    after the first rank: ``st`` in its later-rank block, or after it when its first-rank block
    exits.  ``(if statement, replacement)``, ``None`` when there is none."""
    from pp_attr_lint.semantic import guards as G

    for n, holds in reversed(flow.deciding_tests(st) or ()):
        f = flow.test_formula(n)
        if f in (G.FIRST, later_only) and (f if holds else G.f_not(f)) == later_only:
            return n, f"{_PARAM} is None" if f == G.FIRST else f"{_PARAM} is not None"
    return None


def _collect(tree, lines) -> list:
    """``[[class, method, line, col, end_line, end_col, use line, replacement]]``: each ``if`` of a
    method taking ``intermediate_tensors`` whose test is the first rank or its negation (nothing
    else; as the flow walker reads it, so also a local flag assigned that test once), when a
    statement that needs the intermediate tensors (:func:`_hard_uses`) runs only on the ranks
    after the first, behind no test of the tensors (its guard from the flow walker,
    :class:`pp_attr_lint.semantic.flow.FunctionGuards`) because of that test: in its branch for
    those ranks, or after it when its first-rank branch returns; ``replacement`` is the test on
    the inputs that a single-rank run takes the same way (``intermediate_tensors is None`` for
    ``is_first_rank``)."""
    import ast

    from pp_attr_lint.semantic import guards as G
    from pp_attr_lint.semantic.flow import FunctionGuards

    later_only = G.f_not(G.FIRST)
    out = []
    for cls in module_classes(tree):
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or _PARAM not in {
                    a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}:
                continue
            flow = FunctionGuards(fn, lines, cls=cls.name)
            reached = flow.reached_statements()
            if not any(flow.test_formula(n) in (G.FIRST, later_only) for n, _g in reached if isinstance(n, ast.If)):
                continue
            simple = [st for st, _guard in reached if not hasattr(st, "body")]
            reported = set()
            for node, st in _hard_uses(simple):
                guard = flow.of(node)
                if guard is None or not G.can_hold(guard) or not G.implies(guard, later_only) \
                        or any(_PARAM in a for a in G.atoms(guard)):
                    continue  # not only on later ranks, or behind a test of the tensors themselves
                got = _rank_test(flow, st, later_only)
                if got is None or id(got[0]) in reported:
                    continue
                n, repl = got
                reported.add(id(n))
                t = n.test
                flag = None if G.formula(t) == flow.test_formula(n) else ast.unparse(t)  # read through a flag
                out.append([cls.name, fn.name, t.lineno, lines.col(t.lineno, t.col_offset), t.end_lineno,
                            lines.col(t.end_lineno, t.end_col_offset), node.lineno, repl, flag])
    return sorted(out, key=lambda r: (r[2], r[3]))


class DrafterBranchesOnTargetRank(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"is_first_rank" in data and b"intermediate_tensors" in data

    def collect(self, tree, lines):
        text = lines.source
        if "is_first_rank" not in text or _PARAM not in text:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LAST_RANK_WORDS
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        drafter = rf.drafter_module(ctx.module)
        out = []
        for cls, method, line, col, end_line, end_col, use, repl, flag in facts:
            if drafter is None and rf.not_a_module((ctx.module, cls)):
                continue  # the engine builds drafters as modules: a runner or a helper is none
            if drafter is None:
                out.append(NotJudged(code=self.code, reason="engine-fact-unknown", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"whether `{ctx.module}` holds speculative-decoding "
                                     f"drafters only (neither its package's model registry nor, for a plugin, the engine's "
                                     f"registry entries of the architectures it registers say so)"))
                continue
            if not drafter:
                continue  # a model (or a module the registry does not list): its rank tests mean its stage
            message = (f"`{cls}.{method}` is drafter code (the model registry lists this module's classes only "
                       f"as speculative-decoding drafters) and branches on `is_first_rank`"
                       + (f" (through the local flag in `{flag}`)" if flag else "") + ", the target model's "
                       f"pipeline position: the engine runs the drafter on the last rank only, where under "
                       f"pipeline parallelism the test is false, so it takes the branch that needs the "
                       f"intermediate tensors (line {use}) and gets none.")
            explanation = ["the engine builds and runs speculative-decoding drafters on the last pipeline-parallel "
                           "rank only, and never passes them intermediate tensors",
                           "on the last rank `is_first_rank` is false with pipeline_parallel_size >= 2",
                           f"the branch taken there needs `{_PARAM}` (line {use})"]
            if flag:
                explanation.insert(2, f"`{flag}` reads a local flag assigned a test of `is_first_rank` once, "
                                      f"before the `if`")
            fix = self.make_fix("unsafe", f"Branch on the inputs, not the rank: `{repl}`",
                                [self.replace((line, col, end_line, end_col), repl)])
            out.append(self.finding(
                ctx, line, col, end_line, end_col, message, explanation, fix=fix,
                help=f"Branch on what the drafter was given (`{repl}`), not on the target's pipeline rank",
                witness={"ranks": f"{LAST_RANK_WORDS} (the drafter's), pipeline_parallel_size >= 2",
                         "config": {}}))
        return out


RULE = DrafterBranchesOnTargetRank(
    code="PPA412",
    name="drafter-branches-on-target-rank",
    summary="a speculative drafter branches on the target's first rank, but runs on the last only",
    fix_applicability="unsafe",
    version=2,
)

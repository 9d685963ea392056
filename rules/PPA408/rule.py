"""PPA408 rank-mismatched-handoff: a class fills an attribute only on one pipeline-parallel rank
and reads it only on another (events collected on the last stage, reported under global rank 0):
under pipeline parallelism each rank's object sees only its own writes, so the reader never gets
what the writer produced (see README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule, module_classes
from pp_attr_lint.rule_api import fast_walk as _fast_walk

# calls that add to a container
_ADDS = frozenset({"append", "extend", "add", "update", "insert", "appendleft", "put", "setdefault"})
# the text of the tests true only on global rank 0 (`facts.GLOBAL_FIRST_RANK_TESTS`): only the
# methods that hold one are read as readers (and only such files and classes)
_GLOBAL_FIRST_TEXT = F.GLOBAL_FIRST_RANK_TESTS


def _ast():
    import ast

    return ast

def _guards():
    from pp_attr_lint.semantic import guards

    return guards


def _self_attr(node) -> str | None:
    ast = _ast()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _empty(node) -> bool:
    ast = _ast()
    if isinstance(node, ast.Constant):
        return not node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("list", "dict", "set", "deque") \
        and not node.args and not node.keywords


def _events(st, method: str):
    """``("put" | "read", attr, node)`` of one statement's own expressions (not its blocks)."""
    ast = _ast()
    if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        for t in targets:
            pairs = list(zip(t.elts, st.value.elts)) if isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) \
                and len(t.elts) == len(st.value.elts) else [(t, st.value)]
            for target, value in pairs:
                if isinstance(target, ast.Subscript) and _self_attr(target.value):
                    yield "put", _self_attr(target.value), target
                elif _self_attr(target) and (isinstance(st, ast.AugAssign) or (
                        method != "__init__" and value is not None and not _empty(value))):
                    yield "put", _self_attr(target), target
    if isinstance(st, (ast.If, ast.While)):
        exprs = [st.test]
    elif isinstance(st, (ast.For, ast.AsyncFor)):
        exprs = [st.iter]
    elif isinstance(st, (ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        exprs = []
    else:
        exprs = [c for c in ast.iter_child_nodes(st) if isinstance(c, ast.expr)]
    for e in exprs:
        for n in _fast_walk(e):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _ADDS \
                    and _self_attr(n.func.value):
                yield "put", _self_attr(n.func.value), n
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and _self_attr(n):
                yield "read", n.attr, n


def _collect(tree, lines) -> list:
    """``[[class, attr, reader method, gate line, col, end_line, end_col, reader guard, writer
    guard, writer line]]`` for each attribute put only under one rank and read only under
    another; the guards are the flow walker's (:class:`pp_attr_lint.semantic.flow.FunctionGuards`), a
    test of global rank 0 read as the first rank (:func:`pp_attr_lint.semantic.guards.global_first_atom`)."""
    ast, guards = _ast(), _guards()
    from pp_attr_lint.semantic.flow import FunctionGuards, exits

    out = []
    def text(node) -> str:
        return lines.span(node)

    for cls in module_classes(tree):
        if not any(t in text(cls) for t in _GLOBAL_FIRST_TEXT):
            continue  # no reader gated on global rank 0 here
        puts: dict[str, list] = {}
        reads: dict[str, list] = {}
        for m in cls.body:
            if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            gated = any(t in text(m) for t in _GLOBAL_FIRST_TEXT)
            flow = FunctionGuards(m, lines, atom_of=guards.global_first_atom)
            steps = flow.reached_statements()
            # the early exits on a rank (`if <rank test>: return`) the walk reaches, in the order they end
            gates = sorted((st for st, _ in steps if isinstance(st, ast.If) and not st.orelse and exits(st.body)
                            and guards.rank_atoms(flow.formula(st.test))),
                           key=lambda g: (g.end_lineno, g.end_col_offset))
            for st, guard in steps:
                receivers = set()
                for kind, attr, node in _events(st, m.name):
                    at = flow.of(node) or guard
                    if kind == "put":
                        puts.setdefault(attr, []).append((at, node.lineno))
                        if isinstance(node, ast.Call):
                            receivers.add(id(node.func.value))
                    elif gated and id(node) not in receivers:
                        before = [g for g in gates if (g.end_lineno, g.end_col_offset) <= (st.lineno, st.col_offset)]
                        reads.setdefault(attr, []).append((at, m, before, node))
        for attr, ps in puts.items():
            put_when = guards.f_or(*(g for g, _ in ps))
            if not guards.rank_atoms(put_when) or guards.satisfying(put_when) is None:
                continue
            for guard, m, gates, node in reads.get(attr, ()):
                if not guards.rank_atoms(guard) or guards.satisfying(guard) is None:
                    continue
                if guards.satisfying(guards.f_and(guard, put_when)) is not None:
                    continue  # some rank both fills and reads it
                at = gates[0] if gates else node  # the first early exit on a rank before it
                at_node = at.test if isinstance(at, ast.If) else at
                out.append([cls.name, attr, m.name, at.lineno, lines.col(at_node.lineno, at_node.col_offset),
                            at_node.end_lineno, lines.col(at_node.end_lineno, at_node.end_col_offset),
                            guards.describe(guard), guards.describe(put_when), ps[0][1], node.lineno])
                break
    return out


class RankMismatchedHandoff(Rule):
    def prefilter(self, data: bytes) -> bool:
        return (b"is_last_rank" in data or b"is_first_rank" in data) and any(t.encode() in data for t in _GLOBAL_FIRST_TEXT)

    def collect(self, tree, lines):
        text = lines.source
        if ("is_last_rank" not in text and "is_first_rank" not in text) or not any(t in text for t in _GLOBAL_FIRST_TEXT):
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        out = []
        for cls, attr, method, line, col, end_line, end_col, read_when, put_when, put_line, read_line \
                in ctx.facts(self.code) or ():
            message = (f"`self.{attr}` of `{cls}` is filled only when {put_when} (line {put_line}) and read in "
                       f"`{method}` only when {read_when} (line {read_line}): no pipeline-parallel rank does both, "
                       f"and each rank's object sees only its own writes, so under pipeline parallelism the reader "
                       f"never gets what the writer produced.")
            explanation = [f"every write of `self.{attr}` that adds to it runs when {put_when}",
                           f"this gate makes `{method}` read it only when {read_when}",
                           "no rank satisfies both with pipeline_parallel_size >= 2 (the first and the last rank "
                           "differ; global rank 0 is on the first stage)"]
            out.append(self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help=f"Gate the reader on the rank that fills `self.{attr}` (the last stage's first tensor-parallel "
                     f"rank for what the last stage collects), or fill it where it is read",
                witness={"ranks": "every pipeline-parallel rank (pipeline_parallel_size >= 2)", "config": {}}))
        return out


RULE = RankMismatchedHandoff(
    code="PPA408",
    name="rank-mismatched-handoff",
    summary="an attribute is filled on one pipeline-parallel rank and read only on another",
    version=1,
)

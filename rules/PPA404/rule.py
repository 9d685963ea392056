"""PPA404 rank-precondition: a method that asserts (or raises unless) it runs on the first or the
last pipeline-parallel rank is called from a site whose guard does not imply that rank (see
README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk


def _ast():
    import ast

    return ast


def _aliases(fn) -> set[str]:
    """Locals bound to ``get_pp_group()`` in ``fn``."""
    ast = _ast()
    out = set()
    for n in _fast_walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) \
                and getattr(n.value.func, "id", getattr(n.value.func, "attr", None)) == "get_pp_group":
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return out


def _rank_literal(node, aliases):
    """``("last", True)`` for ``get_pp_group().is_last_rank`` / ``pp.is_last_rank`` (``pp`` a local
    bound to ``get_pp_group()``), ``("last", False)`` for its negation; ``None`` otherwise."""
    from pp_attr_lint.semantic.guards import FIRST, rank_predicate

    ast = _ast()
    neg = False
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        neg, node = not neg, node.operand
    rank = rank_predicate(node) if isinstance(node, ast.Attribute) else None
    if rank is not None:
        v = node.value
        if (isinstance(v, ast.Call) and getattr(v.func, "id", getattr(v.func, "attr", None)) == "get_pp_group") \
                or (isinstance(v, ast.Name) and v.id in aliases):
            return ("first" if rank == FIRST else "last", not neg)
    return None


def _precondition(fn):
    """The rank literal that ``fn`` asserts before anything else that branches: ``assert
    pp.is_last_rank`` or ``if not get_pp_group().is_last_rank: raise ...``; ``None`` when none."""
    ast = _ast()
    aliases = _aliases(fn)
    for st in fn.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue  # the docstring
        if isinstance(st, ast.Assign):
            continue  # `pp = get_pp_group()`
        if isinstance(st, ast.Assert):
            lit = _rank_literal(st.test, aliases)
            if lit is not None:
                return lit, st
            continue
        if isinstance(st, ast.If) and st.body and isinstance(st.body[-1], ast.Raise) and not st.orelse:
            lit = _rank_literal(st.test, aliases)
            if lit is not None:
                return (lit[0], not lit[1]), st
            continue
        return None
    return None


def _need(lit) -> tuple:
    """The rank formula of a literal ``("last", True)``: ``LAST``; ``("last", False)``: not it."""
    from pp_attr_lint.semantic.guards import FIRST, LAST, f_not

    rank = FIRST if lit[0] == "first" else LAST
    return rank if lit[1] else f_not(rank)


def _collect(tree, lines) -> list:
    """``[[class, caller, callee, need rank, need is, line, col, end_line, end_col, assert line]]``
    of each ``self.callee(...)`` whose guard does not imply the rank the callee asserts."""
    from pp_attr_lint.semantic.flow import FunctionGuards
    from pp_attr_lint.semantic.state import InstanceState, self_atom

    ast = _ast()
    out = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        needs = {}
        for name, m in methods.items():
            body = lines.span(m)
            if "is_last_rank" not in body and "is_first_rank" not in body:
                continue  # no rank predicate: no precondition (and no walk)
            got = _precondition(m)
            if got is not None:
                needs[name] = got
        if not needs:
            continue
        judge = InstanceState(cls, lines)
        bodies = {name: lines.span(m) for name, m in methods.items()}
        memo: dict[str, list] = {}

        def calls_of(name: str) -> list:
            """``[(callee, call, guard)]`` of the ``self.callee(...)`` calls of method ``name`` (its
            guards are read on first use; a call in a nested function is not one of its own)."""
            got = memo.get(name)
            if got is None:
                m = methods[name]
                guards = FunctionGuards(m, lines, atom_of=self_atom)
                got = memo[name] = [(n.func.attr, n, guards.of(n)) for n in _fast_walk(m)
                                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                                    and guards.of(n) is not None]
            return got

        def callers(callee: str) -> list[str]:
            return [n for n, body in bodies.items() if f"self.{callee}(" in body]

        def reachable_everywhere(caller: str, need, depth: int = 0) -> bool:
            """Whether ``caller`` may run on a rank that breaks ``need``: a public method (the
            engine calls it), or a private one called from such a site."""
            if not caller.startswith("_") or caller.startswith("__"):
                return True
            if depth > 2:
                return False
            for other in callers(caller):
                for callee, call, guard in calls_of(other):
                    if callee == caller and judge.verdict(guard, _need(need)) is False \
                            and reachable_everywhere(other, need, depth + 1):
                        return True
            return False

        sites = {name: [c for c in calls_of(name) if c[0] in needs]
                 for name in {n for callee in needs for n in callers(callee)}}
        for caller, calls in sites.items():
            for callee, call, guard in calls:
                if callee not in needs or callee == caller:
                    continue
                (rank, want), st = needs[callee]
                if judge.verdict(guard, _need((rank, want))) is not False:
                    continue
                if not reachable_everywhere(caller, (rank, want)):
                    continue
                out.append([cls.name, caller, callee, rank, want, call.lineno,
                            lines.col(call.lineno, call.col_offset), call.end_lineno,
                            lines.col(call.end_lineno, call.end_col_offset), st.lineno])
    return out


_PREDICATE_BYTES = (b"is_last_rank", b"is_first_rank")
_STATEMENT_STARTS = (b"if ", b"elif ", b"return ", b"while ", b"for ", b"with ", b"yield ", b"@", b"#", b"def ",
                     b"class ", b"lambda")


class RankPrecondition(Rule):
    def prefilter(self, data: bytes) -> bool:
        """A line that names a rank predicate may assert it: an ``assert`` line, an ``if`` line
        whose next lines raise, or a line that is not a statement of another kind (a continuation
        of a multi-line ``assert`` or ``if``, an assignment that starts one)."""
        if not any(p in data for p in _PREDICATE_BYTES):
            return False
        lines = data.split(b"\n")
        for k, line in enumerate(lines):
            if b"is_last_rank" not in line and b"is_first_rank" not in line:
                continue
            s = line.lstrip()
            if s.startswith(b"assert"):
                return True
            if s.startswith(b"if ") or s.startswith(b"if("):
                following = [x.strip() for x in lines[k + 1:k + 4] if x.strip()]
                if any(x.startswith(b"raise") for x in following) or not line.rstrip().endswith(b":"):
                    return True  # raises, or a test that goes on on the next lines
                continue
            if s.startswith(_STATEMENT_STARTS):
                continue
            head = s.split(b"=", 1)[0] if b"=" in s else b""
            if head and b"(" not in head and b"[" not in head:
                continue  # `x = pp.is_last_rank ...`: an assignment (a flag, not a precondition)
            return True
        return False

    def collect(self, tree, lines):
        # runs on every parsed file: one without a rank predicate has no precondition to read
        text = lines.source
        if "is_last_rank" not in text and "is_first_rank" not in text:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        out = []
        for cls, caller, callee, rank, want, line, col, end_line, end_col, at in ctx.facts(self.code) or ():
            where = f"the {rank} pipeline-parallel rank" if want else f"a pipeline-parallel rank that is not the {rank}"
            broken = f"not the {rank}" if want else f"the {rank}"
            message = (f"`{cls}.{caller}` calls `self.{callee}()`, which asserts it runs on {where} (line {at}), "
                       f"from a site whose guard does not imply that rank: AssertionError on {broken} rank "
                       f"of a pipeline of size >= 2 whenever this path is taken.")
            explanation = [f"`{callee}` checks `{'' if want else 'not '}is_{rank}_rank` at line {at}",
                           f"the path to this call in `{caller}` can be taken on {broken} rank"]
            out.append(self.finding(ctx, line, col, end_line, end_col, message, explanation,
                                    help=f"Take this path only on that rank: add "
                                         f"`{'' if want else 'not '}get_pp_group().is_{rank}_rank` to the guard",
                                    witness={"ranks": f"{broken} rank", "config": {}}))
        return out


RULE = RankPrecondition(
    code="PPA404",
    name="rank-precondition",
    summary="a method that asserts a pipeline-parallel rank is called where that rank is not implied",
    needles=F.RANK_PREDICATE_NAMES,
    version=1,
)

"""PPA404 rank-precondition: a method that asserts (or raises unless) it runs on the first or the
last pipeline-parallel rank is called from a site whose guard does not imply that rank (see
README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk


_PREDICATES = {F.FIRST_RANK_PREDICATE: "first", F.LAST_RANK_PREDICATE: "last"}
# names of the pipeline's size: a test on them holds on every rank alike
_SIZE_NAMES = frozenset({"world_size", "pp_size", "pipeline_parallel_size"})


def _ast():
    import ast

    return ast


def _rank_literal(node, aliases):
    """``("last", True)`` for ``get_pp_group().is_last_rank`` / ``pp.is_last_rank`` (``pp`` a local
    bound to ``get_pp_group()``), ``("last", False)`` for its negation; ``None`` otherwise."""
    ast = _ast()
    neg = False
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        neg, node = not neg, node.operand
    if isinstance(node, ast.Attribute) and node.attr in _PREDICATES:
        v = node.value
        if (isinstance(v, ast.Call) and getattr(v.func, "id", getattr(v.func, "attr", None)) == "get_pp_group") \
                or (isinstance(v, ast.Name) and v.id in aliases):
            return (_PREDICATES[node.attr], not neg)
    return None


def _aliases(fn) -> set[str]:
    """Locals bound to ``get_pp_group()`` in ``fn``."""
    ast = _ast()
    out = set()
    for n in _fast_walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) \
                and getattr(n.value.func, "id", getattr(n.value.func, "attr", None)) == "get_pp_group":
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return out


def _conjuncts(test, positive: bool):
    """The atoms a test (or its negation) asserts together: ``[(node, polarity)]``; ``None`` when
    the test is a disjunction that asserts nothing definite."""
    ast = _ast()
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _conjuncts(test.operand, not positive)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == positive:
            out = []
            for v in test.values:
                got = _conjuncts(v, positive)
                if got is None:
                    return None
                out += got
            return out
        return None  # `not (a and b)`, `a or b`: nothing definite
    return [(test, positive)]


def _exits(body) -> bool:
    ast = _ast()
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _path_statements(stmts, conds=(), handlers: bool = True, defs: bool = False):
    """``(statement, path conditions)`` for every statement of ``stmts`` and the blocks inside
    them: the conditions of the enclosing ``if``s and of earlier ``if ...: return`` in the same
    blocks, ``[(atom node, polarity)]`` (``None`` for one that asserts nothing definite).  An
    ``if`` comes before its branches, any other statement after its own blocks; ``handlers``:
    enter ``except`` blocks; ``defs``: enter nested functions and classes."""
    ast = _ast()
    conds = list(conds)
    for st in stmts:
        if isinstance(st, ast.If):
            pos, neg = _conjuncts(st.test, True), _conjuncts(st.test, False)
            yield st, conds
            yield from _path_statements(st.body, conds + ([None] if pos is None else pos), handlers, defs)
            yield from _path_statements(st.orelse, conds + ([None] if neg is None else neg), handlers, defs)
            if _exits(st.body) and not st.orelse:
                conds = conds + ([None] if neg is None else neg)
            continue
        if defs or not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(st, field, None)
                if sub and isinstance(sub, list) and isinstance(sub[0], ast.stmt):
                    yield from _path_statements(sub, conds, handlers, defs)
                elif handlers and sub and isinstance(sub, list) and isinstance(sub[0], ast.excepthandler):
                    for h in sub:
                        yield from _path_statements(h.body, conds, handlers, defs)
        yield st, conds


def _paths(fn):
    """``{id(call): (call, [(atom node, polarity)])}``: every call in ``fn`` with the conditions of
    the path to it (see :func:`_path_statements`)."""
    ast = _ast()
    out = {}
    for st, conds in _path_statements(fn.body):
        if isinstance(st, ast.If):
            exprs = [st.test]
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        else:
            exprs = [c for c in ast.iter_child_nodes(st) if isinstance(c, ast.expr)]
        for e in exprs:
            for n in _fast_walk(e):
                if isinstance(n, ast.Call):
                    out[id(n)] = (n, conds)
    return out


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


def _state_assignments(cls):
    """``{attr: [(is None, [path conditions])]}`` of every ``self.attr = value`` in the class's
    methods (tuple targets included)."""
    ast = _ast()
    out: dict[str, list] = {}
    for m in cls.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        aliases = _aliases(m)
        for st, conds in _path_statements(m.body, handlers=False, defs=True):
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    pairs = []
                    if isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(t.elts) == len(st.value.elts):
                        pairs = list(zip(t.elts, st.value.elts))
                    elif not isinstance(t, ast.Tuple):
                        pairs = [(t, st.value)]
                    else:
                        pairs = [(e, None) for e in t.elts]
                    for target, value in pairs:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                                and target.value.id == "self":
                            out.setdefault(target.attr, []).append((_kind(value), conds, aliases, m.name))
    return out


def _kind(value) -> str:
    """What a stored value is: ``"none"``, ``"falsy"`` (another falsy constant), ``"value"`` (any
    other expression) or ``"unknown"`` (a tuple target's element)."""
    ast = _ast()
    if value is None:
        return "unknown"
    if isinstance(value, ast.Constant):
        return "none" if value.value is None else ("falsy" if not value.value else "value")
    if isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.Set)) and not getattr(value, "elts", getattr(value, "keys", None)):
        return "falsy"
    return "value" if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Call)) else "unknown"


def _matches(kind: str, want: str) -> bool:
    """Whether a stored value of ``kind`` can make a test that wants ``want`` true."""
    if kind == "unknown":
        return True
    return {"none": kind == "none", "value": kind in ("value", "falsy"), "truthy": kind == "value",
            "falsy": kind in ("none", "falsy")}[want]


def _rank_lits(conds, aliases):
    """The rank literals among path conditions; ``None`` when a condition is indefinite."""
    out = set()
    for c in conds:
        if c is None:
            return None
        node, pol = c
        lit = _rank_literal(node, aliases)
        if lit is not None:
            out.add((lit[0], lit[1] == pol))
    return out


class _Judge:
    def __init__(self, cls):
        self.cls = cls
        self._state = None

    @property
    def state(self) -> dict:
        """The class's stores (:func:`_state_assignments`), read at the first test of one."""
        if self._state is None:
            self._state = _state_assignments(self.cls)
        return self._state

    def atom_implies(self, node, pol, need, aliases) -> bool | None:
        """Whether atom ``node`` (true when ``pol``) implies rank literal ``need``: ``True``,
        ``False`` (it can hold on a rank that breaks ``need``), ``None`` (cannot tell)."""
        ast = _ast()
        lit = _rank_literal(node, aliases)
        if lit is not None:
            return (lit[0], lit[1] == pol) == need
        attr, want = None, None  # want: "none", "value" (not None), "truthy", "falsy"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
            attr = _self_attr(node.left)
            want = "none" if isinstance(node.ops[0], ast.Is) == pol else "value"
        elif _self_attr(node) is not None:
            attr, want = _self_attr(node), ("truthy" if pol else "falsy")
        if attr is not None and attr in self.state:
            ways = [(kind, conds, al, method) for kind, conds, al, method in self.state[attr] if _matches(kind, want)]
            if not ways:
                return None  # never holds: a dead path
            verdicts = []
            for kind, conds, al, method in ways:
                lits = _rank_lits(conds, al)
                if lits is None or (method != "__init__" and method.startswith("_")):
                    return None  # stored under conditions not read, or by a method run who knows where
                verdicts.append(need in lits)
            return all(verdicts)
        names = {n.id for n in _fast_walk(node) if isinstance(n, ast.Name)} | {
            n.attr for n in _fast_walk(node) if isinstance(n, ast.Attribute)}
        if names & _SIZE_NAMES or isinstance(node, ast.Constant):
            return False  # the pipeline's size: the same on every rank
        return None  # a call, a parameter, an attribute of another object: may depend on the rank

    def site_implies(self, conds, need, aliases) -> bool | None:
        verdicts = []
        for c in conds:
            if c is None:
                return None
            verdicts.append(self.atom_implies(c[0], c[1], need, aliases))
        if any(v is True for v in verdicts):
            return True
        if any(v is None for v in verdicts):
            return None
        return False


def _self_attr(node):
    ast = _ast()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _collect(tree, lines) -> list:
    """``[[class, caller, callee, need rank, need is, line, col, end_line, end_col, assert line]]``
    of each ``self.callee(...)`` whose path does not imply the rank the callee asserts."""
    ast = _ast()
    out = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        needs = {}
        for name, m in methods.items():
            body = "".join(lines.lines[m.lineno - 1:m.end_lineno])
            if "is_last_rank" not in body and "is_first_rank" not in body:
                continue  # no rank predicate: no precondition (and no walk)
            got = _precondition(m)
            if got is not None:
                needs[name] = got
        if not needs:
            continue
        judge = _Judge(cls)
        bodies = {name: "".join(lines.lines[m.lineno - 1:m.end_lineno]) for name, m in methods.items()}
        memo: dict[str, list] = {}

        def calls_of(name: str) -> list:
            """``[(callee, call, path conditions, aliases)]`` of the ``self.callee(...)`` calls of
            method ``name`` (its paths are read on first use)."""
            got = memo.get(name)
            if got is None:
                m = methods[name]
                al = _aliases(m) if "get_pp_group" in bodies[name] else set()  # no call of it: no walk
                got = memo[name] = [(call.func.attr, call, conds, al) for call, conds in _paths(m).values()
                                    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                                    and call.func.value.id == "self"]
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
                for callee, call, conds, al in calls_of(other):
                    if callee == caller and judge.site_implies(conds, need, al) is False \
                            and reachable_everywhere(other, need, depth + 1):
                        return True
            return False

        sites = {name: [c for c in calls_of(name) if c[0] in needs]
                 for name in {n for callee in needs for n in callers(callee)}}
        for caller, calls in sites.items():
            for callee, call, conds, al in calls:
                if callee not in needs or callee == caller:
                    continue
                (rank, want), st = needs[callee]
                if judge.site_implies(conds, (rank, want), al) is not False:
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
        text = "".join(lines.lines)
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
    needles=("is_last_rank", "is_first_rank"),
    version=1,
)

"""The flow walker: each statement and expression of a function body with its guard (a formula of
:mod:`.guards`), the receivers its tests checked, and whether a handler catches an
``AttributeError`` around it.

:class:`FlowWalker` reads ``if``/``elif``/``else``, early ``return``/``raise``/``continue``/
``break`` after an ``if``, ``and`` short-circuits, conditional expressions, comprehension
filters (as checks of receivers), ``try`` bodies under handlers of ``AttributeError``,
``contextlib.suppress``, local flags assigned once (``keep = pp.is_first_rank or tie``) and
nested functions called by name.  A subclass records what it needs through the hooks
:meth:`FlowWalker.assign`, :meth:`FlowWalker.attribute`, :meth:`FlowWalker.call` and
:meth:`FlowWalker.loop_binding` (:meth:`FlowWalker.loop_bindings`); :class:`ReturnWalker` and :class:`CallWalker` are two such.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager

from ..index.astutil import child_nodes, dotted_name, ref_chain
from ..index.astutil import walk as fast_walk
from .guards import FALSE, RANK_ATOMS, TRUE, atoms, f_and, f_not, f_or, formula, rename


def exits(body: list) -> bool:
    """Whether a block ends in ``return``, ``raise``, ``continue`` or ``break``."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def guards_chain(test: ast.AST, chains: set) -> None:
    """What a test checks, added to ``chains``: ``(chain, None)`` for ``isinstance(x, ...)`` or
    ``x is None`` (any read through ``x`` may be on another class than assumed), ``(chain, "a")``
    for ``hasattr(x, "a")`` and ``getattr(x, "a", default)`` (only ``x.a`` is safe); and
    ``(("#index", *chain, slot), "a")`` for a read ``chain[slot].a`` that the test surely evaluated
    before what it guards runs (that read succeeded, so the same read after it cannot fail)."""
    for sub in surely_evaluated(test):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Subscript):
            c = ref_chain(sub.value.value)
            if c is not None:
                chains.add((("#index", *c, ast.dump(sub.value.slice)), sub.attr))
    for sub in fast_walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("isinstance", "hasattr", "getattr") and sub.args:
            c = ref_chain(sub.args[0])
            if c is None and isinstance(sub.args[0], ast.Subscript):  # `isinstance(x.layers[i], ...)`
                base = ref_chain(sub.args[0].value)
                c = None if base is None else ("#index", *base, ast.dump(sub.args[0].slice))
            if c is None:
                continue
            if sub.func.id == "isinstance":
                chains.add((c, None))
            elif len(sub.args) >= 2 and isinstance(sub.args[1], ast.Constant) and isinstance(sub.args[1].value, str):
                chains.add((c, sub.args[1].value))
            else:
                chains.add((c, None))
        elif isinstance(sub, ast.Compare):
            for side in [sub.left, *sub.comparators]:
                c = ref_chain(side)
                if c is not None:
                    chains.add((c, None))


def surely_evaluated(node: ast.AST) -> list:
    """The nodes of expression ``node`` that every evaluation of it reaching a truthy result
    evaluates: all operands of ``and``, the first of ``or``, the test of a conditional expression,
    nothing inside a lambda, the first iterable of a comprehension."""
    out = []
    todo = [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if isinstance(n, ast.BoolOp):
            todo.extend(n.values if isinstance(n.op, ast.And) else n.values[:1])
        elif isinstance(n, ast.IfExp):
            todo.append(n.test)
        elif isinstance(n, ast.Lambda):
            continue
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            todo.append(n.generators[0].iter)
        else:
            todo.extend(child_nodes(n))
    return out


def catches_attribute_error(handlers) -> bool:
    """Whether one of the ``except`` handlers catches an ``AttributeError`` (bare, ``Exception``,
    ``BaseException`` or ``AttributeError`` itself)."""
    for h in handlers:
        t = h.type
        names = [t] if not isinstance(t, ast.Tuple) else list(t.elts)
        if t is None or any((dotted_name(n) or "").rsplit(".", 1)[-1] in ("AttributeError", "Exception", "BaseException")
                            for n in names):
            return True
    return False


def is_guarded(chain: tuple, attr: str | None, guarded: frozenset) -> bool:
    """Whether a read ``chain.attr`` is covered by a check of :func:`guards_chain` in ``guarded``."""
    for g, a in guarded:
        if a is None and (chain[:len(g)] == g or g[:len(chain)] == chain):
            return True
        if a is not None and chain == g and attr == a:
            return True
    return False


class FlowWalker:
    """Walks one function body with the guard of each statement and expression.

    ``block(body, guard, guarded, protected, loops)`` walks statements: ``guard`` the formula
    that holds where they run, ``guarded`` the :func:`guards_chain` checks that hold there,
    ``protected`` whether a handler around them catches an ``AttributeError``, ``loops`` what
    :meth:`loop_binding` bound for the enclosing loops.  ``flags`` maps local names assigned a
    test once, unconditionally, to its formula; ``nested`` the nested functions and their call
    sites (judged by a subclass after the body, if at all)."""

    # whether a lambda bound once to a local name that is only called by name is walked as a
    # nested function (where it is called, see ``nested``) rather than as a deferred body
    named_lambdas = False

    def __init__(self, lines, fn: ast.FunctionDef, cls: str | None = None, atom_of=None):
        self.lines = lines
        self.cls = cls
        self.fn = fn
        self.atom_of = atom_of  # names the atoms of the tests a caller reads itself (guards.formula)
        self.maybe = 0  # > 0 inside a block that a call may skip (a loop's body, a handler)
        self.depth = 0  # the nesting of the block being walked: 1 for the function's own body
        args = fn.args.posonlyargs + fn.args.args
        self.self_name = args[0].arg if (cls is not None and args) else None
        self.flags: dict[str, tuple] = {}  # local variables assigned a test once: name -> formula
        # nested functions of the body: name -> [def node, guard at the def, call sites
        # (guard, guarded, protected, call, the lambda the call sits in or None)]; None for a
        # name bound twice
        self.nested: dict[str, list | None] = {}
        self.inner: tuple | None = None  # while a subclass walks a nested function: its own data
        self.deferring: list = []  # the lambdas and stored nested functions whose bodies are being walked

    def walk(self, guard: tuple = TRUE) -> None:
        """Walk the whole body of the function under ``guard``."""
        self.block(self.fn.body, guard, frozenset(), False, {})

    def deferred(self) -> ast.AST | None:
        """The innermost ``Lambda`` (or nested ``FunctionDef``, see :meth:`walk_deferred`) whose
        body is being walked: what is walked now runs only when something calls that lambda or
        function later, if at all, not when the function runs; ``None`` in the function's own
        statements (and in a nested function called by name where it runs)."""
        return self.deferring[-1] if self.deferring else None

    def walk_deferred(self, node, body: list, guard, guarded, protected, loops) -> None:
        """Walk ``body``, the statements of ``node`` (a nested function that is stored or handed
        out rather than called here by name, or a ``Lambda`` a call of a nested function sits in),
        as a body that runs only when it is called later: :meth:`deferred` names ``node`` meanwhile."""
        with self._deferring(node):
            self.block(body, guard, guarded, protected, loops)

    @contextmanager
    def _deferring(self, node):
        """While walking the body of ``node`` (a lambda or a stored nested function), which runs
        only when something calls it later, if at all: :meth:`deferred` names it, and what is
        walked may be skipped by a call (``maybe``)."""
        self.deferring.append(node)
        self.maybe += 1
        try:
            yield
        finally:
            self.maybe -= 1
            self.deferring.pop()

    def formula(self, node) -> tuple:
        """The formula of a test here (the local flags known at this point included)."""
        return formula(node, self.flags, self.atom_of)

    def split(self, test, guard, guarded) -> tuple:
        """The guards of the two branches of ``test`` and the receivers it checks."""
        chains = set(guarded)
        guards_chain(test, chains)
        t = self.formula(test)
        return f_and(guard, t), f_and(guard, f_not(t)), frozenset(chains)

    def pos(self, node) -> tuple:
        """``(row, col, end_row, end_col)`` of a node: 1-based rows, 0-based character columns."""
        return (node.lineno, self.lines.col(node.lineno, node.col_offset),
                node.end_lineno, self.lines.col(node.end_lineno, node.end_col_offset))

    # hooks -----------------------------------------------------------------------------------
    def assign(self, targets, value, guard) -> None:
        """An assignment of ``value`` to ``targets`` runs under ``guard`` (not in a nested function)."""

    def attribute(self, node: ast.Attribute, guard, guarded, protected, loops) -> None:
        """An attribute is read (``node.ctx`` is ``Load``)."""

    def call(self, node: ast.Call, guard, guarded, protected, loops) -> None:
        """A call is evaluated (before its children are walked)."""

    def narrowed(self, stmt: ast.If, holds: bool) -> None:
        """The statements after ``stmt`` in its block run only where its test is ``holds``: one
        of its branches exits (``if test: return`` narrows by ``not test``)."""

    def loop_binding(self, target: ast.AST, it: ast.AST) -> tuple | None:
        """``(name, value)`` to bind in ``loops`` for a loop ``for target in it`` (also of a
        comprehension); ``None`` binds nothing."""
        return None

    def loop_bindings(self, target: ast.AST, it: ast.AST) -> dict:
        """Name -> value for each name to bind in ``loops`` for a loop ``for target in it`` (also
        of a comprehension): by default the one pair of :meth:`loop_binding`, if any; a subclass
        that binds several names (``for a, b in zip(x, y)``) overrides this."""
        bound = self.loop_binding(target, it)
        return {} if bound is None else {bound[0]: bound[1]}

    # statements ------------------------------------------------------------------------------
    def block(self, body: list, guard: tuple, guarded: frozenset, protected: bool, loops: dict) -> None:
        self.depth += 1
        try:
            self.statements(body, guard, guarded, protected, loops)
        finally:
            self.depth -= 1

    def statements(self, body: list, guard: tuple, guarded: frozenset, protected: bool, loops: dict) -> None:
        for stmt in body:
            self.stmt(stmt, guard, guarded, protected, loops)
            if isinstance(stmt, ast.If) and (exits(stmt.body) or exits(stmt.orelse)):
                # `if test: return` guards every statement after it with `not test`, an `else`
                # that returns with `test`; when both return, nothing after runs
                t = self.formula(stmt.test)
                if exits(stmt.body) and exits(stmt.orelse):
                    guard = FALSE
                else:
                    guard = f_and(guard, f_not(t) if exits(stmt.body) else t)
                    self.narrowed(stmt, not exits(stmt.body))
                chains = set(guarded)
                guards_chain(stmt.test, chains)
                guarded = frozenset(chains)
            elif isinstance(stmt, ast.Assert):
                # what follows runs only where the assertion held; it checks no receiver: where
                # `assert isinstance(layer, X)` fails, it raises itself (it is no guard)
                guard = f_and(guard, self.formula(stmt.test))
            elif isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                guard = FALSE  # nothing after it in this block runs

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        if isinstance(stmt, ast.If):
            self.exprs([stmt.test], guard, guarded, protected, loops)
            yes, no, chains = self.split(stmt.test, guard, guarded)
            self.block(stmt.body, yes, chains, protected, loops)
            self.block(stmt.orelse, no, chains, protected, loops)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.exprs([stmt.iter], guard, guarded, protected, loops)
            inner = dict(loops)
            if isinstance(stmt.target, (ast.Name, ast.Tuple)):
                inner.update(self.loop_bindings(stmt.target, stmt.iter))
            self.maybe += 1  # the body may run no time; `else` not after a `break`
            self.block(stmt.body, guard, guarded, protected, inner)
            self.block(stmt.orelse, guard, guarded, protected, loops)
            self.maybe -= 1
            return
        if isinstance(stmt, (ast.While,)):
            self.exprs([stmt.test], guard, guarded, protected, loops)
            yes, no, chains = self.split(stmt.test, guard, guarded)
            self.maybe += 1
            self.block(stmt.body, yes, chains, protected, loops)
            self.block(stmt.orelse, no, chains, protected, loops)
            self.maybe -= 1
            return
        if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
            self.block(stmt.body, guard, guarded, protected or catches_attribute_error(stmt.handlers), loops)
            self.maybe += 1  # a handler runs only after a raise, `else` only without one
            for h in stmt.handlers:
                self.block(h.body, guard, guarded, protected, loops)
            self.block(stmt.orelse, guard, guarded, protected, loops)
            self.maybe -= 1
            self.block(stmt.finalbody, guard, guarded, protected, loops)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            suppress = any(isinstance(i.context_expr, ast.Call)
                           and (dotted_name(i.context_expr.func) or "").endswith("suppress") for i in stmt.items)
            self.exprs([i.context_expr for i in stmt.items], guard, guarded, protected, loops)
            self.block(stmt.body, guard, guarded, protected or suppress, loops)
            return
        if isinstance(stmt, getattr(ast, "Match", ())):
            self.exprs([stmt.subject], guard, guarded, protected, loops)
            self.maybe += 1  # one case runs, or none
            for case in stmt.cases:
                if case.guard is not None:
                    self.expr(case.guard, guard, guarded, protected, loops)
                self.block(case.body, guard, guarded, protected, loops)
            self.maybe -= 1
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # judged where it is called (a subclass's walk of nested functions); bound twice: never
            self.nested[stmt.name] = [stmt, guard, []] if stmt.name not in self.nested else None
            return
        if isinstance(stmt, ast.ClassDef):
            return  # nested classes run elsewhere (or never)
        if self.named_lambdas and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Lambda) \
                and only_called(self.fn, stmt.targets[0].id, stores=1):
            # `first = lambda: ...` and only `first(...)` after: a nested function by another name
            name = stmt.targets[0].id
            self.nested[name] = [as_function(name, stmt.value), guard, []] if name not in self.nested else None
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if self.inner is None:  # what a nested function assigns is not recorded
                self.assign(targets, stmt.value, guard)
            for t in targets:
                if isinstance(t, ast.Name):
                    if t.id in self.flags or (guard != TRUE and self.depth > 1):
                        # set twice, or in a branch: opaque (in the function's own body, after an
                        # `assert` or an early `return`, every later line ran it)
                        self.flags[t.id] = ("a", f"{t.id}@{stmt.lineno}")
                    else:
                        self.flags[t.id] = self.formula(stmt.value)
        self.exprs([stmt], guard, guarded, protected, loops)

    # expressions -----------------------------------------------------------------------------
    def exprs(self, nodes, guard, guarded, protected, loops) -> None:
        for node in nodes:
            self.expr(node, guard, guarded, protected, loops)

    def expr(self, node, guard, guarded, protected, loops) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, guard, guarded, protected, loops)
            yes, no, chains = self.split(node.test, guard, guarded)
            self.expr(node.body, yes, chains, protected, loops)
            self.expr(node.orelse, no, chains, protected, loops)
            return
        if isinstance(node, ast.BoolOp):
            # `a and b` evaluates `b` only where `a` holds, `a or b` only where it does not
            chains = set(guarded)
            g = guard
            for v in node.values:
                self.expr(v, g, frozenset(chains), protected, loops)
                guards_chain(v, chains)
                t = self.formula(v)
                g = f_and(g, t if isinstance(node.op, ast.And) else f_not(t))
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(loops)
            chains = set(guarded)
            for gen in node.generators:
                self.expr(gen.iter, guard, frozenset(chains), protected, inner)
                inner.update(self.loop_bindings(gen.target, gen.iter))
            g = guard  # a filter runs where the ones before it held, the element where all did
            for gen in node.generators:
                for cond in gen.ifs:
                    self.expr(cond, g, frozenset(chains), protected, inner)
                    guards_chain(cond, chains)
                    g = f_and(g, self.formula(cond))
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for e in elts:
                self.expr(e, g, frozenset(chains), protected, inner)
            return
        if isinstance(node, ast.Lambda):
            with self._deferring(node):  # its body runs where it is called, if at all
                self.expr(node.body, guard, guarded, protected, loops)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self.attribute(node, guard, guarded, protected, loops)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and self.nested.get(node.func.id):
                self.nested[node.func.id][2].append((guard, guarded, protected, node, self.deferred()))
            self.call(node, guard, guarded, protected, loops)
        for child in child_nodes(node):
            self.expr(child, guard, guarded, protected, loops)


_WRAPPING = tuple(getattr(ast, n) for n in ("Try", "TryStar", "With", "AsyncWith") if hasattr(ast, n))


class FunctionGuards(FlowWalker):
    """The guard of every statement and expression of one function's body (outside nested
    functions and classes), walked once at the first question.

    ``of(node)`` is the formula under which ``node`` runs on a call (``None`` for a node the walk
    does not reach); ``every_call(node)`` the ranks on which it runs on every call (a formula
    over the rank atoms alone), ``None`` when that depends on anything else: another test, a
    loop that may not run, a handler; ``test_formula(if)`` the formula of an ``if`` test as the
    walk read it (local flags included); ``deciding_tests(statement)`` the ``if`` statements
    whose tests decide whether a statement runs; ``in_try_or_with(node)`` whether a handler or a
    context manager around ``node`` may catch what it raises."""

    def __init__(self, fn, lines=None, cls: str | None = None, atom_of=None, start: tuple = TRUE):
        super().__init__(lines, fn, cls, atom_of)
        self.start = start
        self.seen: dict | None = None  # id(node) -> (guard, in a block a call may skip)
        self.tests: dict = {}  # id(if statement) -> the formula of its test where the walk read it
        self.decided: dict = {}  # id(statement) -> the `(if, holds)` pairs that decide it
        self.deciders: tuple = ()  # those of the statements being walked
        self.branching = None  # the `if` whose blocks are walked next
        self.wrapping = 0  # `try` / `with` statements around the statements being walked
        self.wrapped: set = set()  # id() of the statements walked inside one

    def walked(self) -> dict:
        if self.seen is None:
            self.seen = {}
            self.walk(self.start)
        return self.seen

    def block(self, body, guard, guarded, protected, loops) -> None:
        saved, b = self.deciders, self.branching
        if b is not None and (body is b.body or body is b.orelse):
            self.deciders = saved + ((b, body is b.body),)
        self.branching = None
        try:
            super().block(body, guard, guarded, protected, loops)
        finally:
            self.deciders, self.branching = saved, b

    def narrowed(self, stmt, holds) -> None:
        self.deciders = self.deciders + ((stmt, holds),)  # until the end of the block

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        self.seen.setdefault(id(stmt), (guard, self.maybe > 0))
        self.decided.setdefault(id(stmt), self.deciders)
        if self.wrapping:
            self.wrapped.add(id(stmt))
        if isinstance(stmt, _WRAPPING):
            self.wrapping += 1
            try:
                super().stmt(stmt, guard, guarded, protected, loops)
            finally:
                self.wrapping -= 1
            return
        if not isinstance(stmt, ast.If):
            super().stmt(stmt, guard, guarded, protected, loops)
            return
        self.tests.setdefault(id(stmt), self.formula(stmt.test))
        outer, self.branching = self.branching, stmt
        try:
            super().stmt(stmt, guard, guarded, protected, loops)
        finally:
            self.branching = outer

    def expr(self, node, guard, guarded, protected, loops) -> None:
        self.seen.setdefault(id(node), (guard, self.maybe > 0))
        super().expr(node, guard, guarded, protected, loops)

    def of(self, node) -> tuple | None:
        got = self.walked().get(id(node))
        return None if got is None else got[0]

    def reached_statements(self) -> list:
        """``[(statement, guard)]`` for every statement of the body the walk reaches (a compound
        statement before the statements of its blocks; none of a nested function or class), in
        source order."""
        seen = self.walked()
        got = [(n, seen[id(n)][0]) for n in fast_walk(self.fn) if isinstance(n, ast.stmt) and id(n) in seen]
        return sorted(got, key=lambda p: (p[0].lineno, p[0].col_offset))

    def may_skip(self, node) -> bool | None:
        """Whether a call may run the walk's way to ``node`` and still not run ``node``, for a
        reason its guard does not hold: ``node`` lies in a loop's body, an exception handler, the
        ``else`` of a ``try`` or a loop, a ``match`` case or a lambda's body.  ``None`` when the walk
        does not reach ``node``."""
        got = self.walked().get(id(node))
        return None if got is None else got[1]

    def test_formula(self, node: ast.If) -> tuple | None:
        """The formula of the test of ``if`` statement ``node`` as the walk read it: with the
        local flags known at that point (``first = pp.is_first_rank`` ... ``if not first:`` is
        ``not @first``; a flag set twice or under a test is an opaque atom); ``None`` for an
        ``if`` the walk does not reach."""
        self.walked()
        return self.tests.get(id(node))

    def deciding_tests(self, node: ast.stmt) -> tuple | None:
        """The ``if`` statements that decide whether statement ``node`` runs, outermost first, as
        ``(if statement, holds)`` pairs: ``node`` runs only where the test is ``holds``, because
        ``node`` is in its body (``True``) or ``else`` block (``False``), or follows it in the
        same block and its other branch exits (``if test: return`` gives ``False``).  ``None``
        for a statement the walk does not reach."""
        self.walked()
        return self.decided.get(id(node))

    def in_try_or_with(self, node: ast.stmt) -> bool | None:
        """Whether statement ``node`` lies in a block of a ``try`` (a handler may catch what it
        raises) or a ``with`` (a context manager may suppress it); ``None`` for a statement the
        walk does not reach."""
        return None if id(node) not in self.walked() else id(node) in self.wrapped

    def every_call(self, node) -> tuple | None:
        got = self.walked().get(id(node))
        if got is None or got[1] or atoms(got[0]) - RANK_ATOMS or got[0] == FALSE:
            return None
        return got[0]


class ReturnWalker(FlowWalker):
    """A :class:`FlowWalker` that records the guard of every ``return`` of a function (with the
    returned value's formula, ``None`` for a falsy constant or none) in ``returns``, the
    ``Return`` statements in the same order in ``statements_returned``, and the guard of every
    ``raise`` in ``raises``; ``atom_of`` as for :func:`.guards.formula`."""

    def __init__(self, lines, fn, atom_of=None):
        super().__init__(lines, fn, atom_of=atom_of)
        self.returns: list = []
        self.statements_returned: list = []
        self.raises: list = []

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        if isinstance(stmt, ast.Raise):
            self.raises.append(guard)
            return
        if isinstance(stmt, ast.Return):
            self.statements_returned.append(stmt)
            value = stmt.value
            if value is None or (isinstance(value, ast.Constant) and not value.value):
                self.returns.append((guard, None))
            else:  # the value's formula with the local flags as they are here
                self.returns.append((guard, self.formula(value)))
            return
        super().stmt(stmt, guard, guarded, protected, loops)


class CallWalker(FlowWalker):
    """A :class:`FlowWalker` that records in ``found`` (node id -> guard) the guard of the calls
    ``targets`` (node ids) of a function."""

    def __init__(self, lines, fn, targets: set):
        super().__init__(lines, fn)
        self.targets = targets
        self.found: dict = {}

    def expr(self, node, guard, guarded, protected, loops) -> None:
        if id(node) in self.targets:
            self.found[id(node)] = guard
        super().expr(node, guard, guarded, protected, loops)


# -- nested functions --------------------------------------------------------------------------
def bound_in(fn) -> frozenset[str]:
    """The names a nested function binds itself (parameters, assignments, ``nonlocal``/``global``
    names, nested definitions): they are not the enclosing method's."""
    a = fn.args
    out = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x}
    for sub in fast_walk(fn):
        if sub is fn:
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            out.add(sub.id)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            out.update(sub.names)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(sub.name)
        elif isinstance(sub, ast.arg):
            out.add(sub.arg)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            out.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            out.update((n.asname or n.name).split(".")[0] for n in sub.names)
    return frozenset(out)


def as_function(name: str, node: ast.Lambda) -> ast.FunctionDef:
    """``lambda args: body`` as the nested function ``def name(args): return body`` (at the
    lambda's place), so that it can be walked where it is called."""
    ret = ast.Return(value=node.body)
    fn = ast.FunctionDef(name=name, args=node.args, body=[ret], decorator_list=[], returns=None, type_params=[])
    for n in (ret, fn):
        ast.copy_location(n, node)
        n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
    fn.lambda_node = node  # see definition_stores
    return fn


def definition_stores(fn) -> int:
    """How many plain assignments of its name define nested function ``fn`` (for
    :func:`only_called`): 1 for a lambda bound to a name (:func:`as_function`), else 0."""
    return 1 if getattr(fn, "lambda_node", None) is not None else 0


def unwrap_with(body: list):
    """The statements of ``body``, with the bodies of ``with`` blocks (at any depth) in their
    place: they run once, in sequence, on every rank that reaches them."""
    for st in body:
        if isinstance(st, (ast.With, ast.AsyncWith)):
            yield from unwrap_with(st.body)
        else:
            yield st


def only_called(outer, name: str, stores: int = 0) -> bool:
    """Whether every use of ``name`` in function ``outer`` calls it (``name(...)``): it is not
    handed out, returned, rebound or deleted, so its calls are all its runs.  ``stores``: how
    many plain assignments of ``name`` are its definition (1 for ``name = lambda ...``)."""
    calls = loads = 0
    for sub in fast_walk(outer):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
            calls += 1
        elif isinstance(sub, ast.Name) and sub.id == name:
            if isinstance(sub.ctx, ast.Store) and stores > 0:
                stores -= 1
                continue
            if not isinstance(sub.ctx, ast.Load):
                return False
            loads += 1
        elif isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return False
    return calls > 0 and loads == calls


def int_const(node) -> bool:
    """Whether ``node`` is an integer constant (``3``, ``-1``; not a bool)."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and int_const(node.operand))


def call_constants(fn, call: ast.Call) -> dict:
    """The parameters of nested function ``fn`` that ``call`` binds to an integer constant
    (passed by position or keyword, or left to an integer default) and that its body never
    rebinds: name -> the constant's node."""
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return {}
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    rebound = {sub.id for sub in fast_walk(fn) if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load)}
    rebound |= {n for sub in fast_walk(fn) if isinstance(sub, (ast.Global, ast.Nonlocal)) for n in sub.names}
    bound = dict(zip([p.arg for p in positional], call.args))
    bound.update({k.arg: k.value for k in call.keywords})
    out = {}
    for p in positional + a.kwonlyargs:
        v = bound.get(p.arg, defaults.get(p.arg))
        if p.arg not in rebound and v is not None and int_const(v):
            out[p.arg] = v
    return out


def branches(value, guard, names: dict | None = None) -> list:
    """``[(guard, value)]`` for each branch of a conditional expression ``value`` (nested ones
    split further); a plain value is one branch under ``guard``."""
    if isinstance(value, ast.IfExp):
        t = formula(value.test, names)
        return branches(value.body, f_and(guard, t), names) + branches(value.orelse, f_and(guard, f_not(t)), names)
    return [(guard, value)]


# -- what a function's returns and raises say --------------------------------------------------
def own_nodes(fn):
    """The nodes of ``fn``'s body outside nested functions, lambdas and classes."""
    return body_nodes(fn.body)


def body_nodes(body: list):
    """The nodes of the statements ``body`` (each statement itself included) outside the
    functions, lambdas and classes nested in them."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node)
                    if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))


def truthy_only_when(fn: ast.FunctionDef, lines) -> tuple | None:
    """A condition that holds whenever a call of the plain function ``fn`` returns a truthy value
    (the disjunction, over its ``return`` statements, of the guard that reaches each one and of
    the returned value's formula; ``return False`` / ``return None`` and falling off the end give
    nothing), or ``None`` when it says nothing (``TRUE``) or cannot be told (a generator, a
    ``return`` the walk does not reach, such as one inside a ``match``).

    ``vllm``-style ``model_should_use_tied_lm_head(config, quant)`` (Aphrodite 0.24.1,
    model_executor/models/utils.py:193) begins with ``if not getattr(config,
    "tie_word_embeddings", False): return False``, so its result implies ``tie_word_embeddings``.
    Atoms keep the module's convention (an attribute test is named by the attribute, shared with
    the caller's guards: ``config.tie_word_embeddings``), except those that only mean something
    inside ``fn`` (its parameters and local names, tests named by their text), which are renamed
    ``fn@atom`` so that no guard of a caller can name them."""
    own = list(own_nodes(fn))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own):
        return None
    w = ReturnWalker(lines, fn)
    w.walk()
    if len(w.returns) != sum(isinstance(n, ast.Return) for n in own):
        return None
    need = f_or(*(f_and(guard, value) for guard, value in w.returns if value is not None))
    if need == TRUE:
        return None
    bare = {n.id for n in own if isinstance(n, ast.Name)} | {a.arg for a in fast_walk(fn.args) if isinstance(a, ast.arg)}
    shared = {n.attr for n in own if isinstance(n, ast.Attribute) and ref_chain(n) is not None} | {
        n.args[1].value for n in own if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
        and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)}
    keep = (shared - bare) | {"@first", "@last"}
    return rename(need, lambda a: a if a in keep else f"{fn.name}@{a}")


def raise_guards(tree: ast.Module, lines, wanted):
    """For each function of ``tree`` whose text names ``pipeline_parallel_size`` and passes
    ``wanted`` (text -> bool), the guards of its ``raise`` statements (:class:`ReturnWalker`):
    where the tree refuses something under pipeline parallelism."""
    for fn in fast_walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = lines.span(fn)
        if "pipeline_parallel_size" not in body or not wanted(body):
            continue
        w = ReturnWalker(lines, fn)
        w.walk()
        yield w.raises

"""Value flow through one function body: which *sources* each local name may hold on one rank
scenario, following assignments, branches that the scenario decides, loops to a fixpoint, ``try``
and ``with``, and the values handed to a container call (``IntermediateTensors({...})``).

A source is ``("none", line)`` (the ``None`` literal of that line), ``"other"`` (anything else),
``("elem", attr)`` (a slot of ``self.attr``) or ``("layer", attr, i)`` (element ``i`` of what
calling a slot of ``self.attr`` returns; ``-1`` the whole value).  A scenario
(:data:`SCENARIOS`) sets the rank atoms of :mod:`.guards`; a test it does not decide takes both
branches.  :class:`ValueFlow` is the walker; :func:`pp_attr_lint.semantic.boundary.none_sends`
asks it what a model sends to the next rank.
"""

from __future__ import annotations

import ast
import itertools

from ..index.astutil import child_nodes
from .guards import atoms, evaluate, formula

CONTAINER = "IntermediateTensors"  # vLLM's container of what a rank sends (vllm/sequence.py)

# the rank scenarios a value is followed on: the first rank, and a middle one (size >= 3)
SCENARIOS = (("first", {"@first": True, "@last": False}), ("middle", {"@first": False, "@last": False}))
OTHER = frozenset({"other"})


def decided(test, env: dict):
    """``True``/``False`` when ``test`` has that value on the scenario's rank whatever its other
    tests are (at most 6 of them), else ``None``."""
    f = formula(test)
    names = sorted(atoms(f) - {"@first", "@last"})
    if len(names) > 6:
        return None
    seen = {evaluate(f, dict(zip(names, vals), **env)) for vals in itertools.product((False, True), repeat=len(names))}
    return seen.pop() if len(seen) == 1 else None


def join(*states):
    """The join of flow states (``None``: not reached); a name unbound on a path adds nothing (the
    path raises before it sends the name)."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out: dict = {}
    for s in live:
        for k, v in s.items():
            out[k] = out.get(k, frozenset()) | v
    return out


def own_subtree(node):
    """``node`` and its descendants, not entering nested functions, lambdas or classes."""
    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in child_nodes(n) if not isinstance(c, skip))


def bound_names(stmts) -> set:
    """Every local name the statements may bind (assignments, loop and ``with`` targets, walrus,
    imports, nested definitions)."""
    out = set()
    for st in stmts:
        for n in own_subtree(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not st:
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                out.update(n.names)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(st.name)
    return out


def self_attr(node):
    """``attr`` of ``self.attr``, else ``None``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def layer_iter(it):
    """``attr`` when iterating ``it`` yields slots of ``self.attr`` (``self.layers``,
    ``self.layers[a:b]``, ``islice(self.layers, a, b)``), else ``None``."""
    if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice):
        it = it.value
    elif isinstance(it, ast.Call) and (getattr(it.func, "id", None) == "islice" or getattr(it.func, "attr", None) == "islice") \
            and it.args:
        it = it.args[0]
    return self_attr(it)


class ValueFlow:
    """Which sources each local name may hold on one rank scenario, through one function body.

    ``env`` is the scenario's assignment of the rank atoms (a value of :data:`SCENARIOS`).  A
    *state* maps each local name to its sources (``None``: the point is not reached).
    ``block(fn.body, {param: OTHER, ...})`` walks a body and returns the state at its end; after
    it ``sends`` maps each reached ``IntermediateTensors({...})`` call node to ``{key: (sources,
    value node)}``, the sources joined over every way the call is reached.  Nothing is raised: a
    shape it does not follow binds :data:`OTHER`."""

    def __init__(self, env: dict):
        self.env = env
        self.sends: dict = {}
        self.loops: list = []  # per enclosing loop: [break states, continue states]

    def taint(self, state, names):
        """``state`` with each of ``names`` also holding :data:`OTHER` (``None`` stays ``None``)."""
        if state is None:
            return None
        out = dict(state)
        for n in names:
            out[n] = out.get(n, frozenset()) | OTHER
        return out

    def value(self, node, state) -> frozenset:
        """The sources expression ``node`` may evaluate to in ``state``."""
        if isinstance(node, ast.Constant) and node.value is None:
            return frozenset({("none", node.lineno)})
        if isinstance(node, ast.Name):
            return state.get(node.id, frozenset())
        if isinstance(node, ast.IfExp):
            d = decided(node.test, self.env)
            if d is not None:
                return self.value(node.body if d else node.orelse, state)
            return self.value(node.body, state) | self.value(node.orelse, state)
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice) and self_attr(node.value):
            return frozenset({("elem", self_attr(node.value))})
        attr = self.layer_call(node, state)
        if attr is not None:
            return frozenset({("layer", attr, -1)})
        return OTHER

    def layer_call(self, node, state):
        """``attr`` when ``node`` calls a slot of ``self.attr``."""
        if not isinstance(node, ast.Call) or node.keywords and any(k.arg is None for k in node.keywords):
            return None
        f = node.func
        if isinstance(f, ast.Name):
            got = state.get(f.id, frozenset())
            if len(got) == 1 and next(iter(got))[0] == "elem":
                return next(iter(got))[1]
            return None
        if isinstance(f, ast.Subscript) and not isinstance(f.slice, ast.Slice):
            return self_attr(f.value)
        return None

    def bind(self, target, value, sources, state) -> None:
        """Bind assignment target ``target`` (of expression ``value``, ``None`` when not known) to
        ``sources`` in ``state``, element by element for a tuple target."""
        if isinstance(target, ast.Name):
            state[target.id] = sources
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                for n in bound_names([ast.Expr(target)]):
                    state[n] = OTHER
                return
            attr = self.layer_call(value, state) if value is not None else None
            for i, e in enumerate(target.elts):
                if attr is not None:
                    src = frozenset({("layer", attr, i)})
                elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    src = self.value(value.elts[i], state)
                else:
                    src = OTHER
                self.bind(e, value.elts[i] if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                          else None, src, state)
        # attributes, subscripts: no local name

    def record_sends(self, stmt, state) -> None:
        """Add the dict-literal container calls of ``stmt`` (outside nested scopes) to ``sends``."""
        for n in own_subtree(stmt):
            if isinstance(n, ast.Call) and (getattr(n.func, "id", None) == CONTAINER or getattr(n.func, "attr", None) == CONTAINER) \
                    and n.args and isinstance(n.args[0], ast.Dict):
                got = self.sends.setdefault(n, {})
                for k, v in zip(n.args[0].keys, n.args[0].values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        got[k.value] = (got.get(k.value, (frozenset(), v))[0] | self.value(v, state), v)

    def walrus(self, stmt, state) -> None:
        """Bind the names that ``:=`` in ``stmt`` assigns to :data:`OTHER`."""
        for n in own_subtree(stmt):
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                state[n.target.id] = OTHER

    def block(self, body, state):
        """The state after the statements ``body`` from ``state`` (``None``: none falls through)."""
        for st in body:
            if state is None:
                return None
            state = self.stmt(st, state)
        return state

    def stmt(self, st, state):
        """The state after statement ``st`` from ``state`` (``None``: it never falls through)."""
        state = dict(state)
        if isinstance(st, (ast.If, ast.While)):
            self.record_sends(st.test, state)
            self.walrus(st.test, state)
        elif not isinstance(st, (ast.For, ast.AsyncFor, ast.Try, ast.With, ast.AsyncWith)) \
                and not (hasattr(ast, "TryStar") and isinstance(st, ast.TryStar)):
            self.record_sends(st, state)
            self.walrus(st, state)
        if isinstance(st, ast.Assign):
            src = self.value(st.value, state)
            for t in st.targets:
                self.bind(t, st.value, src, state)
            return state
        if isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.bind(st.target, st.value, self.value(st.value, state), state)
            return state
        if isinstance(st, ast.AugAssign):
            self.bind(st.target, None, OTHER, state)
            return state
        if isinstance(st, (ast.Return, ast.Raise)):
            return None
        if isinstance(st, (ast.Break, ast.Continue)):
            if self.loops:
                self.loops[-1][0 if isinstance(st, ast.Break) else 1].append(state)
            return None
        if isinstance(st, ast.If):
            d = decided(st.test, self.env)
            if d is True:
                return self.block(st.body, state)
            if d is False:
                return self.block(st.orelse, state)
            return join(self.block(st.body, dict(state)), self.block(st.orelse, dict(state)))
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            tgt, elem = None, OTHER
            if not isinstance(st, ast.While):
                self.record_sends(st.iter, state)
                self.walrus(st.iter, state)
                tgt, it = st.target, st.iter
                if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "enumerate" and it.args \
                        and isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2:
                    self.bind(tgt.elts[0], None, OTHER, state)
                    tgt, it = tgt.elts[1], it.args[0]
                attr = layer_iter(it)
                if attr is not None:
                    elem = frozenset({("elem", attr)})
            self.loops.append([[], []])
            head = state  # at the loop's head: before the first round, or after any round
            for _ in range(4):  # the lattice is finite: a few rounds reach the fixpoint
                s = dict(head)
                if tgt is not None:
                    self.bind(tgt, None, elem, s)
                out = self.block(st.body, s)
                nxt = join(state, out, *self.loops[-1][1])
                if nxt == head:
                    break
                head = nxt
            else:  # no fixpoint yet: what the body binds may hold anything
                head = self.taint(head, bound_names(st.body))
            breaks = self.loops.pop()[0]
            return join(self.block(st.orelse, dict(head)), *breaks)
        if isinstance(st, ast.Try) or (hasattr(ast, "TryStar") and isinstance(st, ast.TryStar)):
            names = bound_names([st])
            s0 = self.taint(state, names)
            body = self.block(st.body, dict(s0))
            handlers = [self.block(h.body, self.taint(s0, [h.name] if h.name else [])) for h in st.handlers]
            res = join(self.block(st.orelse, dict(body)) if body is not None else None, *handlers)
            if st.finalbody:
                res = self.block(st.finalbody, join(res, s0))
            return res
        if isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.record_sends(item.context_expr, state)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None, OTHER, state)
            return self.block(st.body, state)
        if isinstance(st, ast.Delete):
            for t in st.targets:
                if isinstance(t, ast.Name):
                    state.pop(t.id, None)
            return state
        # match, nested definitions, imports, global/nonlocal: what they bind is not followed
        return self.taint(state, bound_names([st]))

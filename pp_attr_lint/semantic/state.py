"""What an instance's own attributes hold on each rank: a test of ``self.x`` (truthy) or
``self.x is None`` in a guard means what the class's stores of ``self.x`` (``self.x = None`` in
``__init__``, ``self.x = value`` under ``if get_pp_group().is_last_rank:``) make it mean there.

Use :func:`self_atom` as the ``atom_of`` of a :class:`~.flow.FunctionGuards` so that those tests
get atoms of their own (``self.x``, ``self.x is None``), then ask :class:`InstanceState` what a
guard holding them implies of the rank."""

from __future__ import annotations

import ast

from . import guards as G
from ..index.astutil import walk as fast_walk
from .flow import FunctionGuards
from .guards import TRUE, f_not, rank_predicate


def self_atom(node):
    """The atom of a test of the instance's state: ``self.x`` (truthy) and ``self.x is None``
    (``is not None``: its negation); ``None`` for another test (the model's own atoms)."""
    if rank_predicate(node) is not None:
        return None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
        attr = self_attr(node.left)
        if attr is not None:
            a = ("a", f"self.{attr} is None")
            return a if isinstance(node.ops[0], ast.Is) else f_not(a)
    attr = self_attr(node)
    return None if attr is None else ("a", f"self.{attr}")


def self_attr(node):
    """``x`` for ``self.x``; ``None`` otherwise."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def stored_kind(value) -> str:
    """What a stored value is: ``"none"``, ``"falsy"`` (another falsy constant), ``"value"`` (any
    other expression) or ``"unknown"`` (a tuple target's element)."""
    if value is None:
        return "unknown"
    if isinstance(value, ast.Constant):
        return "none" if value.value is None else ("falsy" if not value.value else "value")
    if isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.Set)) and not getattr(value, "elts", getattr(value, "keys", None)):
        return "falsy"
    return "value" if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Call)) else "unknown"


# which stored kinds can make an atom true / false: ("truthy", "falsy") of `self.x`,
# ("none", "value") of `self.x is None`
_CAN = {"truthy": ("value",), "falsy": ("none", "falsy"), "none": ("none",), "value": ("value", "falsy")}


def stores(cls, lines) -> dict:
    """``{attr: [(kind, guard, method)]}`` of every ``self.attr = value`` in the class's methods
    (tuple targets included), with the guard of the store
    (:class:`~.flow.FunctionGuards`)."""
    out: dict[str, list] = {}
    for m in cls.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        guards = None
        for st in fast_walk(m):
            if not isinstance(st, ast.Assign):
                continue
            for t in st.targets:
                if isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(t.elts) == len(st.value.elts):
                    pairs = list(zip(t.elts, st.value.elts))
                elif not isinstance(t, ast.Tuple):
                    pairs = [(t, st.value)]
                else:
                    pairs = [(e, None) for e in t.elts]
                for target, value in pairs:
                    attr = self_attr(target)
                    if attr is not None:
                        guards = guards or FunctionGuards(m, lines, atom_of=self_atom)
                        guard = guards.of(st)  # None in a nested function: it may run anywhere
                        out.setdefault(attr, []).append((stored_kind(value), TRUE if guard is None else guard, m.name))
    return out


class InstanceState:
    """What the tests of an instance's own attributes (``if self.sampler is not None:``) say of the
    rank, from the class's stores of them and their guards (read at the first such question)."""

    def __init__(self, cls, lines):
        self.cls = cls
        self.lines = lines
        self._state = None

    @property
    def state(self) -> dict:
        """:func:`stores` of the class."""
        if self._state is None:
            self._state = stores(self.cls, self.lines)
        return self._state

    def meaning(self, atom: str):
        """The constraint an atom of a guard puts on the rank (a formula over it and the rank
        atoms), ``TRUE`` for a test that is the same on every rank (the pipeline's size, a
        constant), ``None`` when it may depend on the rank in a way not read here."""
        if atom.startswith("self.") and atom.split(" ", 1)[0][5:] in self.state:
            attr = atom.split(" ", 1)[0][5:]
            yes, no = ("none", "value") if atom.endswith(" is None") else ("truthy", "falsy")
            sides = []
            for want in (yes, no):
                ways = [(g, m) for kind, g, m in self.state[attr] if kind == "unknown" or kind in _CAN[want]]
                if any(m != "__init__" and m.startswith("_") for _g, m in ways):
                    return None  # stored by a method run who knows where
                sides.append(G.f_or(*(G.rank_projection(g) for g, _m in ways)))
            a = ("a", atom)
            return G.f_and(G.f_or(G.f_not(a), sides[0]), G.f_or(a, sides[1]))
        if G.mentions_pp_size(atom):
            return G.TRUE  # the pipeline's size: the same on every rank
        return None  # a call, a parameter, an attribute of another object: may depend on the rank

    def verdict(self, guard, need) -> bool | None:
        """``True`` when ``guard`` implies ``need`` (a rank formula), ``False`` when it can hold on
        a rank that breaks it, ``None`` when that cannot be told."""
        constraints, unknown = [], False
        for a in sorted(G.atoms(guard) - G.RANK_ATOMS):
            m = self.meaning(a)
            if m is None:
                unknown = True
            else:
                constraints.append(m)
        if G.implies(G.f_and(guard, *constraints), need):
            return True
        return None if unknown else False

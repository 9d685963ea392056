"""Call sites across a file, with their guards, and the arguments a call passes.

:func:`call_sites` finds the calls ``x.name(...)`` of chosen method names in every function of a
module (methods, module functions, nested functions) and gives each the guard the flow walker
(:class:`~.flow.FunctionGuards`) reads for it and whether a handler around it catches an
``AttributeError``; :func:`argument` reads what a call passes for a
parameter; :func:`name_uses` finds every use of a name (a class's constructions, subclasses and
other references) with its enclosing class and function.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from ..index.astutil import walk as fast_walk
from .flow import FunctionGuards


class CallSite(NamedTuple):
    """A call ``x.name(...)``: the ``ast.Call``, the top-level class node it is in (``None`` in a
    module function), the innermost function node, its guard there (a :mod:`.guards` formula),
    and whether a handler around it in that function catches an ``AttributeError`` (``try`` /
    ``except AttributeError`` or ``Exception``, ``contextlib.suppress``)."""

    call: ast.Call
    cls: ast.ClassDef | None
    fn: ast.FunctionDef
    guard: tuple
    catches_attribute_error: bool = False


class SiteGuards(FunctionGuards):
    """A :class:`~.flow.FunctionGuards` of function ``fn`` that also records, per node, whether a
    handler around it catches an ``AttributeError`` (``caught``: node id -> bool)."""

    def __init__(self, fn, atom_of=None):
        super().__init__(fn, atom_of=atom_of)
        self.caught: dict = {}

    def expr(self, node, guard, guarded, protected, loops) -> None:
        self.caught.setdefault(id(node), protected)
        super().expr(node, guard, guarded, protected, loops)


def self_attr(node, self_name: str) -> str | None:
    """``attr`` when ``node`` reads ``<self_name>.attr``, else ``None``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return node.attr
    return None


def rebound(fn, name: str) -> bool:
    """Whether ``fn`` stores to the plain name ``name`` anywhere (so a parameter may change)."""
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn))


def positional(fn) -> list[str]:
    """The positional parameter names of method ``fn`` without its first (``self``)."""
    return [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]


def argument(call: ast.Call, position: int, keyword: str):
    """The argument ``call`` passes at ``position`` (after ``self``) or as ``keyword``; ``None``
    when not passed; ``...`` when ``*args`` / ``**kwargs`` may pass it."""
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return ...
        if i == position:
            return a
    for k in call.keywords:
        if k.arg is None:
            return ...
        if k.arg == keyword:
            return k.value
    return None


def call_sites(tree: ast.Module, names: frozenset, atom_of=None) -> list[CallSite]:
    """A :class:`CallSite` for each call ``x.name(...)`` with ``name`` in ``names`` inside a
    function of ``tree`` (the innermost one: a nested function has no scope of its own in the
    summary), in source order, with its guard from the flow walker
    (:class:`~.flow.FunctionGuards`, tests named by ``atom_of`` where it names them):
    ``if`` / ``while`` / conditional expressions, ``and`` / ``or``, early ``return`` /
    ``raise``, ``assert``; and whether a handler around it catches an ``AttributeError``.  A
    call the walk of its function does not reach is left out."""
    out = []
    todo = [(tree, None, None)]
    while todo:
        node, cls, fn = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((child, cls, child))
            elif isinstance(child, ast.ClassDef):
                todo.append((child, child if cls is None and fn is None else cls, fn))
            else:
                todo.append((child, cls, fn))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            guards = None
            for call in fast_walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in names:
                    guards = guards or SiteGuards(node, atom_of)
                    guard = guards.of(call)
                    if guard is not None:  # (a call of a nested function is that function's)
                        out.append(CallSite(call, cls, node, guard, guards.caught.get(id(call), False)))
    out.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
    return out


def name_uses(tree: ast.Module, name: str) -> list:
    """``(node, parent, class, function, harmless)`` for each ``Name`` / ``Attribute`` spelled
    ``name`` in ``tree``; ``harmless``: in an annotation or a type test (``isinstance(x, name)``)."""
    out = []
    harmless: set[int] = set()
    for n in ast.walk(tree):
        anns = []
        if isinstance(n, ast.arg) and n.annotation is not None:
            anns.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            anns.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            anns.append(n.annotation)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("isinstance", "issubclass") \
                and len(n.args) == 2:
            anns.append(n.args[1])
        for a in anns:
            harmless.update(id(x) for x in ast.walk(a))

    def visit(node, parent, cls, fn):
        if isinstance(node, ast.ClassDef) and fn is None and cls is None:
            cls = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = node
        if (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name):
            out.append((node, parent, cls, fn, id(node) in harmless))
            if isinstance(node, ast.Attribute):
                return
        for c in ast.iter_child_nodes(node):
            visit(c, node, cls, fn)

    visit(tree, None, None, None)
    return out

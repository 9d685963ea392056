"""One walk of each parsed module, shared by the summarizer and every rule's collector.

The summarizer (:mod:`pp_attr_lint.index.summary`) walks the body of every function and method
it records; a :class:`ModuleView` keeps what that walk found, so that a collector which walks the
same function again (:func:`pp_attr_lint.rule_api.fast_walk`, :meth:`ModuleView.walk`) reads the
kept nodes instead of visiting the tree a second time.  A walk is kept as levels (the nodes at
each depth under one child of the function, left to right), from which both orders the code
needs are put together without visiting a node: the summarizer's, one body statement after the
other, and :func:`~pp_attr_lint.index.astutil.walk`'s breadth-first order of the whole function.
"""

from __future__ import annotations

import ast

from .astutil import child_nodes, levels, module_classes, walk


class ModuleView:
    """What one walk of a parsed module (``tree``) found, for the summarizer and the collectors.

    * :attr:`classes`: the module's classes (those at its top level and in its top-level ``if`` /
      ``try`` blocks, :func:`pp_attr_lint.index.astutil.module_classes`), in source order;
    * :attr:`functions`: ``[(class name or None, function node)]`` of every function and method
      the summarizer recorded, in the order it recorded them;
    * :meth:`body` (the summarizer's order), :meth:`walk` (``walk``'s order) and :meth:`nodes`
      (only some node types) of a function, from the one walk; of any other node, walked at the
      first request and kept.

    Raises nothing; the lists it returns are shared: read them, never change them."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.functions: list[tuple[str | None, ast.AST]] = []
        self._parts: dict[int, tuple[ast.AST, list, list]] = {}  # id(fn) -> (fn, children, their levels)
        self._walks: dict[int, tuple[ast.AST, list]] = {}
        self._buckets: dict[int, dict[type, list]] = {}
        self._classes: list | None = None

    @property
    def classes(self) -> list:
        if self._classes is None:
            self._classes = list(module_classes(self.tree))
        return self._classes

    def body(self, fn: ast.AST, cls: str | None = None) -> list[list[list]]:
        """The nodes under each statement of function ``fn``'s body by depth (:func:`levels`:
        their concatenation is ``walk(stmt)``), walked here once for the summarizer, which records
        ``fn`` as a function of class ``cls`` (or of the module) in :attr:`functions`."""
        got = self._parts.get(id(fn))
        if got is None:
            got = self._parts[id(fn)] = (fn, [levels(s) for s in fn.body])  # type: ignore[attr-defined]
            self.functions.append((cls, fn))
        return got[1]

    def walk(self, node: ast.AST) -> list:
        """``list(walk(node))`` (:func:`pp_attr_lint.index.astutil.walk`), from the summarizer's
        walk when ``node`` is a function it recorded, else walked now and kept."""
        got = self._walks.get(id(node))
        if got is not None:
            return got[1]
        parts = self._parts.get(id(node))
        if parts is not None:
            out = [node]
            # walk's order: depth by depth, each child of the function (its arguments, body,
            # decorators and return annotation) left to right; the body as the summarizer walked it
            body = iter(parts[1])
            first = node.body[0] if node.body else None  # type: ignore[attr-defined]
            per_child = []
            for k in child_nodes(node):
                if k is first:
                    per_child.extend(body)
                    first = None
                elif not isinstance(k, ast.stmt):
                    per_child.append(levels(k))
            depth = max((len(lv) for lv in per_child), default=0)
            for d in range(depth):
                for lv in per_child:
                    if d < len(lv):
                        out.extend(lv[d])
        else:
            out = list(walk(node))
        self._walks[id(node)] = (node, out)
        return out

    def cached(self, node: ast.AST) -> list | None:
        """:meth:`walk` of ``node`` when the summarizer's walk holds it (a function it recorded, or
        a node walked before through this view), else ``None``."""
        if id(node) in self._walks or id(node) in self._parts:
            return self.walk(node)
        return None

    def nodes(self, node: ast.AST, *types: type) -> list:
        """The nodes of :meth:`walk` ``(node)`` whose class is one of ``types`` (exactly, not a
        subclass), in that order."""
        buckets = self._buckets.get(id(node))
        if buckets is None:
            buckets = self._buckets[id(node)] = {}
            for n in self.walk(node):
                buckets.setdefault(n.__class__, []).append(n)
        if len(types) == 1:
            return buckets.get(types[0], [])
        want = set(types)
        return [n for n in self.walk(node) if n.__class__ in want]


_active: ModuleView | None = None


def active() -> ModuleView | None:
    """The view of the module whose collectors run now (set by
    :func:`pp_attr_lint.index.summary.summarize`), else ``None``."""
    return _active


def set_active(view: ModuleView | None) -> ModuleView | None:
    """Make ``view`` the active one; returns the one it replaces."""
    global _active
    old, _active = _active, view
    return old


def module_view(tree: ast.Module) -> ModuleView:
    """The view of ``tree``: the one its summary was made with while its collectors run, else a
    new one (its walks made on request)."""
    v = _active
    if v is not None and v.tree is tree:
        return v
    return ModuleView(tree)

"""The module's one walk (pp_attr_lint.index.view): the summarizer walks each function once, and
the collectors' walks of those functions read its nodes, in the order a fresh walk gives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pp_attr_lint.index import view as view_mod
from pp_attr_lint.index.astutil import levels, walk
from pp_attr_lint.index.spec import IndexSpec
from pp_attr_lint.index.summary import summarize
from pp_attr_lint.index.view import ModuleView
from pp_attr_lint.rule_api import fast_walk, module_view

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted((REPO / "pp_attr_lint").rglob("*.py")) + sorted((REPO / "rules").rglob("*.py"))


def _functions(tree):
    return [n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("path", SOURCES[::7], ids=lambda p: str(p.relative_to(REPO)))
def test_view_gives_walks_order(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert [n for lv in levels(tree) for n in lv] == list(walk(tree))
    v = ModuleView(tree)
    for fn in _functions(tree):
        assert [[n for lv in b for n in lv] for b in v.body(fn)] == [list(walk(s)) for s in fn.body]
        assert v.walk(fn) == list(walk(fn))
        assert v.nodes(fn, ast.Call) == [n for n in walk(fn) if type(n) is ast.Call]
        assert v.nodes(fn, ast.Call, ast.Name) == [n for n in walk(fn) if type(n) in (ast.Call, ast.Name)]


def test_dict_holes_and_unknown_nodes_are_walked_like_walk():
    tree = ast.parse("def f(a, *, b=None, c):\n    return {**a, 'k': b, **c}, [x async for x in a]\n")
    fn = tree.body[0]
    v = ModuleView(tree)
    v.body(fn)
    assert v.walk(fn) == list(walk(fn))
    assert None not in v.walk(fn)


def test_collectors_read_the_summarizers_walk():
    """During summarize, a collector's fast_walk of a method gets the summarizer's nodes (the
    same list object every time, no new walk); outside a summary it walks afresh."""
    source = (
        "class A:\n"
        "    def f(self, x):\n"
        "        if x:\n"
        "            self.y = g(x)\n"
        "        return self.y\n"
    )
    seen = {}

    def collect(tree, lines):
        fn = tree.body[0].body[0]
        first, second = fast_walk(fn), fast_walk(fn)
        seen["same"] = first is second and isinstance(first, list)
        seen["order"] = list(first) == list(walk(fn))
        v = module_view(tree)
        seen["functions"] = [(c, f.name) for c, f in v.functions]
        seen["classes"] = [c.name for c in v.classes]
        return None

    summarize(source, IndexSpec(frozenset({"y"}), collectors=(("X", collect),)))
    assert seen == {"same": True, "order": True, "functions": [("A", "f")], "classes": ["A"]}
    assert view_mod.active() is None  # the view is dropped when the summary is made
    tree = ast.parse(source)
    assert not isinstance(fast_walk(tree.body[0].body[0]), list)

#!/usr/bin/env python3
"""The import graph of ``pp_attr_lint`` and its built-in rules, checked against the layers.

Usage::

    python scripts/import_graph.py [PACKAGE_DIR]      # default: the repository's pp_attr_lint/
    python scripts/import_graph.py --before OLD/pp_attr_lint   # code from before the layered layout

prints the modules with their layer and size, every import arrow (``a -> b``, counting imports
anywhere in a module: top level, inside functions, under ``TYPE_CHECKING``), the cycles, the
arrows that go up a layer, and the largest modules; exits 1 when there is a cycle or an upward
arrow.  ``tests/test_layers.py`` runs the same check.

The layers (each imports only from the layers below it; modules of one layer may import each
other as long as there is no cycle):

| layer | modules |
|---|---|
| 0 | text and file I/O, the findings/fix model, the not-judged reasons, settings, facts |
| 1 | ``index``: per-file summaries, what the rules ask of them, the byte prefilter |
| 2 | ``resolve`` and ``workspace`` (files, module names, environment, cache, the project) |
| 3 | ``semantic`` (the model of PP execution) and ``engines`` (what vLLM / SGLang do) |
| 4 | ``rule_api`` |
| 5 | ``rule_registry``, ``kinds``; then the rule folders (``rules/<CODE>/rule.py``) |
| 6 | ``engine`` |
| 7 | ``fixes``, ``report`` |
| 8 | ``cli``, ``config``, ``audit``, ``validate`` |
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

PKG = "pp_attr_lint"
RULES = "pp_attr_lint_rules"  # the package the registry loads rule folders as
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("pp_attr_lint", "pp_attr_lint.textio", "pp_attr_lint.model", "pp_attr_lint.unjudged",
         "pp_attr_lint.settings", "pp_attr_lint.facts")),
    (1, ("pp_attr_lint.index",)),
    (2, ("pp_attr_lint.resolve", "pp_attr_lint.workspace")),
    (3, ("pp_attr_lint.semantic", "pp_attr_lint.engines")),
    (4, ("pp_attr_lint.rule_api",)),
    (5, ("pp_attr_lint.rule_registry", "pp_attr_lint.kinds")),
    (5.5, (RULES,)),
    (6, ("pp_attr_lint.engine",)),
    (7, ("pp_attr_lint.fixes", "pp_attr_lint.report")),
    (8, ("pp_attr_lint.cli", "pp_attr_lint.config", "pp_attr_lint.audit", "pp_attr_lint.validate",
         "pp_attr_lint.__main__")),
]

# the same layers named as the modules were before the layered layout (``--before``: for comparing
# that code's graph, e.g. an older checkout's pp_attr_lint/)
LAYERS_BEFORE: list[tuple[int, tuple[str, ...]]] = [
    (0, ("pp_attr_lint", "pp_attr_lint.textio", "pp_attr_lint.model", "pp_attr_lint.unjudged",
         "pp_attr_lint.settings", "pp_attr_lint.facts")),
    (1, ("pp_attr_lint.index",)),
    (2, ("pp_attr_lint.resolve", "pp_attr_lint.project")),
    (3, ("pp_attr_lint.ranks",)),
    (4, ("pp_attr_lint.plugin",)),
    (5, ("pp_attr_lint.rules", "pp_attr_lint.wrapper", "pp_attr_lint.analysis", "pp_attr_lint.placeholder")),
    (5.5, (RULES,)),
    (6, ("pp_attr_lint.checker", "pp_attr_lint.parallel")),
    (7, ("pp_attr_lint.fixes", "pp_attr_lint.report")),
    (8, ("pp_attr_lint.cli", "pp_attr_lint.config", "pp_attr_lint.audit", "pp_attr_lint.validate",
         "pp_attr_lint.__main__")),
]


def layer_of(module: str) -> float | None:
    """The layer of ``module``: that of the longest prefix listed in :data:`LAYERS`."""
    best = None
    for layer, prefixes in _layers:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (layer, len(p))
    return None if best is None else best[0]


def modules(pkg_dir: Path, rules_dir: Path | None) -> dict[str, tuple[Path, bool]]:
    """``{module: (path, is_package)}`` of every ``.py`` file of the package and the rule folders."""
    out = {}
    for path in sorted(pkg_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(pkg_dir.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    if rules_dir is not None:
        for path in sorted(rules_dir.glob("*/rule.py")):
            out[f"{RULES}.{path.parent.name}"] = (path, False)
    return out


def imports(module: str, path: Path, is_pkg: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports anywhere in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(up + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in known:
                    out.add(sub)  # `from . import ranks`: the submodule
                elif target in known:
                    out.add(target)
    out.discard(module)
    return out


def graph(pkg_dir: Path, rules_dir: Path | None = None) -> tuple[dict[str, set[str]], dict[str, Path]]:
    mods = modules(pkg_dir, rules_dir)
    known = set(mods)
    return {m: imports(m, p, is_pkg, known) for m, (p, is_pkg) in mods.items()}, {m: p for m, (p, _) in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from a module to one of a higher layer, or to or from a module of no layer."""
    out = []
    for a, targets in sorted(g.items()):
        for b in sorted(targets):
            la, lb = layer_of(a), layer_of(b)
            if la is None or lb is None or lb > la:
                out.append((a, b))
    return out


_layers = LAYERS


def main(argv: list[str]) -> int:
    global _layers
    if argv[:1] == ["--before"]:
        _layers, argv = LAYERS_BEFORE, argv[1:]
    repo = Path(__file__).resolve().parent.parent
    pkg_dir = Path(argv[0]) if argv else repo / PKG
    rules_dir = pkg_dir.parent / "rules"
    g, paths = graph(pkg_dir, rules_dir if rules_dir.is_dir() else None)
    arrows = sum(len(t) for t in g.values())
    print(f"{len(g)} modules, {arrows} import arrows")
    for m in sorted(g, key=lambda m: (layer_of(m) if layer_of(m) is not None else 99, m)):
        print(f"  [{layer_of(m)}] {m} -> {', '.join(sorted(g[m])) or '-'}")
    cyc = cycles(g)
    up = upward(g)
    print(f"cycles: {len(cyc)}" + "".join(f"\n  {{{', '.join(c)}}}" for c in cyc))
    print(f"arrows going up (or outside the layers): {len(up)}" + "".join(f"\n  {a} -> {b}" for a, b in up))
    sizes = sorted(((sum(1 for _ in open(p, encoding="utf-8")), m) for m, p in paths.items()), reverse=True)
    print("largest modules (lines): " + ", ".join(f"{m} {n}" for n, m in sizes[:8]))
    return 1 if cyc or up else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

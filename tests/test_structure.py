"""The code's shape: no module reaches into another's private names, and no module is too long.

A private name (one leading underscore, not a dunder) is an implementation detail of the module
that defines it.  Another module that needs it asks for a public name instead, so that a module
can change its insides without breaking a caller it cannot see.  The scan reads every module of
``pp_attr_lint/`` and every ``rules/*/rule.py`` with :mod:`ast`:

* ``from pp_attr_lint.X import _name`` (absolute or relative) of a project module fails;
* ``alias._name`` fails where ``alias`` is bound in the module by an import of a project module
  (``from pp_attr_lint.semantic import guards`` ... ``guards._x``) or names a class imported from one
  (``Resolver._local_classes``); ``self._x`` and ``obj._x`` on other objects are fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

PKG = "pp_attr_lint"
MAX_LINES = 1000
FILES = sorted([*(REPO / PKG).rglob("*.py"), *(REPO / "rules").glob("*/rule.py")])


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_of(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "rules":  # loaded as pp_attr_lint_rules.<CODE>.rule
        return ".".join(["pp_attr_lint_rules", *parts[1:]])
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _ours(module: str) -> bool:
    return module == PKG or module.startswith((PKG + ".", "pp_attr_lint_rules"))


def violations(path: Path) -> list[str]:
    """``file:line: text`` for each use of another project module's private name in ``path``."""
    module = _module_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    aliases: set[str] = set()  # names bound to a project module or to something imported from one
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _ours(a.name):
                    aliases.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, path, node)
            if not _ours(src) or src == module:
                continue
            for a in node.names:
                if _private(a.name):
                    out.append(f"{path.relative_to(REPO)}:{node.lineno}: from {src} import {a.name}")
                aliases.add(a.asname or a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                out.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_module_uses_another_modules_private_names():
    found = [v for p in FILES for v in violations(p)]
    assert found == [], "\n".join(found)


def test_no_module_is_over_the_size_limit():
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in FILES
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert long == [], "\n".join(long)


def test_the_scan_sees_a_private_import_and_a_module_alias():
    """The scan itself finds both shapes (a test that cannot fail would prove nothing)."""
    probe = REPO / PKG / "_structure_probe.py"
    probe.write_text("from pp_attr_lint.semantic.guards import f_and\n"
                     "from pp_attr_lint import resolve\n"
                     "from .resolve import _hidden\n"
                     "from .semantic import guards as g\n"
                     "x = resolve._private_thing\n"
                     "y = g._eval\n"
                     "class A:\n"
                     "    def m(self):\n"
                     "        return self._fine, f_and\n", encoding="utf-8")
    try:
        got = violations(probe)
    finally:
        probe.unlink()
    assert [v.split(": ", 1)[1] for v in got] == [
        "from pp_attr_lint.resolve import _hidden", "resolve._private_thing", "g._eval"]

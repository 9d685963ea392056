"""The code's shape: no module reaches into another's private names, no module is too long, and
the rules ask the semantic model instead of walking code or naming ranks themselves.

A private name (one leading underscore, not a dunder) is an implementation detail of the module
that defines it.  Another module that needs it asks for a public name instead, so that a module
can change its insides without breaking a caller it cannot see.  The scan reads every module of
``pp_attr_lint/`` and every ``rules/*/rule.py`` with :mod:`ast`:

* ``from pp_attr_lint.X import _name`` (absolute or relative) of a project module fails;
* ``alias._name`` fails where ``alias`` is bound in the module by an import of a project module
  (``from pp_attr_lint.semantic import guards`` ... ``guards._x``) or names a class imported from one
  (``Resolver._local_classes``); ``self._x`` and ``obj._x`` on other objects are fine.

A rule module (``rules/*/rule.py``) is at most 300 lines, and asks :mod:`pp_attr_lint.semantic`
for guards and rank words rather than keeping its own (:func:`rule_violations`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import REPO

PKG = "pp_attr_lint"
MAX_LINES = 1000
FILES = sorted([*(REPO / PKG).rglob("*.py"), *(REPO / "rules").glob("*/rule.py")])
RULE_MAX_LINES = 300
RULES = sorted((REPO / "rules").glob("*/rule.py"))
# Rules still on a walker, a word list or a length of their own: their checks are skipped until
# they are moved onto the semantic model (none now; a rule added here must leave it when it passes).
NOT_YET_PORTED: frozenset = frozenset()


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


# -- the rules ask the semantic model ----------------------------------------------------------
_WALKER_METHODS = re.compile(r"^(visit_\w+|generic_visit|stmt|stmts|statements|block|blocks)$")
_BODY_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _rank_words() -> frozenset:
    """The shared vocabulary (:mod:`pp_attr_lint.semantic.guards`): the rank predicates, the
    pipeline-size names, the stage words and the names of the stage's position."""
    from pp_attr_lint.semantic import guards

    return (frozenset(guards.RANK_PREDICATES) | guards.PP_SIZE_NAMES | guards.STAGE_WORDS
            | guards.STAGE_POSITION_NAMES)


def _body_ref(node, names) -> bool:
    """Whether ``node`` is a statement block: ``x.body`` (``orelse``, ``finalbody``, ``handlers``,
    ``cases``), ``getattr(x, "orelse", ...)``, or a name in ``names``."""
    if isinstance(node, ast.Attribute):
        return node.attr in _BODY_FIELDS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        return node.args[1].value in _BODY_FIELDS
    return isinstance(node, ast.Name) and node.id in names


def _recurses_over_bodies(fn) -> ast.Call | None:
    """The call by which function ``fn``, looping over a parameter (``for st in body``), calls
    itself on a statement block (``fn(st.body, ...)``, ``self.fn(st.orelse)``, or a name bound by
    ``for block in (st.body, st.orelse)``); ``None`` when it does not."""
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    nodes = list(ast.walk(fn))
    if not any(isinstance(n, (ast.For, ast.AsyncFor)) and isinstance(n.iter, ast.Name) and n.iter.id in params
               for n in nodes):
        return None
    blocks = {n.target.id for n in nodes if isinstance(n, ast.For) and isinstance(n.target, ast.Name)
              and isinstance(n.iter, (ast.Tuple, ast.List)) and any(_body_ref(e, ()) for e in n.iter.elts)}
    for n in nodes:
        if isinstance(n, ast.Call) and (getattr(n.func, "id", None) == fn.name or getattr(n.func, "attr", None) == fn.name) \
                and any(_body_ref(a, blocks) for a in [*n.args, *(k.value for k in n.keywords)]):
            return n
    return None


def _worklist_over_bodies(fn) -> ast.AST | None:
    """The statement by which function ``fn`` feeds a worklist with statement blocks inside a
    ``while`` loop (``todo.extend(st.body)``, ``todo += st.orelse``); ``None`` when it does not."""
    for loop in ast.walk(fn):
        if not isinstance(loop, ast.While):
            continue
        for n in ast.walk(loop):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("extend", "append"):
                fed = n.args
            elif isinstance(n, ast.AugAssign):
                fed = [n.value]
            else:
                continue
            if any(_body_ref(x, ()) for a in fed for x in ast.walk(a) if isinstance(x, ast.Attribute)):
                return n
    return None


def rule_violations(path: Path, words: frozenset | None = None) -> list[str]:
    """``line: text`` for each way rule module ``path`` keeps a model of its own: over
    :data:`RULE_MAX_LINES` lines; a statement walker (a subclass of ``ast.NodeVisitor`` /
    ``NodeTransformer``, a class with ``visit_*`` / ``stmt`` / ``block`` walking methods, or a
    function that recurses over statement blocks or feeds a worklist with them); a literal list, tuple or set with two or more
    strings naming words of the rank vocabulary (``("is_first_rank", "is_last_rank")``)."""
    words = _rank_words() if words is None else words
    text = path.read_text(encoding="utf-8")
    out = []
    n = len(text.splitlines())
    if n > RULE_MAX_LINES:
        out.append(f"1: {n} lines (at most {RULE_MAX_LINES})")
    tree = ast.parse(text)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(words))) + r")\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                if ast.unparse(b).rsplit(".", 1)[-1] in ("NodeVisitor", "NodeTransformer"):
                    out.append(f"{node.lineno}: class {node.name} subclasses {ast.unparse(b)}")
            out += [f"{m.lineno}: {node.name}.{m.name} walks statements" for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and _WALKER_METHODS.match(m.name)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            call = _recurses_over_bodies(node)
            if call is not None:
                out.append(f"{call.lineno}: {node.name} recurses over statement blocks")
            fed = _worklist_over_bodies(node)
            if fed is not None:
                out.append(f"{fed.lineno}: {node.name} walks a worklist of statement blocks")
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            named = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                     and pattern.search(e.value)]
            if len(named) >= 2:
                out.append(f"{node.lineno}: its own list of rank words {named}")
    return sorted(out, key=lambda v: int(v.split(":", 1)[0]))


def test_rules_ask_the_semantic_model():
    found = [f"{p.relative_to(REPO)}:{v}" for p in RULES if p.parent.name not in NOT_YET_PORTED
             for v in rule_violations(p)]
    assert found == [], "\n".join(found)


def test_not_yet_ported_names_only_rules_that_need_it():
    """The allow-list shrinks as rules are ported: a rule in it that passes must leave it."""
    done = [p.parent.name for p in RULES if p.parent.name in NOT_YET_PORTED and not rule_violations(p)]
    assert done == [], f"ported, remove from NOT_YET_PORTED: {done}"


def test_the_rule_scan_sees_each_shape(tmp_path):
    """The scan finds each shape it is for, and not the ones it is not for (``IfExp.body``, a
    single rank word, a list of other words)."""
    probe = tmp_path / "rule.py"
    probe.write_text("import ast\n"
                     "WORDS = ('is_first_rank', 'get_pp_group().is_last_rank')\n"
                     "ONE = ('is_last_rank', 'hidden_states')\n"
                     "class V(ast.NodeVisitor):\n"
                     "    def visit_If(self, node):\n"
                     "        pass\n"
                     "class W:\n"
                     "    def stmt(self, st):\n"
                     "        pass\n"
                     "def walk(body, guard):\n"
                     "    for st in body:\n"
                     "        for block in (st.body, getattr(st, 'orelse', [])):\n"
                     "            yield from walk(block, guard)\n"
                     "def value(node):\n"
                     "    return value(node.body) | value(node.orelse)\n"
                     "def flat(fn):\n"
                     "    todo = list(fn.body)\n"
                     "    while todo:\n"
                     "        st = todo.pop()\n"
                     "        todo.extend(st.body + st.orelse)\n"
                     "def children(fn):\n"
                     "    todo = [fn]\n"
                     "    while todo:\n"
                     "        todo.extend(ast.iter_child_nodes(todo.pop()))\n"
                     + "\n" * 280, encoding="utf-8")
    got = [v.split(": ", 1)[1] for v in rule_violations(probe)]
    assert got == [f"{len(probe.read_text().splitlines())} lines (at most 300)",
                   "its own list of rank words ['is_first_rank', 'get_pp_group().is_last_rank']",
                   "class V subclasses ast.NodeVisitor", "V.visit_If walks statements", "W.stmt walks statements",
                   "walk recurses over statement blocks", "flat walks a worklist of statement blocks"], got


# -- one walker: which statements run, and under which guard, is the flow walker's -------------
_COMPOUND = frozenset({"If", "Try", "TryStar", "With", "AsyncWith"})
_SEMANTIC = REPO / PKG / "semantic"
# Functions outside pp_attr_lint/semantic/ that descend into the blocks of `if` / `try` / `with`
# themselves, each with why: (module, function) -> reason.  A function added here must say why the
# flow walker (semantic/flow.py FunctionGuards) cannot answer it; one that stops descending must leave.
OWN_BLOCK_WALKS: dict = {
    ("pp_attr_lint/index/astutil.py", "module_classes"):
        "a module's classes under its top-level `if`/`try` blocks: no function body, no guard asked",
}


def _names_compound(fn) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "ast"
               and n.attr in _COMPOUND for n in ast.walk(fn))


def _holds_block(node) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in _BODY_FIELDS for n in ast.walk(node))


def _own_nodes(fn):
    """The nodes of ``fn`` outside its nested functions and classes (those are judged apart)."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


def _fed(node) -> tuple | None:
    """``(list name, value)`` when ``node`` adds ``value`` to a list named by a plain name
    (``todo.extend(v)``, ``todo.append(v)``, ``todo.insert(i, v)``, ``todo += v``, ``todo[:0] = v``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.attr in ("extend", "append", "insert") and node.args:
        return node.func.value.id, node.args[-1]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) \
            and isinstance(node.targets[0].value, ast.Name):
        return node.targets[0].value.id, node.value
    return None


def descends_into_blocks(fn) -> ast.AST | None:
    """The node by which function ``fn``, which names ``ast.If`` / ``ast.Try`` / ``ast.With``, walks
    into the blocks of compound statements itself: a call of itself or of a walker method
    (``block``, ``stmt``, ``visit_*``) handed a block (``st.body``, ``st.orelse``, ``h.body``), or
    a worklist the loop it drives is fed blocks (``while todo: ... todo += st.body``, ``for st in
    todo: todo.extend(st.orelse)``); ``None`` when it does neither."""
    if not _names_compound(fn):
        return None
    for n in _own_nodes(fn):
        if isinstance(n, ast.Call):
            name = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
            if (name == fn.name or (name and _WALKER_METHODS.match(name))) \
                    and any(_holds_block(a) for a in [*n.args, *(k.value for k in n.keywords)]):
                return n
        if isinstance(n, (ast.While, ast.For, ast.AsyncFor)):
            driven = {x.id for x in ast.walk(n.test if isinstance(n, ast.While) else n.iter) if isinstance(x, ast.Name)}
            for m in ast.walk(n):
                got = _fed(m)
                if got is not None and got[0] in driven and _holds_block(got[1]):
                    return m
    return None


def own_block_walks(paths, root: Path = REPO) -> dict:
    """``{(module path relative to ``root``, function name): "line: text"}`` for each function of
    ``paths`` that :func:`descends_into_blocks`."""
    out = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and (n := descends_into_blocks(fn)) is not None:
                out[(path.relative_to(root).as_posix(), fn.name)] = f"{n.lineno}: {ast.unparse(n)[:80]}"
    return out


def test_only_the_flow_walker_descends_into_if_try_with_blocks():
    """Outside :mod:`pp_attr_lint.semantic`, no module walks into ``if``/``try``/``with`` blocks
    itself (a second opinion on which statements run, blind to an early ``return``, an ``assert``,
    ``and``/``or`` or a handler), except the functions of :data:`OWN_BLOCK_WALKS`."""
    found = own_block_walks([p for p in FILES if _SEMANTIC not in p.parents])
    extra = [f"{m}:{v} ({f})" for (m, f), v in sorted(found.items()) if (m, f) not in OWN_BLOCK_WALKS]
    assert extra == [], "ask semantic/flow.py FunctionGuards instead:\n" + "\n".join(extra)
    stale = [k for k in OWN_BLOCK_WALKS if k not in found]
    assert stale == [], f"no longer walks its own blocks, remove from OWN_BLOCK_WALKS: {stale}"


def test_the_block_walk_scan_sees_each_shape(tmp_path):
    """The scan finds recursion, a walker method and each way of feeding a worklist, and not a
    list that merely collects blocks of statements the flow walker reached."""
    probe = tmp_path / "probe.py"
    probe.write_text("import ast\n"
                     "def rec(body):\n"
                     "    for st in body:\n"
                     "        if isinstance(st, ast.If):\n"
                     "            rec(st.orelse)\n"
                     "class W:\n"
                     "    def stmt(self, st):\n"
                     "        if isinstance(st, ast.Try):\n"
                     "            self.block(st.finalbody)\n"
                     "def work(fn):\n"
                     "    todo = list(fn.body)\n"
                     "    while todo:\n"
                     "        st = todo.pop(0)\n"
                     "        if isinstance(st, ast.With):\n"
                     "            todo += [(s, 1) for s in st.body]\n"
                     "def front(tree):\n"
                     "    todo = list(tree.body)\n"
                     "    while todo:\n"
                     "        n = todo.pop(0)\n"
                     "        if isinstance(n, (ast.If, ast.Try)):\n"
                     "            todo[:0] = [*n.body, *n.orelse]\n"
                     "def collects(reached):\n"
                     "    tests = []\n"
                     "    for n in reached:\n"
                     "        if isinstance(n, ast.If):\n"
                     "            tests.append((n, n.orelse))\n"
                     "def no_compound(body):\n"
                     "    for st in body:\n"
                     "        no_compound(st.body)\n", encoding="utf-8")
    got = {f: int(v.split(":", 1)[0]) for (_m, f), v in own_block_walks([probe], tmp_path).items()}
    assert got == {"rec": 5, "stmt": 9, "work": 15, "front": 21}, got


def test_every_package_folder_is_installed():
    """``pyproject.toml`` lists its packages by hand: a folder of ``pp_attr_lint`` with an
    ``__init__.py`` that the list lacks is left out of a (non-editable) install, and every check
    there dies importing it."""
    import tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(conf["packages"]) - set(conf.get("package-dir", {}))
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / PKG).rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert listed == folders, (sorted(folders - listed), sorted(listed - folders))

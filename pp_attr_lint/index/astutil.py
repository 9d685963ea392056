"""Small fast helpers over the stdlib ``ast`` that the summarizer, the semantic model and the
rules share: dotted names, reference chains, a faster ``ast.walk`` / ``ast.iter_child_nodes``
without the context and operator leaves, and the statements on given lines."""

from __future__ import annotations

import ast
import re
from collections import deque


def dotted_name(node: ast.AST | None) -> str | None:
    """Return ``"a.b.c"`` for a Name/Attribute chain, else ``None``."""
    chain = ref_chain(node) if node is not None else None
    return ".".join(chain) if chain is not None else None


def last_name(node) -> str | None:
    """The last name of a ``Name`` or ``Attribute`` node (``self.a.b`` -> ``b``), else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def ref_chain(node: ast.AST) -> tuple[str, ...] | None:
    """Return ``("self", "a", "b")`` for ``self.a.b`` (a name then attribute reads), else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return None



# nodes that carry nothing a summary records: contexts and operators (one shared object each)
_LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


# ASDL field types that never hold a node the walk visits: plain values, and the leaves above
_SCALAR_FIELDS = frozenset({"identifier", "string", "constant", "int", "expr_context", "boolop", "operator",
                            "unaryop", "cmpop"})
class _FieldTable(dict):
    """``{node class: _child_fields(node class)}``, filled at each class's first lookup."""

    def __missing__(self, cls: type) -> tuple | None:
        got = self[cls] = _child_fields(cls)
        return got


_CHILD_FIELDS: dict[type, tuple | None] = _FieldTable()


def short_source(node: ast.AST, limit: int = 48) -> str | None:
    """The source of expression ``node`` on one line, cut to ``limit`` characters (``...`` at the
    end); ``None`` when ``ast.unparse`` cannot print it."""
    try:
        text = " ".join(ast.unparse(node).split())
    except Exception:  # noqa: BLE001 - a hand-made tree ast cannot print
        return None
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _child_fields(cls: type) -> tuple | None:
    """``((field, is_list), ...)``: the fields of node class ``cls`` that can hold nodes
    :func:`walk` visits, in ``_fields`` order, read from the ASDL signature that CPython puts in
    each node class's docstring (``"Attribute(expr value, identifier attr, expr_context ctx)"``);
    ``None`` when the docstring does not give it (then every field is looked at)."""
    if not cls._fields:
        return ()
    m = re.match(rf"\s*{cls.__name__}\((.*)\)\s*$", cls.__doc__ or "", re.S)
    if m is None:
        return None
    sig = [part.strip() for part in m.group(1).split(",")]
    if len(sig) != len(cls._fields):
        return None
    out = []
    for part, field in zip(sig, cls._fields):
        typ, _, name = part.rpartition(" ")
        if name != field:
            return None
        if typ.rstrip("*?") not in _SCALAR_FIELDS:
            out.append((field, typ.endswith("*")))
    return tuple(out)


def walk(node: ast.AST):
    """Every node under ``node`` (itself included) in :func:`ast.walk`'s order (breadth first),
    without the context and operator leaves (``Load``, ``Add``, ``Not``, ...; read them as ``.ctx``
    and ``.op`` of their parents): the summarizer's hot loop (about half the nodes of a function
    are those) and a faster ``ast.walk`` for the analyses that look for other nodes.  Only the
    fields that can hold nodes are read (see :func:`_child_fields`)."""
    todo = deque((node,))
    pop, push, extend, AST = todo.popleft, todo.append, todo.extend, ast.AST
    table = _CHILD_FIELDS
    while todo:
        node = pop()
        if node is None:
            continue  # a hole in a list field (`Dict.keys` for `**d`, `kw_defaults`)
        fields = table[node.__class__]
        if fields is None:
            for name in node._fields:
                v = getattr(node, name, None)
                if v.__class__ is list:
                    for x in v:
                        if isinstance(x, AST) and not isinstance(x, _LEAVES):
                            push(x)
                elif isinstance(v, AST) and not isinstance(v, _LEAVES):
                    push(v)
        else:
            for name, many in fields:
                v = getattr(node, name, None)
                if many:
                    extend(v)
                elif v is not None:
                    push(v)
        yield node


def statements_on_lines(body: list, marked: list[int]):
    """The statements of ``body``, and of the blocks inside them at any depth (``except``
    handlers included), whose lines hold one of the line numbers ``marked`` (sorted): a node
    whose text holds a word lies in such a statement, so the others are not visited.  A compound
    statement comes before the statements of its blocks."""
    from bisect import bisect_left

    todo = list(body)
    while todo:
        node = todo.pop()
        k = bisect_left(marked, node.lineno)
        if k == len(marked) or marked[k] > node.end_lineno:
            continue  # no marked line in this statement
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(node, field, ()))
        for case in getattr(node, "cases", ()):  # match statements (a match_case has no lines)
            todo.extend(case.body)


def child_nodes(node: ast.AST) -> list:
    """The direct children of ``node`` that :func:`walk` visits, in :func:`ast.iter_child_nodes`'s
    order, without the context and operator leaves (a faster ``ast.iter_child_nodes``)."""
    fields = _CHILD_FIELDS[node.__class__]
    if fields is None:
        return [c for c in ast.iter_child_nodes(node) if not isinstance(c, _LEAVES)]
    out = []
    for name, many in fields:
        v = getattr(node, name, None)
        if many:
            out.extend(x for x in v if x is not None)
        elif v is not None:
            out.append(v)
    return out


def levels(root: ast.AST) -> list[list]:
    """The nodes under ``root`` (itself included) by depth: ``[[root], [its children], ...]``,
    each level left to right; their concatenation is ``list(walk(root))``."""
    table = _CHILD_FIELDS
    out = []
    level = [root]
    while level:
        out.append(level)
        nxt: list = []
        push, extend = nxt.append, nxt.extend
        holes = False
        for node in level:
            fields = table[node.__class__]
            if fields is None:
                extend(child_nodes(node))
                continue
            for name, many in fields:
                v = getattr(node, name, None)
                if many:
                    if v:
                        extend(v)
                        holes = holes or None in v  # `Dict.keys` of `**d`, `kw_defaults`
                elif v is not None:
                    push(v)
        level = [x for x in nxt if x is not None] if holes else nxt
    return out


def module_classes(tree: ast.Module):
    """The classes of a parsed module (``tree``): those at its top level and in its top-level
    ``if`` / ``try`` blocks (no walk of the whole tree), in source order.  Yields
    ``ast.ClassDef`` nodes; raises nothing."""
    todo = list(tree.body)
    while todo:
        n = todo.pop(0)
        if isinstance(n, ast.ClassDef):
            yield n
        elif isinstance(n, (ast.If, ast.Try)):
            handlers = [s for h in getattr(n, "handlers", ()) for s in h.body]
            todo[:0] = [*n.body, *n.orelse, *getattr(n, "finalbody", ()), *handlers]


def source_segment(lines, node: ast.AST, limit: int = 48) -> str | None:
    """The source of ``node`` on one line (whitespace runs as one space), cut to ``limit``
    characters (``...`` at the end), read from ``lines`` (a :class:`~pp_attr_lint.index.spec.LineIndex` of its module); ``None`` when it has no position."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first < 0 or last >= len(lines.lines):
        return None
    start, end = lines.col(node.lineno, node.col_offset), lines.col(node.end_lineno, node.end_col_offset)
    if first == last:
        raw = lines.lines[first][start:end]
    else:
        parts, size = [lines.lines[first][start:]], 0
        for i in range(first + 1, last + 1):
            size += len(parts[-1])
            if size > 4 * limit:
                break
            parts.append(lines.lines[i][:end] if i == last else lines.lines[i])
        raw = "".join(parts)
    text = " ".join(raw.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def raises_attribute_error_only(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function's body (after its docstring) is one ``raise AttributeError(...)``
    (``torch.nn.Module.__getattr__`` for a name it does not hold): as ``__getattr__`` it answers
    no attribute."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        else fn.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    if isinstance(exc, ast.Call):
        if any(isinstance(a, ast.Starred) for a in exc.args) or exc.keywords:
            return False
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "AttributeError"


def answers_held_names_only(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a ``__getattr__(self, name)`` returns only under a test ``name in <container>``
    and ends in ``raise AttributeError(...)``: it answers only the names held in the instance's
    containers (its registered parameters, buffers and submodules), as ``torch.nn.Module``'s
    and MindSpore's ``Cell.__getattr__`` (mindspore/nn/cell.py) do, and raises for any other.
    Its body (after a docstring) is ``if`` statements without ``else`` holding assignments,
    such ``if`` statements and ``return``s, then the ``raise``."""
    args = fn.args.posonlyargs + fn.args.args
    if len(args) != 2:
        return False
    name = args[1].arg
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        else fn.body
    if not body or not isinstance(body[-1], ast.Raise) or body[-1].exc is None:
        return False
    exc = body[-1].exc.func if isinstance(body[-1].exc, ast.Call) else body[-1].exc
    if not (isinstance(exc, ast.Name) and exc.id == "AttributeError"):
        return False

    stmts = [n for st in body[:-1] for n in ast.walk(st) if isinstance(n, ast.stmt)]
    if any(not (isinstance(n, ast.If) and not n.orelse) and not isinstance(n, ast.Return)
           and not (isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets)) for n in stmts):
        return False
    # the returns inside an `if name in <container>:` (every statement is one of those `if`s, an
    # assignment or a return, so a return is in that block or in none)
    held = {id(r) for n in stmts if isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
            and isinstance(n.test.left, ast.Name) and n.test.left.id == name and len(n.test.ops) == 1
            and isinstance(n.test.ops[0], ast.In) for st in n.body for r in ast.walk(st) if isinstance(r, ast.Return)}
    return all(id(n) in held for n in stmts if isinstance(n, ast.Return))

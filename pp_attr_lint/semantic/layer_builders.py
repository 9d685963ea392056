"""Which calls build this rank's slice of the decoder layers: one place for the shape of a
``make_layers`` call site (read per file) and for what a callee is (read across the tree).

vLLM's ``make_layers`` (``vllm/model_executor/models/utils.py``) returns ``(start_layer, end_layer,
modules)``; SGLang's (``sglang/srt/utils/common.py``, 0.5.23) returns ``(modules, start_layer,
end_layer)``.  A fork may wrap it: lsglang 1.6.5's ``make_pp_layers`` (``sglang/srt/utils/common.py``)
returns ``make_layers(...)`` with this rank's ``pp_rank``/``pp_size``, and its models call only the
wrapper.

* :func:`list_site`: per file, with no other file read (its answer is cached with the file): the
  list attribute and the callee of ``self.a, self.start_layer, self.end_layer = f(...)`` (either
  order) where ``f`` is named ``make_layers`` or, a candidate, is any other call;
* :func:`is_builder`: across the tree, whether such a callee builds the list: named
  ``make_layers``, or a module-level function of the analysed tree each of whose ``return``s is a
  call of one that does.
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..index.astutil import dotted_name

# bytes a file holds where it may assign a make_layers list: the name, or a range attribute
# unpacked beside the list (a wrapper's call site)
NEEDLES = (F.MAKE_LAYERS.encode() + b"(", b"end_layer")


def named_builder(callee: str | None) -> bool:
    """Whether the dotted name ``callee`` ends in ``make_layers``."""
    return callee is not None and callee.rsplit(".", 1)[-1] == F.MAKE_LAYERS


def list_site(target: ast.AST, value: ast.AST | None, self_name: str = "self") -> tuple[str, str] | None:
    """``(list attribute, callee)`` when ``target = value`` unpacks a call into three attributes
    of ``self_name``, two of them ``start_layer`` and ``end_layer`` and the third the list
    (``self.start_layer, self.end_layer, self.layers = make_layers(...)``, either order); the
    callee is the call's dotted name (``""`` when it has none).  ``None`` for anything else.
    Whether the callee builds the list is :func:`is_builder`'s to say."""
    if not (isinstance(target, ast.Tuple) and isinstance(value, ast.Call) and len(target.elts) == 3):
        return None
    attrs = [e.attr for e in target.elts if isinstance(e, ast.Attribute)
             and isinstance(e.value, ast.Name) and e.value.id == self_name]
    rest = [a for a in attrs if a not in F.RANGE_ATTRIBUTES]
    if len(attrs) != 3 or len(rest) != 1 or set(attrs) - set(rest) != set(F.RANGE_ATTRIBUTES):
        return None
    return rest[0], dotted_name(value.func) or ""


def builder_sites(fn: ast.AST, self_name: str = "self"):
    """``(statement, list attribute, callee)`` for each :func:`list_site` assignment in ``fn``'s
    own subtree (nested functions and classes included)."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                got = list_site(t, n.value, self_name)
                if got is not None:
                    yield n, got[0], got[1]


def is_builder(resolver, reader, module: str, callee: str | None, depth: int = 0) -> bool:
    """Whether ``callee`` (a dotted name called in ``module``) builds a ``make_layers`` list:
    it is named ``make_layers``, or it resolves to an undecorated module-level function of the
    analysed tree that has a ``return`` and each of whose ``return``s is a call of a callee that
    does (three wrappers deep at most).  A callee that does not resolve to such a function is not a
    builder.  ``resolver``: the run's :class:`~pp_attr_lint.resolve.Resolver`; ``reader``: its
    :class:`~.reader.TreeReader`.  Raises nothing."""
    if named_builder(callee):
        return True
    if not callee or depth >= 3:
        return False
    try:
        with resolver.keeping_why():
            sym = resolver.resolve_dotted(module, callee)
    except Exception:  # noqa: BLE001  (an unreadable import is not a builder)
        return False
    if sym is None or sym[0] != "function":
        return False
    fdef = reader.function_node((sym[1], sym[2]))
    if fdef is None or fdef.decorator_list:
        return False
    rets = [n for n in ast.walk(fdef) if isinstance(n, ast.Return)]
    return bool(rets) and all(
        isinstance(r.value, ast.Call) and is_builder(resolver, reader, sym[1], dotted_name(r.value.func), depth + 1)
        for r in rets)

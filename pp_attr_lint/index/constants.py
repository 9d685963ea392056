"""Module-level string constants, folded: what a ``register_model(ARCH, TARGET)`` call names when
its arguments are names bound once to strings, or f-strings of those and ``__name__``."""

from __future__ import annotations

import ast

from .spec import MODULE_NAME_MARK


def string_constants(tree: ast.Module) -> dict:
    """Name -> the string a module-level ``NAME = "..."`` (or an f-string of such names and
    ``__name__``) binds, for the names bound once at module level."""
    count: dict = {}
    values: dict = {}
    for st in tree.body:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                count[t.id] = count.get(t.id, 0) + 1
                if len(targets) == 1 and st.value is not None:
                    values[t.id] = st.value
    out: dict = {}
    for name, value in values.items():  # in source order: a later constant may use an earlier one
        if count[name] == 1:
            got = folded(value, out)
            if got is not None:
                out[name] = got.value
    return out


def folded(node, constants: dict):
    """An ``ast.Constant`` string for ``node`` when it is one, a name of ``constants``, or an
    f-string of those and ``__name__`` (:data:`~pp_attr_lint.index.spec.MODULE_NAME_MARK`); else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node
    if isinstance(node, ast.Name):
        if node.id == "__name__":
            return ast.Constant(MODULE_NAME_MARK)
        return ast.Constant(constants[node.id]) if node.id in constants else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                if v.conversion != -1 or v.format_spec is not None:
                    return None
                v = folded(v.value, constants)
            else:
                v = folded(v, constants)
            if v is None:
                return None
            parts.append(v.value)
        return ast.Constant("".join(parts))
    return None

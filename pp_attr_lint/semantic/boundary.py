"""The stage boundary: what a model allocates for what a rank receives from the previous
pipeline-parallel rank (``make_empty_intermediate_tensors``, vLLM's
``make_empty_intermediate_tensors_factory`` in ``vllm/model_executor/models/utils.py``), the keys
its ``forward`` sends to the next rank (``IntermediateTensors({...})``, ``vllm/sequence.py``), the
keys it reads from what it received (``intermediate_tensors["k"]``), and the values it sends that
are ``None`` on a rank (followed by :class:`.dataflow.ValueFlow` and through the layers'
``forward`` returns).

Per file (a rule's ``collect``): :func:`class_keys`, :func:`none_sends`, :func:`none_positions`
and :func:`layer_stores`.  Across files (a rule's ``check``):
:func:`layer_none`.  Positions are ``[row, col, end_row, end_col]`` (1-based rows, 0-based
character columns).
"""

from __future__ import annotations

import ast
import re

from .. import facts as F
from ..index.astutil import dotted_name
from ..index.astutil import walk as fast_walk
from .dataflow import CONTAINER, OTHER, SCENARIOS, ValueFlow, own_subtree, self_attr

FACTORY = "make_empty_intermediate_tensors_factory"


def str_keys(node):
    """``[(key, node)]`` of a list/tuple of string literals, or of a dict literal's string keys;
    ``None`` when any element or key is not a string literal (``**spread``, a variable)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        elts = node.elts
    elif isinstance(node, ast.Dict):
        elts = node.keys
    else:
        return None
    out = []
    for e in elts:
        if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
            return None
        out.append((e.value, e))
    return out


def is_call_of(n, name) -> bool:
    """Whether node ``n`` calls ``name`` or ``anything.name``."""
    return isinstance(n, ast.Call) and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)


def class_keys(c, lines) -> dict | None:
    """What class ``c`` (an ``ast.ClassDef``; ``lines`` the file's text) allocates for what it
    receives, sends and reads, or ``None`` when it allocates nothing literal or has no ``forward``:
    ``{"alloc": [[key, *position]], "alloc_at": position of the key list, "sent": [[key,
    *position]], "sent_known": whether every send is a literal, "reads": [[key, *position]],
    "reads_known": whether every use of ``intermediate_tensors`` is a literal subscript or an ``is
    None`` test}``."""
    methods = {m.name: m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    alloc = None
    init = methods.get("__init__")
    if init is not None:
        for n in fast_walk(init):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == F.PP_HOOK
                                                 and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                 for t in n.targets):
                if isinstance(n.value, ast.Call) and getattr(n.value.func, "id", None) == FACTORY and n.value.args:
                    alloc = str_keys(n.value.args[0])
                    alloc_at = n.value.args[0]
                else:
                    return None  # forwarded from another module, or computed
    hook = methods.get(F.PP_HOOK)
    if hook is not None:
        rets = [n for n in fast_walk(hook) if isinstance(n, ast.Return) and n.value is not None]
        if len(rets) == 1 and isinstance(rets[0].value, ast.Call) and getattr(rets[0].value.func, "id", None) == CONTAINER \
                and rets[0].value.args:
            alloc = str_keys(rets[0].value.args[0])
            alloc_at = rets[0].value.args[0]
        else:
            return None
    if alloc is None:
        return None
    fwd = methods.get("forward")
    if fwd is None:
        return None
    sent, reads, known = [], [], True
    uses, none_tested = [], set()
    for n in fast_walk(fwd):  # one walk, in ast.walk's order
        if is_call_of(n, CONTAINER):
            keys = str_keys(n.args[0]) if n.args else None
            if keys is None:
                known = False  # `**spread` or built elsewhere: the sent keys are not all known
            else:
                sent += keys
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "intermediate_tensors" \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            reads.append((n.slice.value, n))
        elif isinstance(n, ast.Name) and n.id == "intermediate_tensors":
            uses.append(n)
        elif isinstance(n, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
            none_tested.add(id(n.left))
    # the receiving side is only fully read when every use of intermediate_tensors is a literal
    # subscript or the operand of `is None` / `is not None`
    subscripted = {id(r[1].value) for r in reads}
    reads_known = all(id(u) in subscripted or id(u) in none_tested for u in uses)

    def pos(node):
        return [node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                lines.col(node.end_lineno, node.end_col_offset)]

    return {"alloc": [[k, *pos(n)] for k, n in alloc], "alloc_at": pos(alloc_at),
            "sent": [[k, *pos(n)] for k, n in sent] if sent else [], "sent_known": known and bool(sent),
            "reads": [[k, *pos(n)] for k, n in reads], "reads_known": reads_known}


RETURN_NONE = re.compile(r"\breturn\b[^\n#]*\bNone\b")


def none_sends(fn, lines) -> list:
    """``[key, scenario, sources, row, col, end_row, end_col]`` for each value of an
    ``IntermediateTensors({...})`` that ``fn`` sends whose every source on that rank scenario is
    the ``None`` literal (``["none", line]``) or an element of a layer's return (``["layer", attr,
    i]``, which :func:`layer_none` confirms through the layer's ``forward``).  Only the first
    scenario of :data:`SCENARIOS` with such a value is reported."""
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [x.arg for x in (a.vararg, a.kwarg) if x]
    out = []
    for scenario, env in SCENARIOS:
        flow = ValueFlow(env)
        flow.block(fn.body, {p: OTHER for p in params})
        for _call, keys in flow.sends.items():
            for k, (sources, node) in keys.items():
                if sources and all(s != "other" and (s[0] == "none" or s[0] == "layer" and s[2] >= 0) for s in sources):
                    out.append([k, scenario, sorted([list(s) for s in sources], key=repr),
                                node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                                lines.col(node.end_lineno, node.end_col_offset)])
        if out:
            break  # the first rank it holds on is the one reported
    return out


def none_positions(fn) -> list:
    """The positions that are the ``None`` literal in every tuple ``fn`` returns (``return h,
    None``), when every ``return`` gives a tuple of one length and ``fn`` is no generator."""
    rets, n = [], None
    for node in own_subtree(fn):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return []
        if isinstance(node, ast.Return):
            v = node.value
            if not isinstance(v, ast.Tuple) or any(isinstance(e, ast.Starred) for e in v.elts) \
                    or (n is not None and len(v.elts) != n):
                return []
            n = len(v.elts)
            rets.append(v)
    if not rets:
        return []
    return [i for i in range(n) if all(isinstance(r.elts[i], ast.Constant) and r.elts[i].value is None for r in rets)]


_LIST_STORE = re.compile(r"self\.(\w+)\s*\)?\s*=\s*(?:[\w.]+\.)?make_layers\s*\(")


def layer_stores(c, lines) -> dict:
    """``{attr: [[method, constructor or None], ...]}``: each store of ``self.attr``, for an
    ``attr`` that a ``make_layers`` call is assigned to, in a method of class ``c``, with the class
    the ``make_layers`` lambda builds (``lambda prefix: Layer(...)``); ``None`` for any other store
    of it.  Only the methods whose text names ``self.attr`` are walked."""
    attrs = set(_LIST_STORE.findall("".join(lines.lines[c.lineno - 1:c.end_lineno])))
    if not attrs:
        return {}
    named = re.compile(r"self\.(?:%s)\b" % "|".join(map(re.escape, sorted(attrs))))
    out: dict = {}
    for m in c.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or not named.search("".join(lines.lines[m.lineno - 1:m.end_lineno])):
            continue
        for n in own_subtree(m):
            if isinstance(n, ast.Assign):
                targets = [t for tt in n.targets for t in (tt.elts if isinstance(tt, (ast.Tuple, ast.List)) else [tt])]
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                targets = [n.target]
            else:
                continue
            for t in targets:
                attr = self_attr(t)
                if attr not in attrs:
                    continue
                ctor = None
                v = n.value
                if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple) and t is n.targets[0].elts[-1] \
                        and isinstance(v, ast.Call) and (getattr(v.func, "id", None) == "make_layers"
                                                         or getattr(v.func, "attr", None) == "make_layers"):
                    fn = v.args[1] if len(v.args) > 1 else next((k.value for k in v.keywords if k.arg == "layer_fn"), None)
                    if isinstance(fn, ast.Lambda) and isinstance(fn.body, ast.Call):
                        ctor = dotted_name(fn.body.func)
                out.setdefault(attr, []).append([m.name, ctor])
    return out


def layer_none(resolver, project, facts_of, key, attr: str, i: int) -> str | None:
    """Why element ``i`` of what a slot of ``self.attr`` of class ``key`` (``(module, name)``)
    returns is ``None``: every store of ``attr`` that runs for ``key`` is a ``make_layers`` list of
    one class, whose ``forward`` gives ``None`` there in every ``return``.  ``None`` when that is
    not established (unresolved classes included); nothing is raised.

    ``resolver`` is the run's :class:`pp_attr_lint.resolve.Resolver`, ``project`` its project
    (``path(module)``), ``facts_of(module)`` the collected per-file facts of a module
    (``{"stores": {class: layer_stores(...)}, "returns": {class: [line, none_positions(...)]}}``
    or ``None``)."""
    from ..resolve import EXTERNAL, Unresolved
    from ..textio import display_path

    try:
        mro = [e for e in resolver.mro(key) if e[0] != EXTERNAL]
        ctors = []
        for k in mro:
            for m, scope in resolver.class_record(k)["methods"].items():
                if attr not in scope.get("assigns", {}):
                    continue
                if next(e for e in mro if m in resolver.class_record(e)["methods"]) != k:
                    continue  # overridden: this store does not run for `key`
                stores = ((facts_of(k[0]) or {}).get("stores", {}).get(k[1], {})).get(attr, [])
                mine = [c for meth, c in stores if meth == m]
                if not mine or None in mine:
                    raise Unresolved("receiver-unresolved", "a store that is not a make_layers list")
                ctors += [(k, c) for c in mine]
        names = set()
        for k, ctor in ctors:
            layer = resolver.resolve_class(k[0], ctor)
            if layer is None:
                raise Unresolved("receiver-unresolved", ctor)
            owner = None
            for e in resolver.mro(layer):
                if e[0] == EXTERNAL:
                    break
                methods = resolver.class_record(e)["methods"]
                if "__call__" in methods:
                    raise Unresolved("dynamic-class", "__call__")
                if "forward" in methods:
                    owner = e
                    break
            ret = (facts_of(owner[0]) or {}).get("returns", {}).get(owner[1]) if owner else None
            if ret is None or i not in ret[1]:
                raise Unresolved("receiver-unresolved", "not None")
            path = project.path(owner[0])
            names.add(f"`self.{attr}` holds `{layer[1]}` layers (`make_layers`); every `return` of "
                      f"`{owner[1]}.forward` ({display_path(path) if path else owner[0]}:{ret[0]}) gives "
                      f"`None` as element {i}")
        return "; ".join(sorted(names)) if ctors else None
    except (Unresolved, StopIteration, KeyError, RecursionError):
        return None

"""The stage boundary of a model: the loop over this rank's layers and the values it carries from
one layer to the next, what a rank sends (the payload it builds) and what it receives (its reads
of the payload parameter), what it allocates for what it receives, and the values it sends that are
``None`` on a rank.

Each stage of a pipeline-parallel (PP) run executes only its own layers, then hands what it built
to the next stage in one payload: vLLM's ``IntermediateTensors`` (vllm/sequence.py) and SGLang's
``PPProxyTensors`` (sglang/srt/model_executor/forward_batch_info.py), both a dict of tensors by
key. A value that the layer loop carries and the payload does not carry stops at the boundary.
What a model allocates for what a rank receives is its ``make_empty_intermediate_tensors`` (vLLM's
``make_empty_intermediate_tensors_factory`` in ``vllm/model_executor/models/utils.py``); what the
runner allocates is the engine's side
(:meth:`pp_attr_lint.engines.sglang.SglangEngine.proxy_contract`).

Per file (a rule's ``collect``): :func:`class_keys`, :func:`none_sends`, :func:`none_positions`,
:func:`layer_stores`, :func:`layer_loops`, :func:`carried`, :func:`sent_keys`,
:func:`received_reads`, :func:`allocated_keys`.  Across files (a rule's ``check``):
:func:`layer_none`.  Positions are ``[row, col, end_row, end_col]`` (1-based rows, 0-based
character columns).  The functions take ``ast`` nodes and return plain data; they raise nothing.
"""

from __future__ import annotations

import ast
import re

from .. import facts as F
from ..index.astutil import dotted_name
from ..index.astutil import walk as fast_walk
from .dataflow import CONTAINER, OTHER, SCENARIOS, ValueFlow, own_subtree, self_attr
from .layer_builders import named_builder

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
    attrs = set(_LIST_STORE.findall(lines.span(c)))
    if not attrs:
        return {}
    named = re.compile(r"self\.(?:%s)\b" % "|".join(map(re.escape, sorted(attrs))))
    out: dict = {}
    for m in c.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or not named.search(lines.span(m)):
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
                        and isinstance(v, ast.Call) and named_builder(dotted_name(v.func)):
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


# the payload classes (constructed to send, passed in to receive)
PAYLOADS = ("IntermediateTensors", "PPProxyTensors")
# the parameter names under which a model's forward receives the payload (vLLM, SGLang)
RECEIVED = ("intermediate_tensors", "pp_proxy_tensors")
# the loop over this rank's layers names one of these (`range(self.start_layer, self.end_layer)`,
# `islice(self.layers, self.start_layer, self.end_layer)`, `self.layers[self.start_layer:...]`)
LAYER_RANGE = F.RANGE_ATTRIBUTES


def flat(body):
    """The statements of ``body``, with the bodies of ``with`` blocks in their place (they run
    once, on every rank that reaches them)."""
    for st in body:
        if isinstance(st, (ast.With, ast.AsyncWith)):
            yield from flat(st.body)
        else:
            yield st


def stores(node) -> set:
    """The names ``node`` binds (assignments, loop targets, ``with ... as``, walrus)."""
    return {n.id for n in fast_walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def layer_loops(fn, text) -> list:
    """The ``for`` statements of ``fn``'s own body (``with`` blocks flattened) that loop over this
    rank's layers: their iterable's source (``text(node)``) names ``start_layer`` or ``end_layer``."""
    return [st for st in flat(fn.body) if isinstance(st, (ast.For, ast.AsyncFor))
            and any(w in text(st.iter) for w in LAYER_RANGE)]


def carried(loop) -> list:
    """``[(name, slot)]``: the names a statement of ``loop``'s body assigns from a call (a tuple
    target ``h, r, name = layer(...)``, or ``name = layer(...)``) that also takes the name as an
    argument (at ``slot``, a position or a keyword): the value one layer hands the next."""
    out = []
    for st in fast_walk(loop):
        if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)):
            continue
        targets = {e.id for t in st.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                   if isinstance(e, ast.Name)}
        args = [(k, a) for k, a in enumerate(st.value.args)] + [(k.arg, k.value) for k in st.value.keywords]
        for slot, a in args:
            if isinstance(a, ast.Name) and a.id in targets and not any(isinstance(x, ast.Starred) for x in st.value.args):
                out.append((a.id, slot))
    return out


def payload_calls(fn) -> list:
    """The calls in ``fn`` that build a payload (``IntermediateTensors(...)``, ``PPProxyTensors(...)``)."""
    return [n for n in fast_walk(fn) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) in PAYLOADS]


def sent_keys(call) -> tuple | None:
    """The keys a payload call sends, when its argument is a dict literal with string keys
    (``IntermediateTensors({"hidden_states": h, "residual": r})``); ``None`` otherwise (built
    elsewhere, ``**`` unpacking, a computed key)."""
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "tensors"), None)
    if not isinstance(arg, ast.Dict) or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                for k in arg.keys):
        return None
    return tuple(k.value for k in arg.keys)


def received_reads(fn) -> list:
    """``[(key, node, hard, parameter)]``: the reads of a constant key from the payload ``fn``
    receives (a ``parameter`` named as in :data:`RECEIVED`): ``p["k"]`` and ``p.tensors["k"]``
    are hard (a missing key raises ``KeyError``), ``p.get("k")`` and ``p.tensors.get("k")`` are
    not.  Empty when ``fn`` takes no such parameter."""
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} & set(RECEIVED)
    if not params:
        return []

    def receiver(node) -> str | None:
        if isinstance(node, ast.Attribute) and node.attr == "tensors":
            node = node.value
        return node.id if isinstance(node, ast.Name) and node.id in params else None

    out = []
    for n in fast_walk(fn):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and receiver(n.value) \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            out.append((n.slice.value, n, True, receiver(n.value)))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" \
                and receiver(n.func.value) and n.args and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            out.append((n.args[0].value, n, False, receiver(n.func.value)))
    return out


def layer_class(cls) -> str | None:
    """The class name a ``make_layers`` call of ``cls`` builds its layers with (``lambda prefix:
    DecoderLayer(...)``); ``None`` when not one plain class call."""
    for n in fast_walk(cls):
        if isinstance(n, ast.Call) and named_builder(dotted_name(n.func)) \
                and len(n.args) >= 2 and isinstance(n.args[1], ast.Lambda) and isinstance(n.args[1].body, ast.Call):
            f = n.args[1].body.func
            return f.id if isinstance(f, ast.Name) else None
    return None


def taken_as_given(layer, slot) -> bool | None:
    """Whether ``layer``'s ``forward`` (``layer`` an ``ast.ClassDef``) uses the parameter at
    ``slot`` (a position after ``self`` or a keyword) as it comes: it never tests it (``is
    None``, truth) and never rebinds it.  ``None`` when it has no such parameter or no ``forward``."""
    fwd = next((m for m in layer.body if isinstance(m, ast.FunctionDef) and m.name == "forward"), None)
    if fwd is None:
        return None
    params = [a.arg for a in fwd.args.posonlyargs + fwd.args.args][1:]
    names = params + [a.arg for a in fwd.args.kwonlyargs]
    name = params[slot] if isinstance(slot, int) and slot < len(params) else slot if slot in names else None
    if name is None:
        return None
    for n in fast_walk(fwd):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            return False  # rebound: what comes in may not matter
        tests = [n.test] if isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert)) else \
            n.values if isinstance(n, ast.BoolOp) else [n.operand] if isinstance(n, ast.UnaryOp) else \
            [n.left, *n.comparators] if isinstance(n, ast.Compare) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in tests):
            return False  # tested: a missing value has its own path
    return True


def read_before_payload(body, loop, payloads) -> set:
    """The names read after ``loop`` (a statement of ``body``, flattened as :func:`flat`) by the
    statements up to (and with) the one that builds the last of ``payloads``: a value folded into
    what is sent (``hidden_states + prefix_delta``)."""
    items = list(flat(body))
    last = max(p.lineno for p in payloads)
    out = set()
    for st in items[items.index(loop) + 1:]:
        if st.lineno > last:
            break
        out |= {n.id for n in fast_walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return out


# vLLM's runner allocates what a rank receives with the model's own hook
# (vllm/v1/worker/gpu_model_runner.py: `self.model.make_empty_intermediate_tensors(...)`), which
# models bind in `__init__` from `make_empty_intermediate_tensors_factory(keys, hidden_size)`
# (vllm/model_executor/models/utils.py) or define as a method
ALLOCATION_HOOK = "make_empty_intermediate_tensors"
ALLOCATION_FACTORY = "make_empty_intermediate_tensors_factory"


def allocated_keys(cls) -> tuple | None:
    """The keys the vLLM runner allocates for what a rank of class ``cls`` (an ``ast.ClassDef``)
    receives: the string literals of ``self.make_empty_intermediate_tensors =
    make_empty_intermediate_tensors_factory([...], ...)`` in ``__init__``, or of the dict literal a
    ``make_empty_intermediate_tensors`` method returns in ``IntermediateTensors({...})``.
    ``None`` when the class binds the hook another way (forwarded, computed) or not at all."""
    for m in cls.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if m.name == "__init__":
            for n in fast_walk(m):
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == ALLOCATION_HOOK
                                                     and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                     for t in n.targets):
                    v = n.value
                    if isinstance(v, ast.Call) and getattr(v.func, "id", getattr(v.func, "attr", None)) == \
                            ALLOCATION_FACTORY and v.args and isinstance(v.args[0], (ast.List, ast.Tuple)) and all(
                                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.args[0].elts):
                        return tuple(e.value for e in v.args[0].elts)
                    return None
        elif m.name == ALLOCATION_HOOK:
            returns = [n for n in fast_walk(m) if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)]
            keys = {sent_keys(r.value) for r in returns
                    if getattr(r.value.func, "id", getattr(r.value.func, "attr", None)) in PAYLOADS}
            return keys.pop() if len(keys) == 1 and None not in keys and len(returns) == len(keys) else None
    return None

"""The stage boundary of a model: the loop over this rank's layers and the values it carries from
one layer to the next, what a rank sends (the payload it builds) and what it receives (its reads
of the payload parameter).

Each stage of a pipeline-parallel (PP) run executes only its own layers, then hands what it built
to the next stage in one payload: vLLM's ``IntermediateTensors`` (vllm/sequence.py) and SGLang's
``PPProxyTensors`` (sglang/srt/model_executor/forward_batch_info.py), both a dict of tensors by
key. A value that the layer loop carries and the payload does not carry stops at the boundary.
What the runner allocates for what a rank receives is the engine's side
(:meth:`pp_attr_lint.engines.sglang.SglangEngine.proxy_contract`).

The functions here take ``ast`` nodes of one file and return plain data; they raise nothing.
"""

from __future__ import annotations

import ast

from ..index.astutil import walk as fast_walk

# the payload classes (constructed to send, passed in to receive)
PAYLOADS = ("IntermediateTensors", "PPProxyTensors")
# the parameter names under which a model's forward receives the payload (vLLM, SGLang)
RECEIVED = ("intermediate_tensors", "pp_proxy_tensors")
# the loop over this rank's layers names one of these (`range(self.start_layer, self.end_layer)`,
# `islice(self.layers, self.start_layer, self.end_layer)`, `self.layers[self.start_layer:...]`)
LAYER_RANGE = ("start_layer", "end_layer")


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
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "make_layers" \
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

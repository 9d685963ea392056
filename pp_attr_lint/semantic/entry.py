"""Entry points: what the engine calls on a model class, in which order and on which
pipeline-parallel ranks.

The engine builds a registered model class, loads its weights, runs its post-load hooks and then
serves requests with ``forward`` and the last rank's ``compute_logits``.  :data:`ENTRY_METHODS`
holds those calls as facts with their source; :class:`EntryPoints` says which classes of the
analysed tree the engine loads under pipeline parallelism (read from the tree's registries
through :mod:`pp_attr_lint.engines`) and which of their methods it runs.  A class the engine
refuses under PP is no entry point.
"""

from __future__ import annotations

from typing import NamedTuple

from .guards import FIRST, LAST, TRUE, f_and, f_not
from .service import Service

# the phases of a model's life in the engine, in the order they run on every rank
CONSTRUCT, LOAD, POST_LOAD, SERVE = 0, 1, 2, 3
PHASE_NAMES = {CONSTRUCT: "construction", LOAD: "weight loading", POST_LOAD: "post-load hooks", SERVE: "serving"}


class EntryMethod(NamedTuple):
    """One call the engine makes on a model: the method's name, its phase (:data:`CONSTRUCT` ...
    :data:`SERVE`), the ranks it runs on (a guard formula over ``@first`` / ``@last``), what it
    receives and sends between stages, and the source of the fact."""

    name: str
    phase: int
    ranks: tuple
    receives: tuple
    sends: tuple
    source: str


_LOADER = "vllm/model_executor/model_loader/base_loader.py (load_model: initialize_model, then load_weights)"
ENTRY_METHODS: tuple[EntryMethod, ...] = (
    EntryMethod("__init__", CONSTRUCT, TRUE, (), (), _LOADER + "; sglang/srt/model_loader/loader.py"),
    EntryMethod("load_weights", LOAD, TRUE, (), (), _LOADER + "; sglang/srt/model_loader/loader.py"),
    EntryMethod("post_load_weights", POST_LOAD, TRUE, (), (),
                "sglang/srt/model_loader/loader.py (after load_weights, when the model defines it)"),
    EntryMethod("forward", SERVE, TRUE, (f_not(FIRST),), (f_not(LAST),),
                "vllm/v1/worker/gpu_model_runner.py (execute_model: intermediate tensors in on ranks > first, "
                "IntermediateTensors out on ranks < last); sglang/srt/model_executor/model_runner.py "
                "(pp_proxy_tensors)"),
    EntryMethod("make_empty_intermediate_tensors", SERVE, f_not(FIRST), (), (),
                "vllm/v1/worker/gpu_model_runner.py (allocates what a rank > first receives)"),
    EntryMethod("compute_logits", SERVE, LAST, (), (), "vllm/v1/worker/gpu_model_runner.py (sample on the last rank)"),
    EntryMethod("embed_input_ids", SERVE, FIRST, (), (), "vllm/v1/worker/gpu_model_runner.py (first rank's inputs)"),
    EntryMethod("get_input_embeddings", SERVE, FIRST, (), (), "vllm/v1/worker/gpu_model_runner.py (older name)"),
)
BY_NAME = {m.name: m for m in ENTRY_METHODS}
# what SGLang's model runner calls on every model, in that order (sglang/srt/model_loader/loader.py:
# construction, load_weights, post_load_weights when defined; model_runner.py: forward, which runs
# the logits processor itself on the last rank); its other calls depend on the features in use
SGLANG_METHODS = frozenset({"__init__", "load_weights", "post_load_weights", "forward"})
RANK_WORDS = {TRUE: "every rank", FIRST: "the first rank", LAST: "the last rank", f_not(FIRST): "every rank but the first"}
# vLLM's AutoWeightsLoader (vllm/model_executor/models/utils.py, _load_module) hands each child
# module's weights to the child's own ``load_weights`` when it defines one
AUTO_LOADER = "AutoWeightsLoader"


def phase_of(method: str) -> int | None:
    """The phase in which the engine calls ``method`` on a model, ``None`` for a method it does
    not call itself."""
    m = BY_NAME.get(method)
    return None if m is None else m.phase


class EntryPoints(Service):
    """Which classes of the analysed tree the engine loads as models under pipeline parallelism
    (for a :class:`~.model.RankFacts` ``model``; memoized per run)."""

    def entry_classes(self, module: str) -> list | None:
        """The class keys of ``module`` that a registry of the analysed tree loads as a model and
        that the engine runs under pipeline parallelism: vLLM's model registry (and
        ``register_model`` calls) for classes with ``SupportsPP``, SGLang's ``EntryClass`` for
        classes whose ``forward`` takes what the runner requires.  ``[]`` when the module holds
        none, ``None`` when that cannot be established (a registered class that does not
        resolve, an engine fact that is not in the tree)."""
        memo = self._memo.setdefault("entries", {})
        if module in memo:
            return memo[module]
        memo[module] = None
        try:
            got = self._entry_classes(module)
        except Exception:  # noqa: BLE001  (cannot tell)
            got = None
        memo[module] = got
        return got

    def _registered(self, module: str) -> list:
        found = []
        top = module.split(".", 1)[0]
        for _tname, _arch, full, cls in self.r.model_registry(top) or ():
            if full == module:
                found.append((module, cls))
            elif module.startswith(full + "."):
                key = self.r.resolve_class(full, cls)
                if key is not None and key[0] == module:
                    found.append(key)
        for _arch, _top, key, _name, _m, _line in self.m.registrations():
            if key and key[0] == module:
                found.append(tuple(key))
        sglang = self.m.entry_classes(module)
        return list(dict.fromkeys(found + [tuple(k) for k in sglang or ()]))

    def _entry_classes(self, module: str) -> list | None:
        from .. import facts as F

        out = []
        for key in self._registered(module):
            if self.m.refused_under_pp(key[0], key[1]):
                continue  # SGLang's runner asserts what its forward lacks
            mro = self.r.mro(key)
            if any(e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL for e in mro) or self.m.entry_classes(module):
                out.append(key)
            elif not self.m.refuses_unsupported_models(module.split(".", 1)[0]):
                return None  # no SupportsPP, and no refusal of such a model in the tree
        return out

    def is_entry(self, key) -> bool | None:
        """Whether class ``key`` is one of :meth:`entry_classes` of its module (``None``: not known)."""
        got = self.entry_classes(key[0])
        return None if got is None else tuple(key) in got

    def methods(self, key) -> list[tuple[EntryMethod, tuple]]:
        """The engine's calls on an instance of entry class ``key``: each :class:`EntryMethod`
        with the class on the MRO that defines it (``("<external>", ...)`` for a base outside the
        analysed code), in the order the engine makes them; the methods no class defines are left
        out (``post_load_weights`` of a model without one), and so are those an SGLang-shaped
        engine (its ``EntryClass`` registry lists ``key``) does not call on every model
        (:data:`SGLANG_METHODS`)."""
        sglang = tuple(key) in [tuple(k) for k in self.m.entry_classes(key[0]) or ()]
        out = []
        for m in ENTRY_METHODS:
            if sglang and m.name not in SGLANG_METHODS:
                continue
            owner = self.definer(tuple(key), m.name)
            if owner is not None:
                out.append((m, owner))
        return out

    def definer(self, key, name: str):
        """The first class of the analysed code on ``key``'s MRO that defines method ``name``;
        ``None`` when none does or the MRO is not known."""
        try:
            for k in self.r.mro(key):
                if k[0] == "<external>":
                    continue
                if name in self.r.class_record(k)["methods"]:
                    return k
        except Exception:  # noqa: BLE001
            return None
        return None


# SGLang's model runner hands a rank after the first what the previous rank sent as the keyword
# `pp_proxy_tensors`, and only when the model's `forward` takes a parameter of that name
# (sglang/srt/model_executor/model_runner.py: `support_pp = "pp_proxy_tensors" in
# inspect.signature(self.model.forward).parameters`, then `if self.support_pp: kwargs[...]`)
SGLANG_STAGE_INPUT = "pp_proxy_tensors"


class ForwardFailure(NamedTuple):
    """An entry class whose ``forward`` cannot run under pipeline parallelism: it takes no
    ``param`` (so the engine never hands it what the rank receives) and calls a submodule's
    ``forward`` that needs it (the :class:`~.calls.CallSite` ``site``), directly or through
    submodules that hand their own ``None`` on (``chain``: the further call sites, in order),
    where the line ``row`` of module ``module`` (``text``) fails on the ranks ``ranks`` (a
    formula of rank tests).  ``condition``: the tests of ``forward``'s arguments under which the
    calls run (:data:`~.guards.TRUE` when they run on every call)."""

    key: tuple
    param: str
    site: object
    module: str
    row: int
    text: str
    ranks: tuple
    condition: tuple = TRUE
    chain: tuple = ()


def _passes(site, fn, param: str) -> bool:
    """Whether the call of :class:`~.calls.CallSite` ``site`` (bound to method ``fn``) passes
    ``param``, or may (``*args``, ``**kw``).  Through a routine (``site.via``), the routine's call
    counts, and its ``**kwargs`` may hold ``param`` only where the routine's caller or the
    routine itself may put it there (:class:`~.calls.Via` ``spread``)."""
    import ast

    via = getattr(site, "via", None)
    call = site.node if via is None else via.call
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg == param for k in call.keywords):
        return True
    for k in call.keywords:
        if k.arg is None and (via is None or via.spread is None or param in via.spread
                              or not (isinstance(k.value, ast.Name) and via.fn.args.kwarg is not None
                                      and k.value.id == via.fn.args.kwarg.arg)):
            return True
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
    return param in names and names.index(param) < len(call.args)


def _first_use(fn, lines, cls: str, param: str):
    """``(node, ranks)``: the first statement of ``fn`` that fails when ``param`` is ``None`` on
    every call on some rank after the first (``assert param is not None``, ``assert param``, a
    read ``param.x`` / ``param[...]`` under a guard of rank tests alone), with the ranks it runs
    on; ``None`` when there is none."""
    import ast

    from .flow import FunctionGuards
    from .guards import satisfying

    guards = FunctionGuards(fn, lines, cls=cls)
    found = []
    for node in ast.walk(fn):
        hit = False
        if isinstance(node, ast.Assert):
            t = node.test
            hit = (isinstance(t, ast.Name) and t.id == param) or (
                isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == param
                and len(t.ops) == 1 and isinstance(t.ops[0], ast.IsNot)
                and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value is None)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Load):
            hit = isinstance(node.value, ast.Name) and node.value.id == param
        if not hit:
            continue
        ranks = guards.every_call(node)
        if ranks is not None and satisfying(f_and(ranks, f_not(FIRST))) is not None:
            found.append((node.lineno, node.col_offset, node, f_and(ranks, f_not(FIRST))))
    if not found:
        return None
    _row, _col, node, ranks = min(found, key=lambda x: (x[0], x[1]))
    return node, ranks


def _argument_test(guard, fn) -> bool:
    """Whether ``guard`` (a call's guard in method ``fn``) tests only ``fn``'s own arguments
    (``forward_batch.forward_mode.is_extend()``, ``get_embedding``): what the engine passes
    decides it, on every rank alike, and some call of the engine makes it hold."""
    import re

    from .guards import RANK_ATOMS, atoms

    names = {a.arg for a in (fn.args.posonlyargs + fn.args.args)[1:] + fn.args.kwonlyargs}
    for a in atoms(guard):
        if a in RANK_ATOMS:
            return False
        m = re.match(r"[A-Za-z_]\w*", a)
        if m is None or m.group(0) not in names:
            return False
    return True


def _fails_through(model, site, fn, param: str, handed: bool, depth: int):
    """``(chain, owner module, node, ranks, condition)`` when call site ``site`` of method
    ``fn`` reaches a ``forward`` taking ``param`` that fails when it is ``None`` on a rank after
    the first (:func:`_first_use`), directly or through at most ``depth`` further submodule
    ``forward`` calls that hand ``param`` on unchanged; ``None`` otherwise.  ``handed``: ``fn``
    holds ``param`` as ``None`` and the call must pass it on as itself (else: the call must not
    pass it at all)."""
    import ast

    from .callsites import rebound
    from .guards import f_and, satisfying

    if site.callee[1] != "forward" or not site.sure or site.catches or site.node is None:
        return None
    if site.guard != TRUE and not _argument_test(site.guard, fn):
        return None
    cc = model.call_context
    callee = cc.method_node(site.callee[0], "forward")
    if callee is None or model.forward_accepts(site.callee[0], param) is not True:
        return None
    owner, cnode, cfn, lines = callee
    if handed:
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
        call = site.node if getattr(site, "via", None) is None else site.via.call
        as_keyword = any(k.arg == param and isinstance(k.value, ast.Name) and k.value.id == param
                         for k in call.keywords)
        cnames = [a.arg for a in cfn.args.posonlyargs + cfn.args.args][1:]
        as_position = (param in cnames and cnames.index(param) < len(call.args)
                       and isinstance(call.args[cnames.index(param)], ast.Name)
                       and call.args[cnames.index(param)].id == param)
        if not (as_keyword or as_position) or rebound(fn, param) or param not in names + [
                a.arg for a in fn.args.kwonlyargs]:
            return None
    elif _passes(site, cfn, param):
        return None
    got = _first_use(cfn, lines, cnode.name, param)
    if got is not None:
        node, ranks = got
        if satisfying(f_and(site.guard, ranks)) is None:
            return None
        return (), owner[0], node, ranks, site.guard
    if depth <= 0:
        return None
    for inner in cc.sites(site.callee[0], "forward") or ():
        deeper = _fails_through(model, inner, cfn, param, True, depth - 1)
        if deeper is not None:
            chain, module, node, ranks, cond = deeper
            both = f_and(site.guard, cond)
            if satisfying(f_and(both, ranks)) is None:
                continue
            return (inner, *chain), module, node, ranks, both
    return None


def forward_failure(model, key) -> ForwardFailure | None:
    """The :class:`ForwardFailure` of entry class ``key`` of an SGLang-shaped engine (its registry
    reads ``EntryClass``) that does not refuse it under PP (no runner assert on the parameter,
    :meth:`~pp_attr_lint.engines.sglang.SglangEngine.pp_forward_requirement`); ``None`` when its
    ``forward`` takes the parameter, cannot be read, or no call it makes fails.  A call counts
    when it runs on every call of ``forward`` or on every call whose arguments pass a test of
    them alone (:func:`_argument_test`; the first such call in source order), and no loop or
    handler may skip it.  ``model`` is the run's :class:`~.model.RankFacts`."""
    import ast

    key = tuple(key)
    if not model.entry_classes(key[0]) or model.pp_forward_requirement(key[0].split(".", 1)[0]) is not None:
        return None
    param = SGLANG_STAGE_INPUT
    if model.forward_accepts(key, param) is not False:
        return None
    cc = model.call_context
    top = cc.method_node(key, "forward")
    if top is None:
        return None
    sites = cc.sites(key, "forward") or ()
    for site in sorted(sites, key=lambda s: not s.always):  # a call on every call first
        got = _fails_through(model, site, top[2], param, False, 2)
        if got is not None:
            chain, module, node, ranks, cond = got
            return ForwardFailure(key, param, site, module, node.lineno, ast.unparse(node).splitlines()[0],
                                  ranks, cond, chain)
    return None


def engine_path(model, module: str, key, method: str) -> str | None:
    """The engine's way to method ``method`` of class ``key`` in words (``the engine calls
    `E.forward` on every rank -> `self.model(...)` runs the submodule's `forward` (line 694) ->
    `M.forward```): the first entry class of ``module`` (:meth:`EntryPoints.entry_classes`) and
    engine call (:data:`ENTRY_METHODS`, in the engine's order) from which calls reach it
    (:meth:`~.calls.CallContext.path`); ``None`` when none is found."""
    from .guards import describe

    key = (tuple(key), method)
    for e in model.entry.entry_classes(module) or ():
        for em, _owner in model.entry.methods(e):
            steps = model.call_context.path((tuple(e), em.name), key)
            if steps is None:
                continue
            ranks = RANK_WORDS.get(em.ranks) or f"the ranks where {describe(em.ranks)}"
            out = [f"the engine calls `{e[1]}.{em.name}` ({PHASE_NAMES[em.phase]}, on {ranks})"]
            out += [f"{s.how} (line {s.row}{_step_condition(s.guard)}) -> `{s.callee[0][1]}.{s.callee[1]}`"
                    for s in steps]
            return " -> ".join(out)
    return None


def _step_condition(guard) -> str:
    """``, when <guard>`` for a call that runs only where ``guard`` (a :mod:`.guards` formula,
    its configuration tests) holds; ``""`` for one that runs on every call of its caller."""
    from .guards import TRUE, describe

    return "" if guard == TRUE else f", when {describe(guard)}"

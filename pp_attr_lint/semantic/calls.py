"""Calls with their context: who calls a method and under which guard (``caller_rank``: every
caller runs only on one rank), whether a call can bind to a method's parameters, and what the
boolean helpers a guard calls imply (their ``return`` statements, :func:`~.flow.truthy_only_when`)."""

from __future__ import annotations

import ast
from typing import NamedTuple

from .. import facts as F
from ..index.astutil import dotted_name, ref_chain
from .entry import AUTO_LOADER
from .flow import CallWalker, FunctionGuards
from .guards import FIRST, LAST, TRUE, atoms, f_and, f_not, f_or, formula, satisfying, substitute
from .reader import NOT_ACCEPTED
from .service import Service

# the most files holding a method's name that Calls.caller_rank reads to follow its callers
MAX_CALLER_FILES = 200


def accepts(fn: ast.FunctionDef, call: ast.Call, bound: int = 1) -> bool:
    """Whether a call through an instance (``x.m(...)``) can bind to the method ``fn``'s
    parameters (``bound=0``: a plain call of the function ``fn``); ``True`` when it cannot be
    told (``*args``, ``**kwargs``)."""
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args][bound:]  # after self
    keywords = set(positional) - {p.arg for p in a.posonlyargs} | {p.arg for p in a.kwonlyargs}
    if a.kwarg is None and any(k.arg is not None and k.arg not in keywords for k in call.keywords):
        return False  # a keyword the method does not have
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return True
    n = len(call.args)
    if n > len(positional) and a.vararg is None:
        return False
    names = set(positional[n:]) - {p.arg for p in a.posonlyargs} | {p.arg for p in a.kwonlyargs}
    bound = set(positional[:n])
    for k in call.keywords:
        if k.arg in bound or (k.arg not in names and a.kwarg is None):
            return False
        bound.add(k.arg)
    required = positional[:len(positional) - len(a.defaults)]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    return all(r in bound for r in required)


class Calls(Service):
    """The call graph's answers for a :class:`~.model.RankFacts` ``model`` (memoized per run)."""

    def satisfying(self, f, local, cls: str | None, fline: int):
        """:func:`satisfying` of ``f`` (which holds the guard ``local`` of a line of this file, in
        the function at ``fline`` of class ``cls``), knowing what the boolean helpers of ``local``
        imply (:meth:`atom_implies`); the assignment keeps only the atoms of ``f``."""
        extra = []
        for a in sorted(atoms(local, set()) - {"@first", "@last"}):
            need = self.atom_implies(a, cls, fline)
            if need is not None:
                extra.append(f_or(f_not(("a", a)), need))
        env = satisfying(f_and(f, *extra))
        if env is None or not extra:
            return env
        keep = atoms(f, set()) | {"@first", "@last"}
        return {k: v for k, v in env.items() if k in keep}

    def atom_implies(self, atom: str, cls: str | None, fline: int):
        """What a guard atom of this file implies, from the ``return``s of the helper that makes
        it (:func:`truthy_only_when`, recorded as the module's ``helpers``): a call of a plain
        function (``model_should_use_tied_lm_head(config, quant_config)``, the text of the atom,
        also through a local flag), or an attribute that the analysed tree assigns exactly once,
        from such a call (``self.use_tied_lm_head = model_should_use_tied_lm_head(...)``, Aphrodite
        0.24.1 llama.py:477).  ``None`` when it implies nothing known."""
        memo = self._memo.setdefault("implies", {})
        key = (self.ctx.module, atom, cls, fline)
        if key not in memo:
            try:
                memo[key] = self._atom_implies(atom, cls, fline)
            except Exception:
                memo[key] = None
        return memo[key]

    def _helper(self, module: str, callee: str):
        sym = self.r.resolve_dotted(module, callee)
        if sym is None or sym[0] != "function":
            return None
        return (self.m.values.module_facts(sym[1]) or {}).get("helpers", {}).get(sym[2])

    def _atom_implies(self, atom: str, cls: str | None, fline: int):
        if not atom.isidentifier():
            try:
                node = ast.parse(atom, mode="eval").body
            except SyntaxError:
                return None
            callee = dotted_name(node.func) if isinstance(node, ast.Call) else None
            return self._helper(self.ctx.module, callee) if callee else None
        # an attribute: never a parameter, local or module-level name of the line's code
        from ..index.summary import scopes_by_line

        summary = self.ctx.summary
        scope = scopes_by_line(summary).get((cls, fline))
        if scope is None or atom in scope["params"] or atom in scope["locals"]:
            return None
        if any(atom in summary.get(k, ()) for k in ("imports", "aliases", "classes", "functions", "tables")):
            return None
        return self._unique_attribute_helper(atom)

    def _unique_attribute_helper(self, attr: str):
        """What ``x.<attr>`` implies when every store of it in the ``.py`` files under the checked
        root is ``self.<attr> = helper(...)``, ``helper`` a plain function with a known condition
        (the disjunction of those conditions), and no class there defines the name in its body or
        as a method (``setattr`` naming it, a tuple target, an augmented store: nothing known)."""
        memo = self._memo.setdefault("unique-attr", {})
        if attr in memo:
            return memo[attr]
        memo[attr] = None

        def judge(module, node, target):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                callee = dotted_name(node.value.func) if isinstance(node.value, ast.Call) else None
                need = self._helper(module, callee) if callee else None
                if need is not None:
                    return need
            return NOT_ACCEPTED

        needs = self.m.reader.attribute_stores(attr, judge)
        if not needs:
            return None
        memo[attr] = f_or(*dict.fromkeys(needs))
        return memo[attr]

    def caller_rank(self, cls: str, fname: str) -> tuple | None:
        """``LAST`` (or ``FIRST``) when every call of method ``fname`` of class ``cls`` (of this
        file) that the checked tree holds runs only on that rank, from the call chain: each
        ``x.fname(...)`` of any ``.py`` file under the checked root either cannot be a call of it
        (``self.fname(...)`` in a class unrelated to ``cls``, arguments the method cannot take) or
        is guarded by the rank there (``if not self.is_last_pp_rank: return``; an attribute that
        the tree only ever assigns a rank test counts as that test), or sits in a method whose
        own callers are (up to 3 calls deep).  vLLM 0.33.0: ``compute_logits_local`` is called
        only from ``GPUModelRunner.sample``, called only after ``sample_tokens`` returned on every
        rank but the last.  ``None`` when not every use of the name is such a call, or not known."""
        memo = self._memo.setdefault("caller-rank", {})
        key = (self.ctx.module, cls, fname)
        if key not in memo:
            memo[key] = None
            try:
                for rank in (LAST, FIRST):
                    if self._only_on(rank, (self.ctx.module, cls), fname, 0):
                        memo[key] = rank
                        break
            except Exception:
                memo[key] = None
        return memo[key]

    def _unrelated(self, module: str, fn, owner, attr_node: ast.Attribute, key, related: set) -> bool:
        """Whether the receiver of ``attr_node`` (``self.fname``, ``self.sampler.fname``,
        ``super().fname`` in the method ``fn`` of ``owner``, a top-level class of ``module``) is
        known to hold only classes that are neither ``key``, its bases nor its subclasses, nor
        share a subclass with it among the checked classes."""
        from ..index.summary import scopes_by_line

        recv = attr_node.value
        chain = ref_chain(recv)
        if not isinstance(owner, ast.ClassDef) or not fn.args.args:
            return False
        summary = self.ctx.project.summary(module)
        if summary is None or owner.name not in summary["classes"]:
            return False
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" and not recv.args:
            chain = (fn.args.args[0].arg,)  # `super().fname`: a class on the owner's MRO
        if chain is None:
            return False
        scope = scopes_by_line(summary).get((owner.name, fn.lineno))
        if scope is None or chain[0] != fn.args.args[0].arg:
            return False
        try:
            cands = self.r.chain_candidates(tuple(chain), module, (module, owner.name), scope)
            if not cands or any(c[0] == "<external>" or c[1] is None for c in cands):
                return False
            for c in cands:
                if c == ("builtins", "None"):
                    continue  # `None.fname` raises before any call
                if c == tuple(key) or c in related or tuple(key) in set(self.r.mro(c)):
                    return False
                if self.m.reader.share_subclass(c[1], key[1]):
                    return False  # some class of the tree may have both on its MRO (a mixin)
        except Exception:
            return False
        return True

    def rank_alias(self, attr: str) -> tuple | None:
        """``LAST`` / ``FIRST`` when every store of ``.<attr>`` under the checked root is
        ``self.<attr> = <rank test>`` (``self.is_last_pp_rank = get_pp_group().is_last_rank``,
        vLLM's GPU model runner) and nothing else there defines that name (a method, a class
        attribute); ``None`` otherwise."""
        memo = self._memo.setdefault("rank-alias", {})
        if attr in memo:
            return memo[attr]
        memo[attr] = None
        values = set(self.m.reader.attribute_stores(attr, lambda module, node, target: formula(node.value)) or ())
        if len(values) == 1 and next(iter(values)) in (LAST, FIRST):
            memo[attr] = next(iter(values))
        return memo[attr]

    def _only_on(self, rank, key, fname: str, depth: int, active: frozenset = frozenset()) -> bool:
        """Whether every call of method ``fname`` of class ``key`` runs only on ``rank`` (see
        :meth:`caller_rank`).  A call from a method already being asked about (a wrapper's
        ``compute_logits_local`` delegating to its language model's) adds no way in: the chain
        enters through the other callers, which are asked."""
        if (tuple(key), fname) in active:
            return True
        memo = self._memo.setdefault("only-on", {})
        mkey = (rank, tuple(key), fname)
        if mkey in memo:
            return memo[mkey]
        active = active | {(tuple(key), fname)}
        if depth > 3:
            return False
        got = self._only_on_uncached(rank, key, fname, depth, active)
        if len(active) == 1:
            memo[mkey] = got  # an answer that assumed no other question open
        return got

    def _only_on_uncached(self, rank, key, fname: str, depth: int, active: frozenset) -> bool:
        if fname in F.ENGINE_METHODS and fname not in F.RANK_OF_METHOD:
            return False  # the engine calls it on every rank
        try:
            mro = self.r.mro(key)
            crec = self.r.class_record(key)
        except Exception:
            return False
        if fname not in crec["methods"]:
            return False
        name = fname.encode()
        # a call or read `x.fname`, a name in a string (`getattr(x, "fname")`), the method itself
        files = self.m.reader.tree_file_paths(b"." + name, b'"' + name + b'"', b"'" + name + b"'", b"def " + name)
        if files is None or len(files) > MAX_CALLER_FILES:
            return False  # not readable, or a name too common to follow: not established
        related = {e for e in mro if e[0] != "<external>"}
        target = None
        sites = []  # (module, lines, call, function, owner class or None)
        for path, module in files:
            got = self.m.reader.parsed(path, module)
            if got is None:
                return False
            path, module, tree, lines = got
            strings, defs, attrs = self.m.reader.file_index(path, tree)
            for _node, parent in strings.get(fname, ()):
                if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "hasattr"):
                    return False  # getattr(x, "name"), a table of names: a call not seen
            owners = {}
            for fn_node, parent in (d for ds in defs.values() for d in ds):
                if isinstance(parent, ast.ClassDef) and parent in tree.body:
                    owners[fn_node] = parent
            for fn_node, parent in defs.get(fname, ()):
                if module == key[0] and isinstance(parent, ast.ClassDef) and parent.name == key[1] and parent in tree.body:
                    target = fn_node
            for node, parent, fn, lam in attrs.get(fname, ()):
                if not isinstance(node.ctx, ast.Load):
                    return False  # the method is replaced somewhere
                owner = owners.get(fn)
                is_call = isinstance(parent, ast.Call) and parent.func is node
                if (fn is not None and self._unrelated(module, fn, owner, node, key, related)):
                    continue  # `self.x.fname` of a class unrelated to `key`
                if not is_call:
                    return False  # the method is read, not called: it may be called elsewhere
                sites.append((module, lines, parent, fn, owner, lam))
        if target is None:
            return False
        sites = [site for site in sites if accepts(target, site[2])]  # others cannot be calls of it
        by_fn: dict = {}
        for module, lines, call, fn, owner, lam in sites:
            if lam:
                return False  # a lambda runs where it is called, not where it is written
            if fn is None:
                return False  # a call at module level
            by_fn.setdefault(fn, (module, lines, owner, []))[3].append(call)
        for fn, (module, lines, owner, calls) in by_fn.items():
            w = CallWalker(lines, fn, {id(c) for c in calls})
            w.block(fn.body, TRUE, frozenset(), False, {})
            if len(w.found) != len(calls):
                return False
            for guard in w.found.values():
                g = guard
                for a in sorted(atoms(guard, set()) - {"@first", "@last"}):
                    alias = self.rank_alias(a)
                    if alias is not None:
                        g = substitute(g, a, alias)
                if satisfying(f_and(g, f_not(rank))) is None:
                    continue
                # a method of the same name forwarding the call (a wrapper's compute_logits_local)
                # is not a step further away from the engine
                deeper = depth if fn.name == fname else depth + 1
                if owner is None or not self._only_on(rank, (module, owner.name), fn.name, deeper, active):
                    return False
        return bool(sites)


class CallSite(NamedTuple):
    """One call a method makes that the call graph follows: the caller and the callee as
    ``(class key, method name)``, the call's line, its guard in the caller (a formula of
    :mod:`.guards`), whether it runs on every call of the caller where that guard holds (``sure``:
    no loop or handler may skip it; ``always``: so, and the guard is true), what around it
    swallows an ``AttributeError`` (``catches``: ``"hasattr"`` when a ``hasattr`` test guards it,
    ``"try/except AttributeError or contextlib.suppress"`` when a handler around it does; ``None``
    when nothing does), how it binds (``how``) and the ``ast.Call`` (``node``)."""

    caller: tuple
    row: int
    callee: tuple
    guard: tuple
    sure: bool
    catches: str | None
    how: str
    node: object = None  # the ``ast.Call`` itself
    via: object = None  # a :class:`Via` when the call runs the callee through a routine

    @property
    def always(self) -> bool:
        """Whether the call runs on every call of the caller."""
        return self.sure and self.guard == TRUE


class Via(NamedTuple):
    """How a :class:`CallSite` reaches its callee through a module-level function (a *routine*)
    that the caller hands a submodule: ``routine(kw=self.sub)``, whose body calls ``kw(...)`` or
    ``kw.m(...)``.  ``function``: the routine's ``(module, name)``; ``fn``: its node; ``param``:
    the parameter bound to the submodule; ``call``: the ``ast.Call`` in the routine that runs the
    callee; ``spread``: the keyword names the routine's ``**kwargs`` may hold where ``call``
    passes ``**kwargs`` (those of the caller's call that no named parameter takes, and the
    constant keys the routine stores), ``None`` when not known or ``call`` spreads another dict."""

    function: tuple
    fn: object
    param: str
    call: object
    spread: frozenset | None


class _SiteWalker(FunctionGuards):
    """A :class:`FunctionGuards` that also records, for every call, whether a handler around it
    catches an ``AttributeError`` and whether a block a call may skip holds it."""

    def __init__(self, fn, lines, cls, atom_of=None):
        super().__init__(fn, lines, cls=cls, atom_of=atom_of)
        self.calls: list = []  # (call node, guard, protected, maybe)

    def call(self, node, guard, guarded, protected, loops) -> None:
        self.calls.append((node, guard, protected, self.maybe > 0))


def _catches(call: ast.Call, guard: tuple, protected: bool) -> str | None:
    if protected:
        return "try/except AttributeError or contextlib.suppress"
    if any(a.startswith("hasattr(") for a in atoms(guard, set())):
        return "hasattr"
    return None


def _self_chain(node, self_name: str) -> tuple | None:
    chain = ref_chain(node)
    return tuple(chain) if chain and chain[0] == self_name else None


class CallContext(Service):
    """The calls a method makes, as :class:`CallSite` records, and the paths between methods
    (for a :class:`~.model.RankFacts` ``model``; memoized per run).  A call binds as Python and
    torch bind it: ``self.m(...)`` to the first ``m`` on the MRO, ``self.sub.m(...)`` to ``m`` of
    the classes ``self.sub`` may hold, ``self.sub(...)`` to their ``forward`` (``nn.Module.__call__``),
    ``AutoWeightsLoader(self).load_weights(...)`` to the ``load_weights`` of every submodule
    built in ``__init__`` that defines one (vLLM model_executor/models/utils.py, ``_load_module``),
    and ``routine(kw=self.sub)`` to what the module-level function ``routine`` calls on ``kw``
    (:class:`Via`).  ``self.sub`` holds what the instance's own ``__init__``s store, also in a
    method it inherits."""

    def method_node(self, key, fname: str):
        """``(defining class key, class node, function node, lines)`` of method ``fname`` of an
        instance of class ``key`` (the first definition on the MRO); ``None`` when it is not in
        the analysed code or its file does not parse."""
        return self._method(key, fname)

    def _method(self, key, fname: str):
        owner = self.m.entry.definer(tuple(key), fname)
        if owner is None:
            return None
        got = self.m.reader.module_parsed(owner[0])
        if got is None:
            return None
        cnode = self.m.reader.class_node(owner)
        fn = next((n for n in cnode.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name == fname), None) if cnode is not None else None
        return None if fn is None else (owner, cnode, fn, got[3])

    def _classes(self, key, owner, cnode, fn, chain) -> set | None:
        """The classes receiver ``chain`` (``("self", "sub")``) may hold, read in method ``fn``
        (node ``cnode`` of class ``owner``, which defines it) of an instance of class ``key`` (the
        ``__init__``s that instance runs say what ``self.sub`` holds); ``None`` when not known."""
        from ..index.summary import scopes_by_line

        summary = self.ctx.project.summary(owner[0])
        scope = scopes_by_line(summary).get((cnode.name, fn.lineno)) if summary else None
        if scope is None:
            return None
        try:
            got = self.r.chain_candidates(tuple(chain), owner[0], tuple(key), scope)
        except Exception:  # noqa: BLE001
            return None
        return {c for c in got or () if c[0] != "<external>" and c[1] is not None} or None

    def sites(self, key, fname: str) -> list | None:
        """The :class:`CallSite` records of method ``fname`` of an instance of class ``key`` (the
        method the MRO gives), in source order; ``None`` when the method is not in the analysed
        code or does not parse."""
        memo = self._memo.setdefault("sites", {})
        mk = (tuple(key), fname)
        if mk not in memo:
            memo[mk] = None
            try:
                memo[mk] = self._sites(tuple(key), fname)
            except Exception:  # noqa: BLE001  (cannot tell)
                memo[mk] = None
        return memo[mk]

    def _sites(self, key, fname: str) -> list | None:
        got = self._method(key, fname)
        if got is None:
            return None
        owner, cnode, fn, lines = got
        args = fn.args.posonlyargs + fn.args.args
        if not args:
            return []
        me = args[0].arg
        w = _SiteWalker(fn, lines, cnode.name)
        w.walked()
        loaders = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                   and dotted_name(n.value.func) in (AUTO_LOADER,) for t in n.targets if isinstance(t, ast.Name)}
        out = []
        for call, guard, protected, maybe in w.calls:
            sure = not maybe and not protected
            catches = _catches(call, guard, protected)
            f = call.func
            targets: list = []
            how = ""
            if isinstance(f, ast.Attribute) and f.attr == "load_weights" and (
                    (isinstance(f.value, ast.Name) and f.value.id in loaders)
                    or (isinstance(f.value, ast.Call) and dotted_name(f.value.func) == AUTO_LOADER)):
                targets = [(c, "load_weights") for c in self._children_with(key, "load_weights")]
                how = f"`{AUTO_LOADER}` hands each submodule's weights to its own `load_weights`"
            elif isinstance(f, ast.Attribute):
                chain = _self_chain(f.value, me)
                if chain == (me,) and self.m.entry.definer(key, f.attr) is not None:
                    targets, how = [(key, f.attr)], f"`{me}.{f.attr}(...)`"
                elif chain:
                    # `self.sub.m(...)`, or `self.sub(...)`: nn.Module.__call__ runs `forward`
                    recv, meth = (chain, f.attr) if chain != (me,) else ((me, f.attr), "forward")
                    cands = self._classes(key, owner, cnode, fn, recv)
                    targets = [(c, meth) for c in sorted(cands or ())]
                    how = (f"`{'.'.join(recv)}(...)` runs the submodule's `forward`" if meth == "forward"
                           and recv[-1] == f.attr else f"`{'.'.join(recv)}.{meth}(...)`")
            plain = ref_chain(f)
            if plain and plain[0] != me:  # `routine(...)`, `module.routine(...)`
                out += self._routine_sites((key, fname), owner, cnode, fn, me, call, guard, sure, catches)
            for t in targets:
                if self.m.entry.definer(t[0], t[1]) is not None:
                    out.append(CallSite((key, fname), call.lineno, t, guard, sure, catches, how, call))
        return out

    def _routine(self, module: str, callee: str):
        """``((module, name), function node, lines)`` of the module-level function ``callee``
        (as written in ``module``) of the analysed code, undecorated; ``None`` otherwise."""
        memo = self._memo.setdefault("routine", {})
        if (module, callee) not in memo:
            memo[(module, callee)] = None
            try:
                memo[(module, callee)] = self._routine_uncached(module, callee)
            except Exception:  # noqa: BLE001  (not followed)
                pass
        return memo[(module, callee)]

    def _routine_uncached(self, module: str, callee: str):
        sym = self.r.resolve_dotted(module, callee)
        if sym is None or sym[0] != "function":
            return None
        fdef = self.m.reader.function_node((sym[1], sym[2]))
        if fdef is None or fdef.decorator_list:
            return None  # a decorator may run anything instead
        return (sym[1], sym[2]), fdef, self.m.reader.module_parsed(sym[1])[3]

    def _routine_sites(self, caller, owner, cnode, fn, me: str, call: ast.Call, guard, sure: bool,
                       catches) -> list:
        """The :class:`CallSite` records of the call ``call`` of method ``fn`` (of ``owner``,
        node ``cnode``, whose first parameter is ``me``) when it calls a module-level function of
        the analysed code and hands it a submodule (``routine(kw=self.sub)``, or positionally):
        each call of that parameter in the routine's body (``kw(...)`` runs the submodule's
        ``forward``, ``kw.m(...)`` its ``m``, ``kw.a.m(...)`` ``m`` of ``self.sub.a``), bound as
        the caller's own ``self.sub...`` would be (``sure``: whether ``call`` runs on every call of
        the caller where ``guard`` holds).  Such a call runs on every call of the caller where
        ``guard`` holds when ``call`` does and the routine's own call always does.  A routine that
        rebinds the parameter adds nothing for it; a function the routine hands it on to is not
        followed."""
        from ..index.summary import scopes_by_line
        from .callsites import rebound

        if not any(len(_self_chain(a, me) or ()) >= 2 for a in [*call.args, *(k.value for k in call.keywords)]):
            return []  # no submodule handed over: nothing to follow
        callee = dotted_name(call.func)
        summary = self.ctx.project.summary(owner[0])
        scope = scopes_by_line(summary).get((cnode.name, fn.lineno)) if summary else None
        if not callee or scope is None or callee.split(".")[0] in {*scope["params"], *scope["locals"]}:
            return []
        got = self._routine(owner[0], callee)
        if got is None:
            return []
        rkey, rfn, rlines = got
        if not accepts(rfn, call, bound=0):
            return []
        handed = {}  # routine parameter -> the caller's `self.sub...` chain handed to it
        names = [a.arg for a in rfn.args.posonlyargs + rfn.args.args]
        if not any(isinstance(a, ast.Starred) for a in call.args):
            handed.update((names[i], a) for i, a in enumerate(call.args) if i < len(names))
        kw_names = {a.arg for a in rfn.args.args + rfn.args.kwonlyargs}
        handed.update((k.arg, k.value) for k in call.keywords if k.arg in kw_names)
        handed = {p: c for p, v in handed.items() if (c := _self_chain(v, me)) and len(c) >= 2 and not rebound(rfn, p)}
        if not handed:
            return []
        classes = {p: self._classes(caller[0], owner, cnode, fn, c) for p, c in handed.items()}

        def defined(node):  # `hasattr(kw, "m")` holds where every class `kw` may hold defines `m`
            if isinstance(node, ast.Call) and dotted_name(node.func) == "hasattr" and len(node.args) == 2 \
                    and isinstance(node.args[0], ast.Name) and classes.get(node.args[0].id) \
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                    and all(self.m.entry.definer(c, node.args[1].value) is not None for c in classes[node.args[0].id]):
                return TRUE
            return None

        w = _SiteWalker(rfn, rlines, None, atom_of=defined)
        w.walked()
        out = []
        spread = None
        for inner, iguard, protected, maybe in w.calls:
            chain = ref_chain(inner.func)
            if not chain or chain[0] not in handed:
                continue
            base = handed[chain[0]]
            recv, meth = (base + chain[1:-1], chain[-1]) if len(chain) > 1 else (base, "forward")
            cands = self._classes(caller[0], owner, cnode, fn, recv)
            if spread is None:
                spread = (self._spread(rkey[0], rfn, call),)
            text = f"{callee}({chain[0]}={'.'.join(base)})"
            how = (f"`{text}` calls `{'.'.join(chain)}(...)` ({rkey[0].rsplit('.', 1)[-1]}.py:{inner.lineno})"
                   + (", which runs the submodule's `forward`" if meth == "forward" else ""))
            via = Via(rkey, rfn, chain[0], inner, spread[0])
            both = sure and iguard == TRUE and not maybe and not protected
            for c in sorted(cands or ()):
                if self.m.entry.definer(c, meth) is not None:
                    out.append(CallSite(caller, call.lineno, (c, meth), guard, both,
                                        catches or _catches(inner, iguard, protected), how, call, via))
        return out

    def _spread(self, module: str, rfn, call: ast.Call) -> frozenset | None:
        """The keyword names the ``**kwargs`` of routine ``rfn`` may hold when ``call`` calls it
        (see :class:`Via`); ``None`` when not known."""
        if rfn.args.kwarg is None or any(k.arg is None for k in call.keywords):
            return None
        named = {a.arg for a in rfn.args.args + rfn.args.kwonlyargs}
        stored = self._dict_keys(module, rfn, rfn.args.kwarg.arg, 0)
        if stored is None:
            return None
        return frozenset(k.arg for k in call.keywords if k.arg not in named) | stored

    def _dict_keys(self, module: str, fn, name: str, depth: int) -> frozenset | None:
        """The constant keys function ``fn`` (of ``module``) may store in the dict its parameter ``name`` holds:
        every use of ``name`` is a spread (``**name``), a subscript by a string constant, a call
        of ``get``/``pop``/``keys``/``values``/``items``/``copy``, an ``in`` test, or the argument of
        a call of a module-level function of the analysed code (followed one call deep) that
        uses its parameter the same way; ``None`` when some other use may store any key."""
        memo = self._memo.setdefault("dict-keys", {})
        mk = (module, id(fn), name, depth)
        if mk not in memo:
            memo[mk] = None  # (a cycle through the same function: not known)
            memo[mk] = self._dict_keys_uncached(module, fn, name, depth)
        return memo[mk]

    def _dict_keys_uncached(self, module: str, fn, name: str, depth: int) -> frozenset | None:
        from .callsites import rebound

        if rebound(fn, name):
            return None
        parents = {id(c): n for n in ast.walk(fn) for c in ast.iter_child_nodes(n)}
        keys: set = set()
        for n in ast.walk(fn):
            if not (isinstance(n, ast.Name) and n.id == name):
                continue
            up = parents.get(id(n))
            if isinstance(up, ast.keyword) and up.arg is None:
                continue  # `**name`: a copy
            if isinstance(up, ast.Subscript) and up.value is n:
                if not (isinstance(up.slice, ast.Constant) and isinstance(up.slice.value, str)):
                    return None
                if not isinstance(up.ctx, ast.Load):
                    keys.add(up.slice.value)
                continue
            if isinstance(up, ast.Attribute) and up.attr in ("get", "pop", "keys", "values", "items", "copy") \
                    and isinstance(parents.get(id(up)), ast.Call) and parents[id(up)].func is up:
                continue
            if isinstance(up, ast.Compare) and n is not up.left \
                    and all(isinstance(o, (ast.In, ast.NotIn)) for o in up.ops):
                continue
            handed = self._handed_dict(module, up, n, depth)
            if handed is None:
                return None
            keys |= handed
        return frozenset(keys)

    def _handed_dict(self, module: str, call, arg, depth: int) -> frozenset | None:
        """:meth:`_dict_keys` of the parameter that ``call`` (in ``module``) binds ``arg`` to,
        when ``call`` calls a module-level function of the analysed code; ``None`` otherwise."""
        if depth > 0 or not isinstance(call, ast.Call) or call.func is arg:
            return None
        callee = dotted_name(call.func)
        got = self._routine(module, callee) if callee else None
        if got is None or not accepts(got[1], call, bound=0) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        names = [a.arg for a in got[1].args.posonlyargs + got[1].args.args]
        param = next((k.arg for k in call.keywords if k.value is arg), None)
        if param is None and arg in call.args and call.args.index(arg) < len(names):
            param = names[call.args.index(arg)]
        return None if param is None else self._dict_keys(got[0][0], got[1], param, depth + 1)

    def _children_with(self, key, method: str) -> list:
        """The classes of the submodules ``__init__`` of class ``key`` stores in ``self.x`` that
        define ``method`` (the executed ``__init__`` the MRO gives)."""
        got = self._method(key, "__init__")
        if got is None:
            return []
        owner, cnode, fn, _lines = got
        me = (fn.args.args or [None])[0]
        out = []
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and me is not None:
                for t in n.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me.arg:
                        for c in sorted(self._classes(key, owner, cnode, fn, (me.arg, t.attr)) or ()):
                            if self.m.entry.definer(c, method) is not None and c not in out:
                                out.append(c)
        return out

    def path(self, src: tuple, dst: tuple, always: bool = False, depth: int = 4) -> list | None:
        """The calls (:class:`CallSite` records) from method ``src`` to method ``dst`` (each a
        ``(class key, method name)``), breadth first, at most ``depth`` calls; with ``always``,
        only through calls that run on every call of their caller and that nothing catches.
        ``[]`` when ``src`` is ``dst``; ``None`` when no such path is found."""
        src, dst = (tuple(src[0]), src[1]), (tuple(dst[0]), dst[1])
        if src == dst:
            return []
        todo = [(src, [])]
        seen = {src}
        for _ in range(depth):
            nxt = []
            for here, trail in todo:
                for s in self.sites(*here) or ():
                    if always and (not s.always or s.catches):
                        continue
                    callee = (tuple(s.callee[0]), s.callee[1])
                    if callee == dst:
                        return trail + [s]
                    if callee not in seen:
                        seen.add(callee)
                        nxt.append((callee, trail + [s]))
            todo = nxt
        return None

"""SGLang: the ``EntryClass`` registry and the model runner's requirement on ``forward``, read
from the analysed tree.

* ``sglang/srt/models/registry.py`` (``import_model_classes``) lists the package's modules
  with ``pkgutil.iter_modules`` and loads ``module.EntryClass`` of each;
* ``sglang/srt/model_executor/model_runner.py`` asserts under PP that the model's ``forward``
  takes ``pp_proxy_tensors`` (``support_pp``, 0.5.15 and 0.5.23): a class whose ``forward``
  does not is refused;
* its runner allocates the proxy buffers a rank after the first receives at capture and warm-up
  (``proxy_contract``: ``runner_utils/buffers.py`` and ``runner/base_runner.py`` in 0.5.23).
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..index.astutil import dotted_name, ref_chain
from ..index.astutil import walk as fast_walk
from ..resolve import EXTERNAL as EXTERNAL_KEY
from ..resolve import Unresolved
from ..semantic import guards as G
from ..semantic.flow import FunctionGuards
from ..semantic.guards import pp_only_test
from ..semantic.service import Service


def _signature_test(value: ast.AST) -> str | None:
    """``"p"`` for ``"p" in inspect.signature(self.model.forward).parameters``."""
    if not (isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.In)
            and isinstance(value.left, ast.Constant) and isinstance(value.left.value, str)):
        return None
    right = value.comparators[0]
    if not (isinstance(right, ast.Attribute) and right.attr == "parameters" and isinstance(right.value, ast.Call)
            and dotted_name(right.value.func) in ("inspect.signature", "signature") and len(right.value.args) == 1):
        return None
    return value.left.value if ref_chain(right.value.args[0]) == ("self", "model", "forward") else None


def _forward_requirement(fn, stores: dict) -> tuple | None:
    """``(parameter, exempt)`` of :meth:`SglangEngine.pp_forward_requirement` for one function;
    ``stores``: how many times the module binds each target text (a flag bound again, in any
    function, may make the assert pass: exempt)."""
    bound = {}  # the target's text -> (parameter, line), bound in the function's own body
    for st in fn.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            p = _signature_test(st.value)
            if p is not None:
                bound[ast.unparse(st.targets[0])] = (p, st.lineno)
    if not bound:
        return None
    best = None
    # a `return` before the assert can skip it (one in a nested function is not told apart)
    returns = [n.lineno for n in fast_walk(fn) if isinstance(n, ast.Return)]
    fg = FunctionGuards(fn)
    for st, _guard in fg.reached_statements():
        # in a loop, a handler, a `try` or a `with`, the assert may not run, or be caught
        if not isinstance(st, ast.Assert) or fg.may_skip(st) or fg.in_try_or_with(st):
            continue
        hit = bound.get(ast.unparse(st.test))
        if hit is None or hit[1] >= st.lineno:
            continue
        conds = [(test.test, holds) for test, holds in fg.deciding_tests(st) or ()]
        atoms = [a for t, pos in conds for a in (t.values if pos and isinstance(t, ast.BoolOp)
                                                  and isinstance(t.op, ast.And) else [t])]
        gates = [a for a in atoms if pp_only_test(a)]
        if not gates or any(not pos and pp_only_test(t) for t, pos in conds):
            continue
        skipped = stores.get(ast.unparse(st.test), 0) > 1 or any(r < st.lineno for r in returns)
        found = (hit[0], skipped or len(atoms) > len(gates) or any(not pos for _t, pos in conds))
        if best is None or best[1] and not found[1]:
            best = found
    return best


def _registry_attribute(fn) -> str | None:
    """``"EntryClass"`` for a function that lists the modules of a package
    (``pkgutil.iter_modules(...)``) and reads ``hasattr(module, "EntryClass")`` of each."""
    lists = has = None
    for n in fast_walk(fn):
        if isinstance(n, ast.Call):
            name = dotted_name(n.func) or ""
            if name.rsplit(".", 1)[-1] == "iter_modules":
                lists = True
            elif name == "hasattr" and len(n.args) == 2 and isinstance(n.args[1], ast.Constant) \
                    and isinstance(n.args[1].value, str) and isinstance(n.args[0], ast.Name):
                has = n.args[1].value if has in (None, n.args[1].value) else ""
    return has or None if lists else None



class SglangEngine(Service):
    """SGLang's answers for a :class:`~pp_attr_lint.semantic.model.RankFacts` ``model``
    (memoized per run)."""

    def pp_forward_requirement(self, top: str) -> tuple | None:
        """``(parameter, exempt)`` when the engine whose top-level package is ``top`` asserts, with
        pipeline parallelism on, that the model's ``forward`` accepts ``parameter``: a function of
        a module of ``top`` under the scanned folders (:meth:`TreeReader.scan_dirs`) binds ``X = "parameter"
        in inspect.signature(self.model.forward).parameters`` in its own body and then ``assert
        X`` under an ``if`` that holds only under PP (``pp_size > 1``), in a method of a class that
        some code of the tree builds (or a function it calls).  SGLang's model runner has it
        (sglang/srt/model_executor/model_runner.py, ``support_pp``, 0.5.15 and 0.5.23; built in
        managers/tp_worker.py).
        ``exempt``: something can skip the assert or make it pass: another test around it (SGLang
        0.5.23 lifts it for a draft worker under ``SGLANG_ENABLE_PP_SPEC``), a ``return`` before
        it, or ``X`` bound again in the module.  ``None`` when no such check is found (or a file
        that may hold one cannot be read)."""
        memo = self._memo.setdefault("pp-forward", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        memo[(dirs, top)] = answer = None
        for _module, tree, _lines in self.m.reader.package_trees(top, b".forward).parameters"):
            stores: dict = {}
            for n in fast_walk(tree):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                    n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) else []
                for t in targets:
                    stores[ast.unparse(t)] = stores.get(ast.unparse(t), 0) + 1
            owners = _method_owners(tree)
            for fn in fast_walk(tree):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found = _forward_requirement(fn, stores)
                    if found is not None and not self._called(owners.get(id(fn), fn.name)):
                        found = None  # a runner (or function) no code of the tree builds: dead code
                    if found is not None and (answer is None or answer[1] and not found[1]):
                        answer = found
        memo[(dirs, top)] = answer
        return answer

    def refused_under_pp(self, module: str, cls: str | None) -> bool:
        """Whether the engine never runs class ``cls`` of ``module`` under PP: ``cls`` is an entry
        class of its module (:meth:`entry_classes`), the engine asserts under PP that the model's
        ``forward`` takes a parameter (:meth:`pp_forward_requirement`), ``cls``'s ``forward``
        does not (:meth:`forward_accepts`), and no other code names ``cls`` (a subclass, a wrapper
        that builds it, in any file of the tree or outside ``cls``'s own body in its module).
        False when any of it does not hold or cannot be told (the class is judged).  Raises
        :class:`~pp_attr_lint.resolve.Unresolved` (``pp-refusal-unsure``) when the check can be
        skipped (a test around the assert, an early ``return``, the flag bound twice) or other
        code names the class: that it never runs under PP is not established.

        A class named as a speculative draft model (:data:`~pp_attr_lint.facts.DRAFTER_NAME_WORDS`)
        is refused when the engine lets no speculative-decoding algorithm run under PP
        (:meth:`pp_speculative_algorithms` is empty: SGLang 0.4.6 and 0.5.1 forks assert
        ``speculative_algorithm is None`` when ``pp_size > 1``).  Raises ``engine-fact-unknown``
        for a package that starts the engine's ranks itself as the first pipeline rank only
        (:meth:`Executors.first_rank_only <pp_attr_lint.engines.executors.Executors.first_rank_only>`)."""
        pinned = self.m.executors.first_rank_only(module)
        if pinned is not None:
            raise pinned
        if cls is None or "." in cls:
            return False
        entries = self.entry_classes(module)
        if not entries or (module, cls) not in entries:
            return False
        top = self.loader_top(module) or module.split(".", 1)[0]
        if any(w in cls for w in F.DRAFTER_NAME_WORDS) and self.pp_speculative_algorithms(top) == frozenset():
            return True
        req = self.pp_forward_requirement(top)
        if req is None or self.forward_accepts((module, cls), req[0]) is not False:
            return False
        why = None
        if req[1]:
            why = "a test around the engine's check can skip it (for a speculative draft model)"
        elif self._named_elsewhere(module, cls):
            why = f"other code of the analysed tree names `{cls}` (a subclass, or a model that builds it)"
        if why is not None:
            raise Unresolved("pp-refusal-unsure", f"the engine refuses pipeline parallelism for `{cls}` (its "
                             f"`forward` takes no `{req[0]}`), but {why}: that it never runs under PP is not "
                             f"established")
        return True

    def _called(self, name: str) -> bool:
        """Whether a file of the tree calls ``name(...)`` (builds the class, calls the function)
        other than where it is defined."""
        import re

        call = re.compile(rb"(?<!class )(?<!def )\b" + re.escape(name.encode()) + rb"\s*\(")
        return any(call.search(self.m.reader.read_bytes(path) or b"") for path, _m in self.m.reader.tree_file_paths(name.encode()) or ())

    def _named_elsewhere(self, module: str, cls: str) -> bool:
        """Whether a file of the tree other than ``module``'s names ``cls`` as a word, or
        ``module`` does outside ``cls``'s own class body and the entry attribute's binding."""
        import re

        word = re.compile(rb"\b" + re.escape(cls.encode()) + rb"\b")
        own = self.ctx.project.path(module)
        for path, _mod in self.m.reader.tree_file_paths(cls.encode()) or ():
            if path != own and word.search(self.m.reader.read_bytes(path) or b""):
                return True
        got = self.m.reader.module_parsed(module)
        if got is None:
            return True
        tree, lines = got[2], got[3]
        attr = self._entry_attribute(module)
        allowed = set()
        for st in tree.body:
            if isinstance(st, ast.ClassDef) and st.name == cls or isinstance(st, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == attr for t in st.targets):
                allowed.update(range(st.lineno, st.end_lineno + 1))
        return any(word.search(text.encode()) for k, text in enumerate(lines.lines, 1) if k not in allowed)

    def _entry_attribute(self, module: str) -> str | None:
        """The module attribute the registry of ``module``'s package reads from each of its
        modules (``"EntryClass"``, :func:`registry_attribute`), when ``module`` is a sibling of
        that registry's module, or of a package a plugin registers (:meth:`loader_top`); ``None``
        otherwise."""
        got = self._loader(module)
        return got[0] if got else None

    def loader_top(self, module: str) -> str | None:
        """The top-level package of the engine whose registry loads the classes of ``module``:
        ``module``'s own, for a sibling of its registry module (SGLang's models); the engine's,
        for a module of a package that a plugin of the checked tree hands to the engine's
        registry (``ModelRegistry.register("plug.models")``, sglang/srt/models/registry.py
        ``_ModelRegistry.register`` -> ``import_model_classes(package_name)``); ``None`` when
        no registry loads it."""
        got = self._loader(module)
        return got[1] if got else None

    def _registry_functions(self, top: str) -> set:
        memo = self._memo.setdefault("entry-attr", {})
        if top not in memo:
            found = set()
            for mod, tree, _lines in self.m.reader.package_trees(top, b"iter_modules("):
                for fn in fast_walk(tree):
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        attr = _registry_attribute(fn)
                        if attr is not None:  # the models are the registry module's siblings
                            found.add((attr, mod.rsplit(".", 1)[0], fn.name))
            memo[top] = found
        return memo[top]

    def _loader(self, module: str) -> tuple | None:
        top, package = module.split(".", 1)[0], module.rsplit(".", 1)[0]
        own = next((a for a, pkg, _fn in sorted(self._registry_functions(top)) if package == pkg), None)
        if own is not None or top in F.ENGINES or package == module:
            return (own, top) if own is not None else None
        for engine in F.ENGINES:
            attrs = set(self._register_reads(engine))
            if len(attrs) == 1 and self._plugin_registers(top, package):
                return (attrs.pop(), engine)
        return None

    def _register_reads(self, engine: str) -> set:
        """The module attributes that a ``register(self, package_name, ...)`` method of
        ``engine`` has read, by handing its package parameter to a registry function
        (:func:`_registry_attribute`: ``import_model_classes(package_name)``)."""
        memo = self._memo.setdefault("register-reads", {})
        if engine not in memo:
            by_fn = {fn: a for a, _pkg, fn in self._registry_functions(engine)}
            found = set()
            for _mod, tree, _lines in self.m.reader.package_trees(engine, b"iter_modules("):
                for fn in fast_walk(tree):
                    if not (isinstance(fn, ast.FunctionDef) and fn.name == "register" and len(fn.args.args) > 1):
                        continue
                    param = fn.args.args[1].arg
                    for n in fast_walk(fn):
                        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in by_fn \
                                and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == param:
                            found.add(by_fn[n.func.id])
            memo[engine] = found
        return memo[engine]

    def _plugin_registers(self, top: str, package: str) -> bool:
        """Whether a file of package ``top`` calls ``<something>.register("package")`` (the
        package's name as the first argument, a string constant)."""
        memo = self._memo.setdefault("plugin-registers", {})
        if (top, package) not in memo:
            memo[(top, package)] = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register"
                and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == package
                for _mod, tree, _lines in self.m.reader.package_trees(top, package.encode()) for n in fast_walk(tree))
        return memo[(top, package)]

    def entry_classes(self, module: str) -> list | None:
        """The model classes the engine loads from ``module`` when its registry reads a module
        attribute of every module of its own package (SGLang's ``import_model_classes`` in
        sglang/srt/models/registry.py: ``pkgutil.iter_modules`` over the package,
        ``hasattr(module, "EntryClass")``): the class keys that attribute names (one name, or a
        list or tuple of names) in ``module``, a sibling of the registry module; ``None`` when the
        tree reads no such attribute, ``module`` is not such a sibling or does not bind it, or a
        name cannot be resolved to a class of the analysed code."""
        attr = self._entry_attribute(module)
        path = self.ctx.project.path(module) if attr is not None else None
        if not path or attr.encode() not in (self.m.reader.read_bytes(path) or b""):
            return None  # (before any parse)
        got = self.m.reader.module_parsed(module)
        if got is None:
            return None
        import re

        names, binding = None, None
        for st in got[2].body:
            if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in st.targets):
                if names is not None:
                    return None  # bound twice: which binding the registry reads depends on the run
                v = st.value
                elts = v.elts if isinstance(v, (ast.List, ast.Tuple)) else [v]
                names, binding = [dotted_name(e) for e in elts], st
                if None in names:
                    return None
        if not names:
            return None
        # the attribute named anywhere else (bound in a branch, appended to, extended): not read
        text = "".join(got[3].lines[binding.lineno - 1:binding.end_lineno]).encode()
        word = re.compile(rb"\b" + re.escape(attr.encode()) + rb"\b")
        if len(word.findall(self.m.reader.read_bytes(path))) != len(word.findall(text)):
            return None
        out = []
        for name in names:
            try:
                out.append(self.r.resolve_class(module, name))
            except Exception:  # noqa: BLE001  (cannot tell)
                return None
        return out if all(k is not None for k in out) else None

    def forward_accepts(self, key, parameter: str) -> bool | None:
        """Whether the ``forward`` that instances of class ``key`` have (the first class on the MRO
        that defines it; ``torch.nn.Module``'s, :data:`~pp_attr_lint.facts.MODULE_FORWARD_PARAMETERS`,
        when none before it does) takes a parameter named ``parameter`` (``**kwargs`` does not
        count: it is no parameter of that name to ``inspect.signature``); ``None`` when it cannot
        be told (the MRO is not known, ``forward`` is bound another way, or comes from another
        class outside the analysed code)."""
        try:
            mro = self.r.mro(key)
        except Exception:  # noqa: BLE001  (the class itself comes first: its own `forward` is read)
            mro = [key]
        for k in mro:
            if k[0] == EXTERNAL_KEY:
                if k[1] in F.MODULE_CLASSES:
                    return parameter in F.MODULE_FORWARD_PARAMETERS
                continue  # an attribute-less base (object, Protocol, ...): no forward of its own
            node = self.m.reader.class_node(k)
            if node is None:
                return None  # a nested class, or a file that does not parse
            for n in fast_walk(node):
                if isinstance(n, ast.Attribute) and n.attr == "forward" and isinstance(n.ctx, (ast.Store, ast.Del)):
                    return None  # `self.forward = ...`: an instance's own
            own = [n for n in node.body if getattr(n, "name", None) == "forward" or isinstance(n, (ast.Assign, ast.AnnAssign))
                   and "forward" in {getattr(t, "id", None) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}]
            if not own:
                continue  # (a `__getattr__` is never asked for it: torch's Module.forward comes first)
            fwd = own[-1]
            if not isinstance(fwd, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(own) > 1 or any(
                    not (isinstance(d, ast.Call) and dotted_name(d.func) in F.SIGNATURE_KEEPING_DECORATORS
                         and not d.args and not d.keywords) for d in fwd.decorator_list):
                return None  # bound another way, defined twice, or wrapped by what may change its signature
            a = fwd.args
            return parameter in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        return None

    def proxy_contract(self, top: str) -> dict | None:
        """What the model runner of the engine whose top-level package is ``top`` allocates for
        what a non-first rank receives when it captures its graphs and warms up:
        ``{"keys": {key: "always" | "when"}, "conditions": {key: guard}, "sites": [[module,
        line], ...]}``.  A site is a function that assigns a dict literal of allocations
        (``pp_proxy_tensors = {"hidden_states": torch.zeros(...)}``) or one allocation to a key
        (``pp_proxy_tensors["residual"] = torch.zeros(...)``) to a variable named
        ``pp_proxy_tensors``.  A key is ``"always"`` where the function allocates it on every
        call under PP (the guards of its allocations, from the flow walker
        :class:`pp_attr_lint.semantic.flow.FunctionGuards`, cannot all be false; a test of the
        pipeline's size is true), else ``"when"``: only under a condition, of the model's config
        as a rule, whose guard ``conditions`` holds (the first site's); a key ``"always"`` at one
        site and ``"when"`` at another is ``"when"``.  SGLang 0.5.23 allocates in
        sglang/srt/model_executor/runner/base_runner.py and runner_utils/buffers.py
        (``allocate_pp_proxy_tensors``): ``hidden_states`` always, ``residual`` unless the model
        folds it into ``hidden_states`` (mHC) or has Kimi K3's ``attn_res_bank``, ``topk_indices``
        for DSA models, ``dspark_hidden_states``; the capture and warm-up proxies are built from
        these buffers (``PPProxyTensors({k: v[:n] for k, v in buffers.pp_proxy_tensors.items()})``).
        ``None`` when no such site is found in the analysed tree."""
        memo = self._memo.setdefault("proxy-contract", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        keys: dict = {}
        conditions: dict = {}
        sites = []
        for module, tree, _lines in self.m.reader.package_trees(top, b"pp_proxy_tensors"):
            for fn in fast_walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                found = _allocations(fn, _lines)
                if not found:
                    continue
                sites.append([module, fn.lineno])
                for key, guard in found.items():
                    # (more than 16 free atoms: "when", never a guess that it is always allocated)
                    how = "always" if len(G.atoms(guard)) <= 16 and G.satisfying(G.f_not(guard)) is None else "when"
                    keys[key] = "when" if keys.get(key, how) != how else how
                    if how == "when":
                        conditions.setdefault(key, guard)
        memo[(dirs, top)] = answer = {"keys": keys, "conditions": conditions, "sites": sites} if sites else None
        return answer

    def pp_speculative_algorithms(self, top: str) -> frozenset | None:
        """The speculative-decoding algorithms the engine whose top-level package is ``top`` lets
        run under pipeline parallelism: the names a function compares ``speculative_algorithm``
        with (:func:`_algorithm_names`), when the tree calls that function only under a test true
        under PP (``if cfg.pp_size > 1: check_pipeline_parallel_compat(cfg)``) and the function
        asserts on them.  SGLang 0.5.23 (sglang/srt/arg_groups/validation_hook.py): ``EAGLE``
        (not multi-layer) and ``DSPARK`` (prefill disaggregation); EAGLE-3 and DFlash are refused.
        An empty set when an ``assert`` under such a test requires that no algorithm is set
        (:func:`_refuses_every_algorithm`; SGLang 0.5.1 forks' ``server_args.py``).  ``None``
        when no such check is found."""
        memo = self._memo.setdefault("pp-spec", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        names, refused_all = None, False
        for _module, tree, _lines in self.m.reader.package_trees(top, b"speculative_algorithm"):
            checks = {fn.name: fn for fn in fast_walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and any(isinstance(a, ast.Assert) for a in fast_walk(fn)) and _algorithm_names(fn)}
            for n in fast_walk(tree):
                if isinstance(n, ast.If) and pp_only_test(n.test):
                    for c in n.body:
                        if isinstance(c, ast.Expr) and isinstance(c.value, ast.Call) \
                                and getattr(c.value.func, "id", None) in checks:
                            names = (names or set()) | _algorithm_names(checks[c.value.func.id])
                        elif isinstance(c, ast.Assert) and _refuses_every_algorithm(c.test):
                            refused_all = True
        memo[(dirs, top)] = answer = frozenset() if refused_all else frozenset(names) if names else None
        return answer


    def stage_output_reads(self, top: str) -> list:
        """Where the engine whose top-level package is ``top`` reads the stage output off what a
        model's ``forward`` returned, on the ranks before the last: ``(module, node, qualname,
        call text)`` for each ``X.tensors`` read in a function that binds ``X`` (alone or first of
        a tuple) to a call of ``.forward(..., pp_proxy_tensors=...)`` and reads it under a guard
        of rank tests that holds only off the last rank, in a method of a class (or a function)
        some code of the tree calls.  SGLang 0.4.6 ``TpModelWorker.forward_batch_generation``
        (sglang/srt/managers/tp_worker.py): ``pp_proxy_tensors, _ = self.model_runner.forward(
        ..., pp_proxy_tensors=...)`` then ``return pp_proxy_tensors.tensors, ...`` in the
        ``else:`` of ``if self.pp_group.is_last_rank:``; the runner returns what the model's
        ``forward`` does (``self.model.forward(..., **kwargs)``)."""
        memo = self._memo.setdefault("stage-output-reads", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        out = []
        for module, tree, lines in self.m.reader.package_trees(top, b".tensors"):
            owners = _method_owners(tree)
            for fn in fast_walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                bound = {}  # name -> the `.forward(...)` call it holds the result of
                for n in fast_walk(fn):
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and _stage_forward_call(n.value):
                        t = n.targets[0]
                        first = t.elts[0] if isinstance(t, ast.Tuple) and t.elts else t
                        if isinstance(first, ast.Name):
                            bound[first.id] = n.value
                reads = [n for n in fast_walk(fn) if isinstance(n, ast.Attribute) and n.attr == "tensors"
                         and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id in bound]
                if not reads or not self._called(owners.get(id(fn), fn.name)):
                    continue
                guards = FunctionGuards(fn, lines, cls=owners.get(id(fn)))
                for n in reads:
                    g = guards.every_call(n)
                    if g is not None and G.implies(g, G.f_not(G.LAST)) and G.satisfying(g) is not None:
                        qual = f"{owners[id(fn)]}.{fn.name}" if id(fn) in owners else fn.name
                        out.append((module, n, qual, ast.unparse(bound[n.value.id].func)))
        memo[(dirs, top)] = out
        return out

    def models_without(self, top: str, parameter: str) -> list:
        """The entry classes of the registries of package ``top`` (:meth:`entry_classes` of each
        module beside a registry module) whose ``forward`` does not take ``parameter``
        (:meth:`forward_accepts` is False), in module order."""
        out = []
        packages = {pkg for _attr, pkg, _fn in self._registry_functions(top)}
        for attr in sorted({a for a, _pkg, _fn in self._registry_functions(top)}):
            for module, _tree, _lines in self.m.reader.package_trees(top, attr.encode()):
                if module.rsplit(".", 1)[0] in packages:
                    out += [k for k in self.entry_classes(module) or () if self.forward_accepts(k, parameter) is False]
        return sorted(set(map(tuple, out)))

def _method_owners(tree) -> dict:
    """``{id(method node): class name}`` of the methods of every class of ``tree``."""
    return {id(m): c.name for c in fast_walk(tree) if isinstance(c, ast.ClassDef)
            for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _stage_forward_call(node) -> bool:
    """``x.forward(..., pp_proxy_tensors=...)``: a call of a model's ``forward`` handed what the
    rank received."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "forward" \
        and any(k.arg == "pp_proxy_tensors" for k in node.keywords)


def _allocations(fn, lines) -> dict:
    """``{key: guard}`` of the runner's allocations in ``fn`` (see
    :meth:`SglangEngine.proxy_contract`): the guard under which ``fn`` allocates ``key`` (the
    disjunction of its allocations' guards, from the flow walker; an allocation in a nested
    function is its own function's); a dict literal must allocate every value (a call)."""
    from ..semantic.flow import FunctionGuards

    flow = None
    out: dict = {}
    for n in fast_walk(fn):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, (ast.Dict, ast.Call))):
            continue
        t, v = n.targets[0], n.value
        if _proxy_name(t) and isinstance(v, ast.Dict) and v.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(x, ast.Call)
                for k, x in zip(v.keys, v.values)):
            keys = [k.value for k in v.keys]
        elif isinstance(t, ast.Subscript) and _proxy_name(t.value) \
                and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str) and isinstance(v, ast.Call):
            keys = [t.slice.value]
        else:
            continue
        # a test of the pipeline's size (`if parallel.pp_size > 1:`) holds: the proxies are for PP
        flow = flow or FunctionGuards(fn, lines, atom_of=lambda t: G.TRUE if pp_only_test(t) else None)
        guard = flow.of(n)
        if guard is None:
            continue  # in a nested function: walked as its own
        for key in keys:
            out[key] = G.f_or(out[key], guard) if key in out else guard
    return out


def _proxy_name(node) -> bool:
    """Whether ``node`` names the runner's proxy buffers: a variable ``pp_proxy_tensors`` (SGLang
    0.5.23's ``allocate_pp_proxy_tensors``) or an attribute of that name
    (``self.pp_proxy_tensors = {...}`` in the ``CudaGraphRunner.__init__`` of SGLang 0.5.1 forks)."""
    return (isinstance(node, ast.Name) and node.id == "pp_proxy_tensors") or (
        isinstance(node, ast.Attribute) and node.attr == "pp_proxy_tensors")


def _refuses_every_algorithm(test) -> bool:
    """Whether assert test ``test`` requires ``X.speculative_algorithm is None`` (alone or as an
    operand of ``and``): under the test that guards it, no speculative decoding runs (SGLang 0.5.1
    forks' ``check_server_args``: ``if self.pp_size > 1: assert (... and self.speculative_algorithm
    is None and ...)``)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.ops[0], ast.Is)
               and isinstance(p.left, ast.Attribute) and p.left.attr == "speculative_algorithm"
               and isinstance(p.comparators[0], ast.Constant) and p.comparators[0].value is None for p in parts)


def _algorithm_names(fn) -> set:
    """The string constants ``fn`` compares (``==``) with a read of ``speculative_algorithm``
    (``cfg.speculative_algorithm == "DSPARK"``, ``cfg.speculative_algorithm.upper() == "EAGLE"``)."""
    out = set()
    for n in fast_walk(fn):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq)):
            continue
        left, right = n.left, n.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "upper":
            left = left.func.value
        if isinstance(left, ast.Attribute) and left.attr == "speculative_algorithm" \
                and isinstance(right, ast.Constant) and isinstance(right.value, str):
            out.add(right.value.upper())
    return out

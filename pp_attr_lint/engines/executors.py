"""Which executors an engine can pick, and whether any of them builds the models of its registry,
read from the analysed tree.

vLLM picks its executor class in one ``if``/``elif`` chain that binds one name in every branch
(vLLM 0.5.x ``LLMEngine._get_executor_cls`` and ``AsyncLLMEngine._get_executor_cls``,
``executor_class = GPUExecutor``; V1 ``Executor.get_class``).  The executor builds its workers,
each worker its model runner, and the runner's ``load_model`` calls the model loader
(vllm/worker/model_runner.py ``self.model = get_model(...)``; vllm/v1/worker/gpu_model_runner.py
``get_model_loader(...)``).  A fork may pin the chain with a constant test and a runner that loads
another library's model: vllm-xft 0.5.5.4 engine/llm_engine.py ``if True: ... executor_class =
CPUExecutor``, whose runner loads ``xfastertransformer.AutoModel`` and never calls ``get_model``.
Then no model of the registry is ever built, on any rank.
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..index.astutil import last_name
from ..resolve import EXTERNAL, Unresolved
from ..semantic.flow import body_nodes as _own_nodes
from ..semantic.service import Service

# the most classes and functions followed from the executors before the answer is "cannot tell"
_REACH_LIMIT = 400


def _branches(node: ast.If, elifs: set) -> list:
    """``[(test or None, body)]`` of an ``if``/``elif``/``else`` chain, in order (``None``: the
    ``else``); the ids of its ``elif`` nodes are added to ``elifs``."""
    out = []
    while True:
        out.append((node.test, node.body))
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            elifs.add(id(node))
            continue
        if node.orelse:
            out.append((None, node.orelse))
        return out


def _name_assigns(body: list) -> list:
    """The ``x = value`` statements (one plain name bound) of ``body``, in source order."""
    return sorted((n for n in _own_nodes(body) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name)), key=lambda n: (n.lineno, n.col_offset))


def _bound_names(body: list) -> dict:
    """Name -> the value last assigned to it (``x = value``) in ``body``, in source order."""
    return {n.targets[0].id: n.value for n in _name_assigns(body)}


def _module_nodes(tree: ast.Module):
    """The nodes of ``tree``'s statements outside its functions (class bodies without their
    methods included)."""
    return _own_nodes([st for st in tree.body if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))])


def _truthy_constant(test) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def selections(tree: ast.Module) -> list:
    """``[(name, live, pinned)]``: each ``if`` chain of ``tree``'s functions that binds ``name`` to
    a bare name in two branches or more (``executor_class = CPUExecutor``), with the branch bodies that can run
    (``live``: those up to the first constant true test, and that one) and whether such a test
    cuts the chain (``pinned``)."""
    out = []
    elifs: set = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        heads = sorted((n for n in _own_nodes(fn.body) if isinstance(n, ast.If)), key=lambda n: (n.lineno, n.col_offset))
        inner: set = set()  # (id of an `if`, name): a chain inside a branch of one that binds name
        for node in heads:
            if id(node) in elifs:
                continue  # an `elif` is no chain's head
            chain = _branches(node, elifs)
            bound = [_bound_names(body) for _test, body in chain]
            for name in sorted({k for b in bound for k in b}):
                if sum(isinstance(b.get(name), ast.Name) for b in bound) < 2 or (id(node), name) in inner:
                    continue
                inner.update((id(n), name) for _t, body in chain for n in _own_nodes(body) if isinstance(n, ast.If))
                cut = next((i for i, (test, _b) in enumerate(chain) if _truthy_constant(test)), None)
                live = chain if cut is None else chain[:cut + 1]
                out.append((name, [body for _test, body in live], cut is not None))
    return out


class Executors(Service):
    """The executors of an engine, for a :class:`~pp_attr_lint.semantic.model.RankFacts`
    ``model`` (memoized per run)."""

    def builds_registry_models(self, top: str) -> bool:
        """Whether the engine of top-level package ``top`` can build a model of its registry:
        ``False`` only when some executor selection of ``top`` is pinned by a constant true test
        (:func:`selections`), every selection that can run (its module does not fail on import,
        :meth:`EngineRelease.lacks <pp_attr_lint.engines.release.EngineRelease.lacks>`) binds a
        class of the analysed code in each live branch, and nothing those classes build, by
        constructor call, by a function they call or by a ``"module"`` string naming a class
        (vLLM's ``worker_module_name``), calls the model loader
        (:data:`~pp_attr_lint.facts.MODEL_LOADER_CALLS`).  ``True`` whenever that cannot be
        established (no pinned selection, a bound value that is not a class of the tree, more
        than a few hundred classes reached)."""
        memo = self._memo.setdefault("builds", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) not in memo:
            memo[(dirs, top)] = True  # while it is being answered
            memo[(dirs, top)] = self._builds(top)
        return memo[(dirs, top)]

    def pinned_first_rank(self, top: str):
        """Where package ``top`` starts an engine's ranks itself, always as the first pipeline
        rank: ``(module, line)`` of a call that passes ``pp_rank=0`` to a function of another
        top-level package (sglang-omni 0.1.9 model_runner/model_worker.py:112,
        ``spawn_world_rank(server_args, tp_rank=tp_rank, pp_rank=0)`` of SGLang's
        runtime_context), when every such call of the package passes ``0``; ``None`` otherwise.
        Such a package runs its models on no later rank; whether anything else does (the
        engine's own launcher, given the package's models) is not in the package."""
        memo = self._memo.setdefault("pinned-rank", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) not in memo:
            found = None
            for module, tree, _lines in self.m.reader.package_trees(top, b"pp_rank=0"):
                got = pinned_rank_calls(tree, module, self.r.absolute_module)
                if got is None:
                    found = None
                    break
                if got and found is None:
                    found = (module, got[0][0])
            if found is not None:
                # every call that passes `pp_rank` must pass 0, also in files without `pp_rank=0`
                for module, tree, _lines in self.m.reader.package_trees(top, b"pp_rank"):
                    if pinned_rank_calls(tree, module, self.r.absolute_module) is None:
                        found = None
                        break
            memo[(dirs, top)] = found
        return memo[(dirs, top)]

    def first_rank_only(self, module: str) -> Unresolved | None:
        """The :class:`~pp_attr_lint.resolve.Unresolved` (``engine-fact-unknown``) every rule
        gets for ``module`` when its package starts the engine's ranks itself as the first
        pipeline rank only (:meth:`pinned_first_rank`): its lines fail on no later rank that
        the package starts, and whether other code runs its models under PP cannot be told;
        ``None`` otherwise."""
        top = module.split(".", 1)[0]
        pinned = self.pinned_first_rank(top)
        if pinned is None:
            return None
        return Unresolved("engine-fact-unknown", f"`{top}` starts the engine's ranks itself, each as the first "
                          f"pipeline-parallel rank (`pp_rank=0`, `{pinned[0]}` line {pinned[1]}): whether anything "
                          f"runs `{module}` on a later rank is not in the analysed code")

    def _builds(self, top: str) -> bool:
        pinned = set()
        for _module, tree, _lines in self.m.reader.package_trees(top, b"if True:", b"if 1:"):
            pinned |= {name for name, _live, cut in selections(tree) if cut}
        if not pinned:
            return True
        starts = set()
        for module, tree, _lines in self.m.reader.package_trees(top, *(f"{n} =".encode() for n in sorted(pinned))):
            chosen = [(name, live) for name, live, _cut in selections(tree) if name in pinned]
            if not chosen or self._fails_on_import(module, tree):
                continue
            for name, live in chosen:
                for body in live:
                    keys = self._bound_classes(module, body, name)
                    if keys is None:
                        return True  # a value this reading cannot name: cannot tell
                    starts |= keys
        return self._reaches_loader(top, starts)

    def _fails_on_import(self, module: str, tree: ast.Module) -> bool:
        """Whether a ``from`` import at the top of ``module`` names what its own package lacks."""
        top = module.split(".", 1)[0]
        for st in tree.body:
            if isinstance(st, ast.ImportFrom):
                target = self.r.absolute_module(module, st.module, st.level)
                if target and target.split(".", 1)[0] == top and any(
                        self.m.release.lacks(target, a.name, False) for a in st.names):
                    return True
        return False

    def _bound_classes(self, module: str, body: list, name: str) -> set | None:
        """The class keys ``name`` is bound to in the branch ``body`` (each value a name imported
        in the branch or at the top of ``module``), or ``None`` when one is not a class."""
        local = _local_imports(body)
        keys = set()
        for n in _name_assigns(body):
            if n.targets[0].id == name:
                sym = self._symbol(module, local, n.value.id) if isinstance(n.value, ast.Name) else None
                if not sym or sym[0] != "class":
                    return None
                keys.add((sym[1], sym[2]))
        return keys

    def _symbol(self, module: str, local: dict, name: str):
        try:
            if name in local:
                target, attr = local[name]
                return self.r.lookup(target, attr) if target else None
            return self.r.lookup(module, name)
        except (Unresolved, RecursionError):
            return None

    def _reaches_loader(self, top: str, starts: set) -> bool:
        """Whether the classes ``starts`` (and what they build or call, within ``top``) call the
        model loader; ``True`` too when more than :data:`_REACH_LIMIT` are reached."""
        seen: set = set()
        todo = [("class", k) for k in sorted(starts)]
        while todo:
            item = todo.pop()
            if item in seen:
                continue
            seen.add(item)
            if len(seen) > _REACH_LIMIT:
                return True
            kind, key = item
            if kind == "function":
                node = self.m.reader.function_node(key)
                functions = [node] if node is not None else []
            else:
                functions = []
                try:
                    mro = self.r.mro(key)
                except Unresolved:
                    mro = [key]
                for k in mro:
                    node = self.m.reader.class_node(k) if k[0] != EXTERNAL else None
                    if node is not None:
                        functions += [(k[0], f) for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for got in functions:
                module, fn = (key[0], got) if kind == "function" else got
                local = _local_imports(fn.body)
                strings = set()
                for n in _own_nodes(fn.body):
                    if isinstance(n, ast.Call):
                        if last_name(n.func) in F.MODEL_LOADER_CALLS:
                            return True
                        if isinstance(n.func, ast.Name):
                            sym = self._symbol(module, local, n.func.id)
                            if sym and sym[0] in ("class", "function") and sym[1].split(".", 1)[0] == top:
                                todo.append((sym[0], (sym[1], sym[2])))
                    elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                        strings.add(n.value)
                for s in sorted(strings):
                    summary = self.ctx.project.summary(s) if s.split(".", 1)[0] == top and "." in s else None
                    if summary is not None:
                        named = [c for c in summary["classes"] if c in strings] or list(summary["classes"])
                        todo += [("class", (s, c)) for c in named]
        return False


def pinned_rank_calls(tree: ast.Module, module: str, absolute) -> list | None:
    """``[(line, callee module)]`` of the calls in ``tree`` that pass a keyword ``pp_rank``
    to a function imported from a top-level package other than ``module``'s own (in the
    function or at the top of the module; ``absolute(module, target, level)`` makes an import's
    module absolute), when every such call passes the constant ``0``; ``None`` when one passes
    anything else."""
    own = module.split(".", 1)[0]
    top = list(_module_nodes(tree))
    top_imports = _imports(top, module, absolute)
    functions = [list(_own_nodes(fn.body)) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out = []
    # a function's own lazy imports over the module's
    for nodes, local in [(top, top_imports), *((f, {**top_imports, **_imports(f, module, absolute)}) for f in functions)]:
        for n in nodes:
            if not isinstance(n, ast.Call):
                continue
            kw = next((k for k in n.keywords if k.arg == "pp_rank"), None)
            if kw is None:
                continue
            head = n.func.id if isinstance(n.func, ast.Name) else None
            target = local.get(head) if head else None
            if target is None or not target[0] or target[0].split(".", 1)[0] == own:
                continue
            if not (isinstance(kw.value, ast.Constant) and kw.value.value == 0):
                return None
            out.append((n.lineno, target[0]))
    return out


def _local_imports(body: list) -> dict:
    """Name -> ``(module, name)`` of the absolute ``from m import name`` statements of ``body``
    (a function's lazy imports)."""
    return _imports(_own_nodes(body), "", None)


def _imports(nodes, module: str, absolute) -> dict:
    """Name -> ``(module, name)`` of the ``from m import name`` statements among ``nodes``;
    relative ones only when ``absolute`` is given to resolve them against ``module``."""
    out = {}
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and (n.module or n.level):
            target = n.module if n.level == 0 else absolute(module, n.module, n.level) if absolute else None
            if target:
                for a in n.names:
                    out[a.asname or a.name] = (target, a.name)
    return out

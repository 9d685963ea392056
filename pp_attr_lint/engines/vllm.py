"""vLLM (and its forks, Aphrodite): the model registry and what the engine refuses under pipeline
parallelism, read from the analysed tree.

* a registered model whose classes lack ``SupportsPP`` is refused under PP
  (``vllm/config/model.py`` verifies ``supports_pp``; vLLM 0.10.0 in ``vllm/config.py``);
* before ``SupportsPP`` (vLLM 0.5.1 to 0.6.0, and forks of them), an architecture missing from a
  list of names is refused (``vllm/config.py``: ``if not all(arch in _PP_SUPPORTED_MODELS for arch
  in architectures) and pipeline_parallel_size > 1: raise NotImplementedError(...)``);
* a config flag may refuse PP (``vllm/config/parallel.py``: ``if self.enable_elastic_ep: ...
  if self.pipeline_parallel_size > 1: raise``).
"""

from __future__ import annotations

import ast
import re

from .. import facts as F
from ..resolve import EXTERNAL, Unresolved
from ..index.astutil import last_name, walk as fast_walk
from ..semantic.flow import raise_guards
from ..semantic.guards import atoms, f_and, f_not, f_or, satisfying
from ..semantic.service import Service


class VllmEngine(Service):
    """vLLM's answers for a :class:`~pp_attr_lint.semantic.model.RankFacts` ``model``
    (memoized per run)."""

    def feature_refuses_pp(self, flag: str):
        """Whether the analysed tree refuses pipeline parallelism whenever the config flag ``flag``
        is on: some function of its parallel configuration module (the first of
        :data:`~pp_attr_lint.facts.PARALLEL_CONFIG_MODULES` it holds, for this file's top-level
        package) that tests ``pipeline_parallel_size`` raises on every path where ``flag`` holds
        under PP (``pipeline_parallel_size > 1`` is true there; the guards of its ``raise``
        statements cover ``flag``).  A plugin, whose package has no such module, is asked about
        the one engine it imports from outside the checked tree (a package with a model registry,
        :meth:`TreeReader.scan_dirs`).  ``None`` when no such module is found: it cannot be told."""
        answer = self._refuses_in(self.ctx.module.split(".", 1)[0], flag)
        if answer is None:
            engines = [prefix for _folder, prefix in self.m.reader.scan_dirs() or () if prefix and self.r.model_registry(prefix)]
            if len(engines) == 1:
                answer = self._refuses_in(engines[0], flag)
        return answer

    def _refuses_in(self, top: str, flag: str):
        memo = self._memo.setdefault("refuses", {})
        if (top, flag) in memo:
            return memo[(top, flag)]
        from ..index.spec import LineIndex
        from ..textio import read_source

        answer = None
        for pattern in F.PARALLEL_CONFIG_MODULES:
            module = pattern.replace("{top}", top)
            path = self.ctx.project.path(module) if self.ctx.project.summary(module) is not None else None
            if not path:
                continue
            try:
                import os

                stat = os.stat(path)
                self.ctx.project.touched.setdefault(path, (stat.st_mtime_ns, stat.st_size))
                text = read_source(path).text
                tree = ast.parse(text)
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                break  # found but unreadable: cannot be told
            answer = False
            lines = LineIndex(text)
            for all_raises in raise_guards(tree, lines, lambda body: flag in body):
                # the raises under the flag; leaving the others out only makes a refusal harder to show
                raises = [g for g in all_raises if flag in atoms(g, set())]
                uncovered = f_and(("a", flag), f_not(f_or(*raises)))
                if not raises:
                    continue
                if len(atoms(uncovered, set()) - {"@first", "@last"}) > 16:
                    answer = None  # too many tests to enumerate: cannot be told
                    continue
                if satisfying(uncovered) is None:
                    answer = True
                    break
            break
        memo[(top, flag)] = answer
        return answer

    def module_runs_under_pp(self, module: str) -> bool:
        """False when the model registry lists classes of ``module`` and none of them has
        ``SupportsPP`` on its MRO: the engine refuses ``pipeline_parallel_size > 1`` for such a
        model (vllm/config/model.py verifies ``supports_pp``; Aphrodite 0.24.1's
        aphrodite/config/model.py:1366 too), so its code never runs on a rank > 0.  The registry is
        the one of ``module``'s top-level package (:meth:`Resolver.model_registry`, found by its
        place in the tree), plus the ``register_model`` calls of the checked files (a plugin's
        classes are checked the same way); a plugin's tables of ``(folder, module, Class)`` too
        (:func:`~pp_attr_lint.index.registry.registry_entries`), its refusal read in the engine its
        registry module imports from (:meth:`_refuses`).  A registered class that a model
        builds by name (:meth:`_hosts`) runs under PP when its host does.  True when no registry lists the module (SGLang, RL
        frameworks, the rule cases; for SGLang see :meth:`SglangEngine.refused_under_pp`) or a registered class
        cannot be resolved.  Raises :class:`~pp_attr_lint.resolve.Unresolved`
        (``engine-fact-unknown``) when whether the engine runs the module's models under PP
        cannot be established (also when the package builds an engine registry whose entries
        are not read, :meth:`_registry_unread`); every rule that asks gets the same answer."""
        memo = self._memo.setdefault("pp-modules", {})
        if module in memo:
            if isinstance(memo[module], Unresolved):
                raise memo[module]  # every rule that asks gets the same answer
            return memo[module]
        memo[module] = True  # while it is being answered
        if self._never_built(module):
            memo[module] = False
            return False
        registered = []
        archs = []  # (architecture, class key) of the module's registered classes
        engines = set()  # the top-level packages of the registries that list the module
        for _tname, _arch, full, cls in self.r.model_registry(module.split(".", 1)[0]) or ():
            if full == module:
                engines.add(module.split(".", 1)[0])
                registered.append((module, cls))
                archs.append((_arch, (module, cls)))
            elif module.startswith(full + "."):
                # an entry naming the package (vLLM 0.33.0 `vllm.models.glm5next`) whose
                # `__init__` re-exports the class of this submodule
                try:
                    key = self.r.resolve_class(full, cls)
                except Exception:
                    key = None
                if key is not None and key[0] == module:
                    engines.add(module.split(".", 1)[0])
                    registered.append(key)
                    archs.append((_arch, key))
        for _arch, top, key, _name, _m, _line in self.registrations():
            if key and key[0] == module:
                registered.append(key)
                archs.append((_arch, key))
                engines.add(top)
        allowed = self._listed_architectures({module.split(".", 1)[0]} | {e for e in engines if e})
        if allowed is not None:
            # an engine that admits the architectures of a list under PP (and no other): the
            # module runs there when it serves one, or some module imports it, or a model that
            # runs there builds one of its architectures by name
            try:
                ok = any(a in allowed for a, _key in archs) or self._imported_anywhere(module) or any(
                    host != module and self.module_runs_under_pp(host) for host in self._hosts({a for a, _k in archs}))
            except Unresolved as e:
                memo[module] = e
                raise
            memo[module] = ok
            return ok
        ok = True
        if registered:
            ok = False
            for key in dict.fromkeys(registered):
                try:
                    if any(e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL for e in self.r.mro(key)):
                        ok = True
                        break
                except Exception:
                    ok = True  # cannot tell: judge it
                    break
        elif self._registry_unread(module.split(".", 1)[0]):
            memo[module] = Unresolved("engine-fact-unknown", f"`{module.split('.', 1)[0]}` builds a model registry "
                                      "(`_ModelRegistry`/`_LazyRegisteredModel`) whose entries are not read: whether "
                                      f"it lists `{module}`'s classes without `{F.PP_PROTOCOL}` cannot be told")
            raise memo[module]
        if not ok:
            # a class built by name inside another model (`init_vllm_registered_model(...,
            # architectures=[...])`) runs under pipeline parallelism whenever its host does
            try:
                ok = any(host != module and self.module_runs_under_pp(host)
                         for host in self._hosts({a for a, key in archs if key in registered}))
            except Unresolved as e:
                memo[module] = e
                raise
        if not ok and not all(top and self._refuses(top) for top in sorted(engines, key=str)):
            # the registered model lacks the protocol, but that the engine then refuses it is not
            # in the tree: neither judged as a PP model nor passed as one that never runs under PP
            memo[module] = Unresolved("engine-fact-unknown", f"`{module}`'s registered classes do not list "
                                      f"`{F.PP_PROTOCOL}`, and no check in the analysed code refuses pipeline "
                                      "parallelism for such a model")
            raise memo[module]
        memo[module] = ok
        return ok

    def _never_built(self, module: str) -> bool:
        """Whether ``module`` is a module of its engine's model registry (an entry's module, or a
        module of an entry's package) while no executor the engine can pick builds a registry
        model (:meth:`Executors.builds_registry_models
        <pp_attr_lint.engines.executors.Executors.builds_registry_models>`): its code never runs."""
        top = module.split(".", 1)[0]
        entries = self.r.model_registry(top) or ()
        packages = {full.rsplit(".", 1)[0] for _t, _a, full, _c in entries} | {full for _t, _a, full, _c in entries}
        if module not in packages and module.rsplit(".", 1)[0] not in packages:
            return False
        return not self.m.executors.builds_registry_models(top)

    def pp_architectures(self, top: str) -> frozenset | None:
        """The architectures the engine whose top-level package is ``top`` admits under pipeline
        parallelism when it refuses every other one by a list: some function of a module of
        ``top`` (under the scanned folders) raises on every path where ``pipeline_parallel_size >
        1`` holds and ``all(a in NAME for a in ...)`` is false (or ``any(a not in NAME for a in
        ...)`` true), ``NAME`` a module-level list, tuple or set of string constants bound once
        in that module and changed nowhere in the tree (no ``NAME.append(...)``, ``NAME +=``, or
        another binding).  vLLM 0.5.1 to 0.6.0 have it in vllm/config.py
        (``_PP_SUPPORTED_MODELS``, ``ModelConfig.verify_with_parallel_config``).  The union when
        several lists refuse; ``None`` when no such check is found."""
        memo = self._memo.setdefault("pp-architectures", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        answer: set | None = None
        for module, tree, lines in self.m.reader.package_trees(top, b"pipeline_parallel_size",
                                                                    matching=_MEMBERSHIP_BYTES):
            lists = _string_lists(tree)
            if not lists:
                continue
            for raises in raise_guards(tree, lines, lambda body: any(n in body for n in lists)):
                if not raises:
                    continue
                raised = f_or(*raises)
                for atom in sorted(atoms(raised, set()) - {"@first", "@last"}):
                    got = _membership_test(atom, lists)
                    if got is None or not self._unchanged(got[0]):
                        continue
                    name, refused_when_true = got
                    test = ("a", atom) if refused_when_true else f_not(("a", atom))
                    if satisfying(f_and(test, f_not(raised))) is None:
                        answer = (answer or set()) | lists[name]
        memo[(dirs, top)] = frozenset(answer) if answer is not None else None
        return memo[(dirs, top)]

    def _unchanged(self, name: str) -> bool:
        """Whether no file of the analysed tree changes the module-level list ``name`` after its
        binding: no ``name.append(...)`` (or another method that adds), ``name +=``, ``name |=``,
        or a second ``name = ...`` (a plugin extending vLLM's list makes it unknown)."""
        pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*(?:(?P<adds>\.\s*(?:append|extend|insert|add|update"
                         rb"|__iadd__)\b|\+=|\|=)|=(?!=))")
        files = self.m.reader.tree_file_paths(name.encode())
        if files is None:
            return False
        binds = [m.group("adds") is None for path, _module in files
                 for m in pat.finditer(self.m.reader.read_bytes(path) or b"")]
        return all(binds) and len(binds) <= 1  # no addition, and at most its own binding

    def _listed_architectures(self, tops: set) -> frozenset | None:
        """The union of :meth:`pp_architectures` of the engines ``tops`` (top-level packages) that
        refuse by a list; ``None`` when none does."""
        lists = [got for top in sorted(tops) if (got := self.pp_architectures(top)) is not None]
        return frozenset().union(*lists) if lists else None

    def _imported_anywhere(self, module: str) -> bool:
        """Whether some file of the analysed tree other than ``module``'s own imports ``module`` (or
        a name from it); True when that cannot be told (a file cannot be read or parsed)."""
        last = module.rsplit(".", 1)[-1]
        files = self.m.reader.tree_file_paths(last.encode())
        if files is None:
            return True
        for path, mod in files:
            if mod == module:
                continue
            got = self.m.reader.parsed(path, mod)
            if got is None:
                return True
            for node in fast_walk(got[2]):
                if isinstance(node, ast.Import) and any(a.name == module or a.name.startswith(module + ".")
                                                        for a in node.names):
                    return True
                if isinstance(node, ast.ImportFrom):
                    base = self.r.absolute_module(mod, node.module, node.level)
                    if base is None:
                        return True
                    if base == module or base.startswith(module + ".") \
                            or any(f"{base}.{a.name}" == module for a in node.names):
                        return True
        return False

    def _refuses(self, top: str) -> bool:
        """:meth:`refuses_unsupported_models` of ``top``, or of the one engine whose registry
        ``top``'s own registry module imports from (a plugin such as vllm-omni 0.30.0 builds its
        ``OmniModelRegistry`` from vLLM's ``_ModelRegistry``, which vLLM's ``ModelConfig`` asks
        ``is_pp_supported_model``)."""
        if self.refuses_unsupported_models(top):
            return True
        engines = set()
        for fac in self.r.settings.factories:
            summary = self.r.src.summary(fac.bound(top).registry_module)
            for target, _name, level in (summary or {}).get("imports", {}).values():
                other = (target or "").split(".", 1)[0]
                if level == 0 and other and other != top and self.r.model_registry(other):
                    engines.add(other)
        return len(engines) == 1 and self.refuses_unsupported_models(engines.pop())

    def _registry_unread(self, top: str) -> bool:
        """Whether package ``top`` builds a registry of an engine's classes (a call of
        ``_ModelRegistry`` or ``_LazyRegisteredModel`` imported from another package that has a
        model registry: vLLM's) while no entry of its own registry tables is read
        (:meth:`Resolver.model_registry`): its entries come from code this tool does not evaluate.
        SGLang's own ``_ModelRegistry`` class is not an engine's import."""
        names = ("_ModelRegistry", "_LazyRegisteredModel")
        if self.r.model_registry(top):
            return False
        for _module, tree, _lines in self.m.reader.package_trees(top, *(n.encode() + b"(" for n in names)):
            imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                        and node.level == 0 and (node.module or "").split(".", 1)[0] not in ("", top)
                        and self.r.model_registry(node.module.split(".", 1)[0]) for a in node.names if a.name in names}
            if any(isinstance(node, ast.Call) and last_name(node.func) in imported for node in ast.walk(tree)):
                return True
        return False

    def _hosts(self, archs: set) -> list:
        """The modules whose code builds one of the architectures ``archs`` by name: a call of a
        registry factory (``init_vllm_registered_model``, settings' ``factories``) whose
        architectures argument holds one of them, as a string literal or a name or attribute
        assigned a string literal in the same file (vllm-omni 0.30.0's audex_omni.py
        ``architectures=[self._LM_ARCHITECTURE]``).  An argument read from the model's config
        names no host here.  Files of the analysed tree (:meth:`TreeReader.tree_files`)."""
        import fnmatch

        if not archs:
            return []
        facs = {(f.name, f.keyword) for f in self.r.settings.factories}
        needles = tuple(dict.fromkeys(n.rsplit("*", 1)[-1].encode() + b"(" for n, _k in facs))
        suffixes = tuple(dict.fromkeys(n.rsplit("*", 1)[-1] for n, _k in facs))
        factory = re.compile("|".join(f"(?:{fnmatch.translate(n)})" for n, _k in sorted(facs)))
        keywords = {k for _n, k in facs}
        per_file = self._memo.setdefault("factory-calls-of-file", {})  # path -> [(module, names)]
        files = self.m.reader.tree_file_paths(*needles)
        if files is None:
            return []  # a file of the tree cannot be read: no host is known
        could_name = _could_spell(archs)
        openings = self._memo.setdefault("string-openings", {})  # path -> _openings of its bytes
        hosts = set()
        for path, mod in files:
            calls = per_file.get((path, mod))
            if calls is None:
                data = self.m.reader.read_bytes(path) or b""
                if path not in openings:
                    openings[path] = _openings(data)
                if not could_name(data, openings[path]):
                    continue  # no string of the file can be one of the architectures: not parsed
                got = self.m.reader.parsed(path, mod)
                if got is None:
                    return []  # a file that can name one does not parse: no host is known
                calls = per_file[(path, mod)] = _factory_calls(got[2], mod, factory, suffixes, keywords)
            hosts.update(m for m, names in calls if names & archs)
        return sorted(hosts)

    def refuses_unsupported_models(self, top: str) -> bool:
        """Whether the engine whose top-level package is ``top`` refuses ``pipeline_parallel_size
        > 1`` for a model that does not support it: some function of a module of ``top`` under the
        scanned folders (:meth:`TreeReader.scan_dirs`: the checked root and the packages it imports, the
        engine a plugin runs in included) raises on every path
        where ``pipeline_parallel_size > 1`` holds and a call named for PP support (``...
        is_pp_supported_model(...)``, ``supports_pp(...)``) returns false.  vLLM 0.10.0 has it in
        vllm/config.py, 0.21.0 to 0.33.0 and Aphrodite 0.24.1 in ``<pkg>/config/model.py``
        (``raise NotImplementedError("Pipeline parallelism is not supported for this model. ...")``);
        SGLang 0.5.23 has none.  False when none is found or a file cannot be read."""
        memo = self._memo.setdefault("refuses-unsupported", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        memo[(dirs, top)] = answer = False
        for _module, tree, lines in self.m.reader.package_trees(top, b"pp_supported", b"supports_pp"):
            for raises in raise_guards(tree, lines, lambda body: "pp_supported" in body or "supports_pp" in body):
                if not raises:
                    continue
                raised = f_or(*raises)
                for atom in sorted(atoms(raised, set()) - {"@first", "@last"}):
                    name = atom.split("(", 1)[0].rsplit(".", 1)[-1]
                    if "(" in atom and ("pp_supported" in name or "supports_pp" in name) \
                            and satisfying(f_and(f_not(("a", atom)), f_not(raised))) is None:
                        answer = True  # the model not supported under PP: a raise on every path
                        break
                if answer:
                    break
            if answer:
                break
        memo[(dirs, top)] = answer
        return answer

    def defines_method(self, name: str) -> bool | None:
        """Whether some file of the analysed tree (the checked root and the packages it imports
        from, :meth:`TreeReader.scan_dirs`) defines a function ``name`` (``def name(``): a method
        the checked code calls on an engine object (``self.quant_config.get_cache_scale(name)``)
        that no class defines raises AttributeError (vLLM 0.30.0 has
        ``QuantizationConfig.get_cache_scale_mapper`` and no ``get_cache_scale``).  ``None`` when
        it cannot be told: no engine package (one with a model registry) is among the scanned
        folders, or a file cannot be read."""
        dirs = self.m.reader.scan_dirs()
        if not dirs or not any(prefix and self.r.model_registry(prefix) for _folder, prefix in dirs):
            own = self.ctx.module.split(".", 1)[0]
            if self.r.model_registry(own) is None:
                return None
        files = self.m.reader.tree_file_paths(f"def {name}(".encode())
        return None if files is None else bool(files)

    def drafter_module(self, module: str) -> bool | None:
        """Whether the model registry of ``module``'s top-level package lists classes of ``module``
        (by this module's name, or by a package above it that re-exports them) and lists them only in its table of speculative-decoding drafters
        (:data:`~pp_attr_lint.facts.DRAFTER_TABLE`): every class of the module then runs inside a
        drafter, which vLLM builds and runs on the last pipeline-parallel rank only
        (vllm/v1/worker/gpu_model_runner.py: ``if self.speculative_config and
        get_pp_group().is_last_rank``, 0.10.0-0.33.0).  A plugin has no registry tables of its
        own: there the architectures its ``ModelRegistry.register_model`` calls give classes of
        ``module`` are looked up in the tables of the engine they register into
        (:meth:`registered_drafter`).  ``None`` when neither tells."""
        entries = self.r.model_registry(module.split(".", 1)[0])
        if entries is None:
            return self.registered_drafter(module)
        tables = set()
        for table, _arch, mod, cls in entries:
            if mod == module:
                tables.add(table)
            elif module.startswith(mod + "."):  # a package that re-exports the class (vllm.models.qwen4_exp)
                try:
                    key = self.r.resolve_class(mod, cls)
                except Unresolved:
                    key = None
                if key is not None and key[0] == module:
                    tables.add(table)
        return bool(tables) and tables <= {F.DRAFTER_TABLE}

    def registered_drafter(self, module: str) -> bool | None:
        """For a plugin's ``module``: whether the architectures that the plugin's
        ``register_model`` calls (:meth:`registrations`) give to classes of ``module`` are,
        in the model registry of the engine they register into, only speculative-decoding
        drafters (vllm-kunlun 0.11.1 registers ``Qwen3NextMTP``, which vLLM 0.11.0 lists in
        :data:`~pp_attr_lint.facts.DRAFTER_TABLE`): ``True``; ``False`` when one of them is in
        another table (a model), or is an architecture the engine's registry does not list whose
        name has none of :data:`~pp_attr_lint.facts.DRAFTER_NAME_WORDS` (vllm-ascend 0.11.0's
        ``PanguProMoEForCausalLM``): vLLM builds a drafter under the architecture its speculative
        config names, ``Eagle``-prefixed for EAGLE (vllm/transformers_utils/configs/eagle.py),
        an ``MTP`` name for MTP (vllm/config/speculative.py), ``MedusaModel`` for Medusa;
        otherwise ``None`` when the plugin registers no class of ``module``, or another
        architecture the engine's registry does not list, or that registry is not found."""
        archs: dict[str, set] = {}
        for arch, top, key, _name, _mod, _line in self.registrations():
            if key is not None and key[0] == module and top is not None:
                archs.setdefault(top, set()).add(arch)
        if not archs:
            return None
        known = unknown = False
        for top, names in sorted(archs.items()):
            entries = self.r.model_registry(top)
            if entries is None:
                unknown = True
                continue
            tables: dict[str, set] = {}
            for table, arch, _m, _c in entries:
                if arch in names:
                    tables.setdefault(arch, set()).add(table)
            if any(t != F.DRAFTER_TABLE for ts in tables.values() for t in ts):
                return False  # a model: its rank tests mean its own stage
            if any(a not in tables and not any(w in a for w in F.DRAFTER_NAME_WORDS) for a in names):
                return False  # a new architecture no speculative config names: a model
            known = known or bool(tables)
            unknown = unknown or any(a not in tables for a in names)
        return None if unknown or not known else True

    def raw_token_models(self, top: str) -> list:
        """``[(module, class, line, evidence)]`` of the classes of package ``top`` that declare that
        they need the raw token ids (a class attribute ``requires_raw_input_tokens = True``,
        vllm/model_executor/models/interfaces.py) and whose model code raises without them:
        ``evidence`` is ``"module:line"`` of a ``raise`` under a test of ``input_ids is None``
        in the class's module or, for a model kept in a folder of its own (``{top}.models.<name>``,
        vLLM 0.32.0-0.33.0: DeepSeek-V4's MoE routing, Qwen4Exp's PLE), in a module of that folder.
        A class whose code never raises so (a multimodal wrapper that hands the ids to a language
        model reading them on the first rank only) is left out.  Empty when there is none."""
        memo = self._memo.setdefault("raw-tokens", {})
        dirs = self.m.reader.scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        declared = []
        for module, tree, _lines in self.m.reader.package_trees(top, b"requires_raw_input_tokens = True"):
            for cls in ast.walk(tree):
                if isinstance(cls, ast.ClassDef) and any(
                        isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and st.value.value is True
                        and "requires_raw_input_tokens" in {getattr(t, "id", None) for t in st.targets}
                        for st in cls.body):
                    declared.append((module, cls.name, cls.lineno))
        raises: dict = {}  # module -> the line of its first raise under `input_ids is None`
        if declared:
            for module, tree, _lines in self.m.reader.package_trees(top, b"input_ids is None"):
                line = _raise_without_ids(tree)
                if line is not None:
                    raises[module] = line
        out = []
        for module, cls, line in declared:
            parts = module.split(".")
            folder = ".".join(parts[:3]) if len(parts) > 3 and parts[1] == "models" else module
            hit = sorted((m, n) for m, n in raises.items() if m == folder or m.startswith(folder + "."))
            if hit:
                out.append((module, cls, line, f"{hit[0][0]}:{hit[0][1]}"))
        memo[(dirs, top)] = sorted(out)
        return memo[(dirs, top)]

    def registrations(self) -> list:
        """:meth:`Resolver.registrations` of the checked files and of every other file of the
        checked file's top-level package that calls ``.register_model(`` (a plugin registers its
        classes in its ``__init__.py``: the verdict on a class must not depend on whether that file
        is checked too); memoized for the run."""
        import os

        top = self.ctx.module.split(".", 1)[0]
        key = ("registrations", id(self.ctx.checked), self.ctx.file.root, top)
        got = self.ctx.shared.get(key)
        if got is None:
            sources = {st.module: st.summary for st in self.ctx.checked}
            folder = os.path.join(self.ctx.file.root, top)
            for d, dirs, files in os.walk(folder):
                dirs[:] = sorted(x for x in dirs if x != "__pycache__")
                for name in sorted(files):
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(d, name)
                    data = self.m.reader.read_bytes(path)  # read once per run, with the tree scans
                    if data is None or b".register_model(" not in data:
                        continue
                    rel = os.path.relpath(path, self.ctx.file.root)[:-3].split(os.sep)
                    module = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
                    if module not in sources:
                        sources[module] = self.ctx.project.summary(module)
            got = self.r.registrations(sorted(sources.items(), key=lambda kv: kv[0]))
            self.ctx.shared[key] = got
        return got

    # -- the platform a plugin brings ---------------------------------------------------------
    def plugin_platforms(self) -> list:
        """The class keys of the platforms the checked plugin registers: a function of the
        checked file's top-level package returns, on every call (a ``return`` of its own body
        that no other ``return`` or ``raise`` precedes), the qualified name of a class of that package
        (vLLM's ``vllm.platform_plugins`` contract, vllm/platforms/__init__.py
        ``resolve_obj_by_qualname``; vllm-ascend's ``register`` returns
        ``"vllm_ascend.platform.NPUPlatform"``) whose MRO holds an engine's
        ``<engine>.platforms.interface.Platform``: vLLM then makes it the current platform
        wherever the plugin is installed (vllm/platforms/__init__.py: one activated out-of-tree
        platform plugin wins over the built-in ones).  ``[]`` for an engine's own files, or when
        none is found (its models may run on any platform, or on one only when a device is
        there)."""
        top = self.ctx.module.split(".", 1)[0]
        memo = self._memo.setdefault("platforms", {})
        if top in memo:
            return memo[top]
        memo[top] = found = []
        if top in F.ENGINES:
            return found
        for _module, tree, _lines in self.m.reader.package_trees(top, f'"{top}.'.encode(), f"'{top}.".encode()):
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                # returned on every call: vLLM activates a platform plugin whose function returns a
                # name, and one activated out-of-tree plugin is the current platform
                first = min((r.lineno for r in ast.walk(fn) if isinstance(r, (ast.Return, ast.Raise))), default=0)
                for ret in fn.body:
                    v = getattr(ret, "value", None) if isinstance(ret, ast.Return) and ret.lineno == first else None
                    if not (isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith(top + ".")):
                        continue
                    module, _, name = v.value.rpartition(".")
                    try:
                        key = self.r.resolve_class(module, name)
                        mro = self.r.mro(key) if key is not None else ()
                    except Exception:  # noqa: BLE001  (not a class of the analysed code)
                        continue
                    if any(e[1] == "Platform" and e[0].split(".", 1)[0] in F.ENGINES
                           and e[0].endswith(".platforms.interface") for e in mro) and key not in found:
                        found.append(key)
        return found

    def platform_refuses(self, flag: str) -> bool:
        """Whether every platform the checked plugin registers (:meth:`plugin_platforms`) makes
        the engine refuse the config flag ``flag`` outright: a function of the engine's parallel
        configuration module (:data:`~pp_attr_lint.facts.PARALLEL_CONFIG_MODULES`) raises on
        every path where ``flag`` holds once its tests of ``current_platform.<method>()`` are
        answered for that platform (:meth:`platform_answer`; a test that cannot be answered stays
        open, which only makes a refusal harder to show).  vLLM 0.21.0 to 0.33.0
        (vllm/config/parallel.py) and 0.10.0 (vllm/config.py) raise under ``enable_eplb`` when
        the platform is not CUDA-alike (nor XPU, 0.32.0+), so an ``OOT`` platform refuses EPLB.
        False when the plugin registers no platform or nothing shows the refusal."""
        plats = self.plugin_platforms()
        if not plats:
            return False
        return all(self._platform_refuses(key, flag) for key in plats)

    def _platform_refuses(self, key, flag: str) -> bool:
        memo = self._memo.setdefault("platform-refuses", {})
        if (key, flag) in memo:
            return memo[(key, flag)]
        memo[(key, flag)] = answer = False
        engine = next(e[0] for e in self.r.mro(key) if e[1] == "Platform" and e[0].endswith(".platforms.interface"))
        top = engine.split(".", 1)[0]
        from ..semantic.flow import ReturnWalker
        from ..semantic.guards import substitute

        for pattern in F.PARALLEL_CONFIG_MODULES:
            got = self.m.reader.module_parsed(pattern.replace("{top}", top))
            if got is None:
                continue
            tree, lines = got[2], got[3]
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or flag not in ast.unparse(fn):
                    continue
                w = ReturnWalker(lines, fn)
                w.walk()
                raises = [g for g in w.raises if flag in atoms(g, set())]
                if not raises:
                    continue
                # a raise under the flag is reached only past the earlier raises (its guard denies
                # theirs): those count too, when they add no test of their own
                named = atoms(f_or(*raises), set())
                raised = f_or(*raises, *(g for g in w.raises if atoms(g, set()) <= named))
                for atom in sorted(atoms(raised, set())):
                    head, _, call = atom.partition(".")
                    if head == "current_platform" and call.endswith("()") and call[:-2].isidentifier():
                        value = self.platform_answer(key, call[:-2])
                        if value is not None:
                            raised = substitute(raised, atom, ("T",) if value else ("F",))
                uncovered = f_and(("a", flag), f_not(raised))
                if len(atoms(uncovered, set()) - {"@first", "@last"}) <= 16 and satisfying(uncovered) is None:
                    answer = True
                    break
            break  # the first configuration module found decides
        memo[(key, flag)] = answer
        return answer

    def platform_answer(self, key, method: str) -> bool | None:
        """What ``method()`` (no arguments) of platform class ``key`` returns, when its first
        definition on the MRO returns a constant, or compares the class attribute ``_enum`` with
        ``PlatformEnum`` members (vllm/platforms/interface.py: ``is_cuda_alike`` returns ``self._enum
        in (PlatformEnum.CUDA, PlatformEnum.ROCM)``), and the first class on the MRO that binds
        ``_enum`` binds it to such a member; ``None`` when it cannot be told."""
        try:
            mro = self.r.mro(key)
        except Exception:  # noqa: BLE001
            return None
        classes = []
        for k in mro:
            if k == (EXTERNAL, "builtins.object"):
                continue
            node = self.m.reader.class_node(k) if k[0] != EXTERNAL else None
            if node is None:
                return None
            classes.append(node)
        enum = None
        for node in classes:
            bound = [st.value for st in node.body if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None
                     and any(isinstance(t, ast.Name) and t.id == "_enum"
                             for t in (st.targets if isinstance(st, ast.Assign) else [st.target]))]
            if bound:
                v = bound[-1]
                enum = v.attr if isinstance(v, ast.Attribute) and ast.unparse(v.value) == "PlatformEnum" else None
                break
        for node in classes:
            fns = [st for st in node.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == method]
            if not fns:
                continue
            body = [st for st in fns[-1].body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            if len(fns) > 1 or fns[-1].decorator_list or len(body) != 1 or not isinstance(body[0], ast.Return):
                return None
            v = body[0].value
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                return v.value
            if not (isinstance(v, ast.Compare) and len(v.ops) == 1 and ast.unparse(v.left) == "self._enum"
                    and enum is not None):
                return None
            right = v.comparators[0]
            members = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
            if not all(isinstance(m, ast.Attribute) and ast.unparse(m.value) == "PlatformEnum" for m in members):
                return None
            names = {m.attr for m in members}
            op = type(v.ops[0])
            if op in (ast.In, ast.Eq):
                return enum in names
            if op in (ast.NotIn, ast.NotEq):
                return enum not in names
            return None
        return None

# the bytes of `all(a in NAME for ...)` / `any(a not in NAME for ...)`: a file without them holds
# no list refusal (:meth:`VllmEngine.pp_architectures`) and is not parsed for one
_MEMBERSHIP_BYTES = re.compile(rb"\b(?:all|any)\(\s*\(?\s*\w+\s+(?:not\s+)?in\s+\w+\s+for\b")


def _string_lists(tree) -> dict:
    """``{name: frozenset of strings}`` of the module-level names of ``tree`` bound once (in the
    module's own body) to a list, tuple or set display of string constants, or ``set(...)`` /
    ``frozenset(...)`` of one."""
    out: dict = {}
    seen: dict = {}
    for st in tree.body:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(
            st, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name):
                seen[t.id] = seen.get(t.id, 0) + 1
                value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                        and value.func.id in ("set", "frozenset") and len(value.args) == 1 and not value.keywords:
                    value = value.args[0]
                if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and value.elts and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                    out[t.id] = frozenset(e.value for e in value.elts)
    return {k: v for k, v in out.items() if seen[k] == 1}


def _membership_test(atom: str, lists: dict) -> tuple | None:
    """``(name, refused when true)`` for an atom's text ``all(a in NAME for a in xs)`` (``False``:
    refused where it is false) or ``any(a not in NAME for a in xs)`` (``True``), ``NAME`` one of
    ``lists``; else ``None``."""
    try:
        node = ast.parse(atom, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("all", "any")
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.GeneratorExp)):
        return None
    gen = node.args[0]
    elt = gen.elt
    if not (len(gen.generators) == 1 and not gen.generators[0].ifs and isinstance(gen.generators[0].target, ast.Name)
            and isinstance(elt, ast.Compare) and len(elt.ops) == 1 and isinstance(elt.left, ast.Name)
            and elt.left.id == gen.generators[0].target.id and isinstance(elt.comparators[0], ast.Name)
            and elt.comparators[0].id in lists):
        return None
    if node.func.id == "all" and isinstance(elt.ops[0], ast.In):
        return elt.comparators[0].id, False
    if node.func.id == "any" and isinstance(elt.ops[0], ast.NotIn):
        return elt.comparators[0].id, True
    return None


def _raise_without_ids(tree) -> int | None:
    """The line of the first ``raise`` that ends the block of an ``if`` whose test holds a
    comparison ``input_ids is None`` (see :meth:`VllmEngine.raw_token_models`); ``None`` when
    there is none."""
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and n.body and isinstance(n.body[-1], ast.Raise) and any(
                isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and c.left.id == "input_ids"
                and isinstance(c.ops[0], ast.Is) and isinstance(c.comparators[0], ast.Constant)
                and c.comparators[0].value is None for c in ast.walk(n.test)):
            return n.body[-1].lineno
    return None


def _factory_calls(tree, mod: str, factory, suffixes: tuple, keywords: set) -> list:
    """``[(mod, architecture names)]`` of each call in ``tree`` of a registry factory (a name that
    ends with one of ``suffixes`` and matches ``factory``) with one of ``keywords``: the string
    literals of that argument, and of the values assigned in the file to the names and
    attributes it reads (see :meth:`VllmEngine._hosts`)."""
    values: dict = {}  # name -> the values assigned to it (their strings read on demand)
    found = []
    for node in fast_walk(tree):  # one walk: the factory calls and the assignments
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = last_name(t)
                if name and node.value is not None:
                    values.setdefault(name, []).append(node.value)
        elif isinstance(node, ast.Call):
            fname = last_name(node.func)
            if fname and fname.endswith(suffixes) and factory.match(fname):
                found.append(node)
    calls = []
    for node in found:
        for kw in node.keywords:
            if kw.arg in keywords:
                names = set(_strings(kw.value))
                for sub in ast.walk(kw.value):
                    if isinstance(sub, (ast.Name, ast.Attribute)):
                        for v in values.get(last_name(sub), ()):
                            names.update(_strings(v))
                calls.append((mod, names))
    return calls


def _could_spell(names) -> callable:
    """A test ``(data, openings) -> bool`` of a file's bytes ``data`` (and :func:`_openings` of
    them) that is false only when no ``str`` constant of the file can equal one of ``names``:
    such a constant is written either whole (the name's bytes are in the file) or in pieces: a
    string (or an f-string part, after ``}`` or ``:``) that opens with a prefix of the name
    ending at a quote (``"Qwen2" "ForCausalLM"``) or at a backslash escape that can spell a
    character of it (``x``, ``u``, ``U``, ``N`` or an octal digit after the backslash) or
    continue the line, or that opens with such an escape.  A name that is not ASCII letters,
    digits and ``_`` can be in any file (the test is true)."""
    if not all(re.fullmatch(r"[A-Za-z0-9_]+", n) for n in names):
        return lambda data, openings: True
    whole = [n.encode() for n in sorted(names)]

    def test(data: bytes, openings: tuple) -> bool:
        escaped, at = openings
        if escaped or any(w in data for w in whole):
            return True
        for w in whole:
            for j in at.get(w[0], ()):
                # the longest prefix of the name written from here, then what ends it
                k = 1
                while k < len(w) and j + k < len(data) and data[j + k] == w[k]:
                    k += 1
                end = data[j + k:j + k + 2]
                if end[:1] in (b"'", b'"') or (end[:1] == b"\\" and end[1:] and end[1:] in _SPELLING_ESCAPES):
                    return True
        return False

    return test


def _openings(data: bytes) -> tuple:
    """``(whether a string or f-string part of data opens with an escape that can spell a letter,
    a digit or _, or with a line continuation; {first byte: [its offsets]} of those that open
    with one written plainly)``, for :func:`_could_spell` (every quote, ``}`` and ``:`` is taken
    for an opening: more than there are, never fewer)."""
    at: dict = {}
    for m in _OPENS_WORD.finditer(data):
        at.setdefault(data[m.end() - 1], []).append(m.end() - 1)
    return (_ESCAPE_OPENS.search(data) is not None, at)


_SPELLING_ESCAPES = b"xuUN01234567\r\n"
_ESCAPE_OPENS = re.compile(rb"['\"}:]\\[xuUN0-7\r\n]")
_OPENS_WORD = re.compile(rb"['\"}:][A-Za-z0-9_]")


def _strings(node) -> list:
    """The string literals inside expression ``node``."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]

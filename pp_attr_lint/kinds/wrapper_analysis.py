"""The analysis of the ``wrapper-attribute`` rule kind (PPA001, PPA002 and YAML rules of a
project, see :mod:`pp_attr_lint.kinds.wrapper`): a read of an attribute on a wrapper that does not have
it, while the inner module it holds does.

A finding is made only when the receiver's candidate classes are all resolved, none of them can
have the attribute, and all of them reach a class that sets it in its executed ``__init__`` through
the same submodule path.
"""

from __future__ import annotations

from ..facts import RANGE_ATTRIBUTES
from ..index.summary import scopes_by_line
from ..model import Edit, Finding, Fix, NotJudged
from ..resolve import EXTERNAL, NONE_KEY, ClassKey, Resolver, Unresolved, Where
from ..textio import display_path
from ..workspace.project import FileState, Project


# a layer range is two ints (``make_layers`` returns them with the list): never a submodule to look in
_NOT_SUBMODULES = frozenset(RANGE_ATTRIBUTES)


def _where(w: Where) -> str:
    return f"{display_path(w.path) if w.path else w.module}:{w.line}"


class RuleRunner:
    """Evaluates one rule on the watched reads of a file (see the module docstring)."""

    def __init__(self, rule, project: Project, stores: list | None, resolver: Resolver):
        """``stores``: ``(file state, receiver chain, attr, class, function line)`` of every
        ``x.attr = ...`` outside its own class in the checked files (see pp_attr_lint.index.summary)."""
        self.rule = rule
        self.project = project
        self.resolver = resolver
        self.stores = [s for s in (stores or []) if s[2] == "*" or s[2] in rule.attributes]
        self._store_memo: dict = {}
        self._self_stores: dict = {}
        self._paths_memo: dict = {}
        self._path_why: dict = {}  # (class, attr) -> why the first submodule that could not be resolved failed

    def _paths(self, key: ClassKey, attr: str) -> dict[tuple[str, ...], list]:
        """Submodule paths from a wrapper to classes that really set the attribute (memoized)."""
        mkey = (key, attr)
        if mkey not in self._paths_memo:
            self._paths_memo[mkey] = self._find_paths(key, attr)
        return self._paths_memo[mkey]

    def _find_paths(self, key: ClassKey, attr: str) -> dict[tuple[str, ...], list]:
        r = self.resolver
        out: dict[tuple[str, ...], list] = {}
        frontier: list[tuple[tuple[str, ...], ClassKey, list]] = [((), key, [])]
        for _depth in range(self.rule.max_path_depth):
            nxt = []
            for path, ck, trail in frontier:
                for step in sorted(self._assigned_attrs(ck) - _NOT_SUBMODULES):
                    got = r.attr_candidates(ck, step)
                    if got is None:
                        if r.why is not None:
                            # said of the rule's own attribute: the step is only where the search stopped
                            self._path_why.setdefault((key, attr), (
                                r.why[0], f"`{key[1]}` has no `{attr}`, and whether its submodule `{ck[1]}.{step}` "
                                f"holds one cannot be told: {r.why[1]}", r.why[2]))
                        continue
                    cands, wheres = got
                    real = sorted(cands - {NONE_KEY})  # a step that may be None: no fix through it
                    defs = [r.definition(c, attr) for c in real]
                    new_trail = trail + [(ck, step, sorted(cands), wheres)]
                    if all(d is not None for d in defs):
                        out[path + (step,)] = new_trail + [("def", real, defs)]
                    elif len(real) == 1:
                        nxt.append((path + (step,), real[0], new_trail))
            if out:
                break
            frontier = nxt
        return out

    def _assigned_attrs(self, key: ClassKey) -> set[str]:
        names: set[str] = set()
        for entry in self.resolver.mro(key):
            if entry[0] == EXTERNAL:
                continue
            rec = self.resolver.class_record(entry)
            names.update(rec["annotations"])
            for scope in rec["methods"].values():
                names.update(scope["assigns"])
        return names

    def evaluate(self, st: FileState, read: dict, scopes: dict) -> Finding | NotJudged | None:
        """Judge one watched read of ``st``: a :class:`Finding`, ``None`` when it is proved fine
        (or is not this rule's pattern: ``self.start_layer``, a guarded read, an attribute that
        may be set), or a :class:`NotJudged` record with the reason it could be neither
        (see :mod:`pp_attr_lint.unjudged`)."""
        def unjudged(reason: str, detail: str, path: str | None = None) -> NotJudged:
            return NotJudged(code=self.rule.code, reason=reason, detail=detail, path=st.path,
                             row=read["line"], column=read["col"] + 1, dep_path=path)

        chain = read["chain"]
        cls = read["class"]
        scope = scopes.get((cls, read["function"]))
        if any(g == "*" or g in self.rule.attributes for g in read.get("guards", ())):
            return None  # under `hasattr(receiver, "start_layer")` or `except AttributeError`: cannot raise
        if not chain:
            return unjudged("receiver-unresolved", "the receiver is an expression, not a name or attribute chain")
        if (scope is not None or read["function"] is None) and self._names_module(st, chain, cls, scope):
            return None  # `vllm.model_executor.layers`: an attribute of a module, not of a model
        if scope is None:
            if read["function"] is None and len(chain) >= 1:
                return unjudged(*self._module_level_why(st, chain))
            return unjudged("receiver-unresolved", "the enclosing function is not understood")
        if len(chain) == 1 and chain[0] == scope.get("self"):
            return None  # `self.start_layer`: the enclosing class is what it is
        r = self.resolver
        clskey = (st.module, cls) if cls else None
        r.why = None
        try:
            got = r.chain_candidates(tuple(chain), st.module, clskey, scope)
            if got is None:
                return unjudged(*(r.why or ("receiver-unresolved", f"`{'.'.join(chain)}` cannot be resolved", None)))
            cands = got - {NONE_KEY}  # on None the read raises whatever the fix: judge the rest
            if not cands:
                return unjudged("receiver-unresolved", f"`{'.'.join(chain)}` is only ever None")
            for k in sorted(cands):
                try:
                    status = r.attribute_status(k, read["attr"])
                except Unresolved:
                    if self._declares(k, read["attr"]):
                        return None  # the class itself sets or declares it: whatever its bases do
                    raise
                if status == "unknown":
                    return unjudged(*(r.why or ("dynamic-class", f"{k[1]} may get `{read['attr']}` dynamically", None)))
                if status != "absent":
                    return None
            if self._stored_from_outside(read["attr"], cands, st.module, cls, read["chain"]):
                return None
            common: dict[tuple[str, ...], dict] | None = None
            for k in sorted(cands):
                paths = self._paths(k, read["attr"])
                per = {p: {k: t} for p, t in paths.items()}
                if common is None:
                    common = per
                else:
                    common = {p: {**common[p], **per[p]} for p in common if p in per}
                if not common:
                    # the attribute is absent; when a submodule's class could not be told, the
                    # inner model may be among them: not judged, else not this rule's pattern
                    why = self._path_why.get((k, read["attr"])) if not paths else None
                    return unjudged(*why) if why else None
        except Unresolved as e:
            return unjudged(e.reason, e.detail, e.path)
        assert common
        try:
            if self._stored_in_imports(read["attr"], cands, st.module):
                return None
        except Unresolved as e:
            return unjudged(e.reason, e.detail, e.path)
        return self._finding(st, read, sorted(cands), common)

    def _names_module(self, st: FileState, chain: list, cls: str | None, scope: dict | None) -> bool:
        """Whether the receiver ``chain`` of a read in ``st`` (in function ``scope``; at module or
        class level when ``None``, in class ``cls`` or none) names a module or package: its first
        name is bound by an import of a module (``import a.b``, ``import a.b as c``, at module level
        or in the function, or ``from a import b`` at module level where ``a.b`` is a module of the
        tree, ``--src`` or the environment), and each further name is a submodule there (one the
        package binds to anything else is not); or, where a package on the way is not found, the
        chain is ``a.b`` itself or a package on the way to it, of that ``import a.b...`` statement's
        path (Python imports each package of it).  A name that something else may bind (a
        parameter, another local, the class body, a star import, a second module-level binding) is
        no module (``import a.x`` and ``import a.y`` both bind ``a`` to package ``a``: that is one)."""
        head = chain[0]
        summary = st.summary
        r = self.resolver
        if scope is not None and (head in scope["params"] or head == scope.get("self")):
            return False
        with r.keeping_why():
            if scope is not None and head in scope["locals"]:
                descs = scope["locals"][head]
                if any(d[:2] != ("unknown", "import") or len(d) < 4 for d in descs) or len({d[2] for d in descs}) != 1:
                    return False
                root: tuple | None = ("module", descs[0][2]) if r.src.summary(descs[0][2]) is not None \
                    else ("external", descs[0][2])
                return self._module_path(root, chain, [d[3] for d in descs])
            crec = summary["classes"].get(cls) if cls else None
            imp = summary["imports"].get(head)
            if imp is None or (scope is None and crec is not None and head in crec["body_names"]):
                return False
            if head in summary.get("plain_imports", ()) and imp == (head, None, 0):
                root = ("module", head) if r.src.summary(head) is not None else ("external", head)
            else:
                root = r.lookup(st.module, head)
            if root is not None and root[0] == "external" and imp[1] is not None:
                return False  # `from a import b` of a package not found: `b` may be any object
            return self._module_path(root, chain, summary.get("import_paths", ()))

    def _module_level_why(self, st: FileState, chain: list) -> tuple[str, str]:
        """``(reason, detail)`` of a read at module or class level that is not judged: when its
        first name is imported from a module the run does not find (``from scipy import stats``
        without scipy), ``module-not-found`` naming it (with it, :meth:`_names_module` can tell)."""
        r = self.resolver
        with r.keeping_why():
            sym = r.lookup(st.module, chain[0]) if chain[0] in st.summary["imports"] else None
        if sym is not None and sym[0] == "external":
            dotted = ".".join(chain)
            what = f"module `{sym[1]}`" if sym[1] == chain[0] else f"`{chain[0]}` (`{sym[1]}`)"
            return ("module-not-found", f"`{dotted}` is read at module or class level, and {what} is not found: "
                    f"whether `{dotted}` is a module or an object cannot be told")
        return ("receiver-unresolved", "a read at module or class level")

    def _module_path(self, sym: tuple | None, chain: list, paths) -> bool:
        """The walk of :meth:`_names_module` from ``sym`` (what ``chain[0]`` is: a ``lookup`` result
        of the resolver), ``paths`` the dotted paths of the ``import`` statements that may say that
        a package not found is one.  It may leave the resolver's ``why`` changed."""
        r = self.resolver
        if sym is None or sym[0] not in ("module", "external"):
            return False
        mod = sym[1]
        for i, part in enumerate(chain[1:], 1):
            if sym[0] == "external" or r.src.summary(mod) is None:
                mod = ".".join([mod, *chain[i:]])
                break
            got = r.lookup(mod, part)
            if got is None and r.src.summary(f"{mod}.{part}") is not None:
                got = ("module", f"{mod}.{part}")
            if got is None or got[0] != "module":
                return False
            sym, mod = got, got[1]
        else:
            if sym[0] == "module":
                return True
        # a package not found: the path of an `import` statement says what it is
        return any(p == mod or p.startswith(mod + ".") for p in paths)

    def _declares(self, key: ClassKey, attr: str) -> bool:
        """Whether ``key``'s own class body or one of its methods sets or declares ``attr`` (a
        ``msgspec.Struct`` or dataclass field, ``self.attr = ...``): then reading it cannot be
        this rule's bug, even when a base class is unknown."""
        try:
            rec = self.resolver.class_record(key)
        except Unresolved:
            return False
        return (attr in rec["body_names"] or attr in rec["properties"] or attr in rec["annotations"]
                or any(attr in scope["assigns"] for scope in rec["methods"].values()))

    def _stored_from_outside(self, attr: str, cands: set, module: str, cls: str | None, chain) -> bool:
        """Whether a checked file puts ``attr`` on a candidate from outside its class:
        ``self.lm.start_layer = ...``, ``setattr(lm, "start_layer", v)``, ``Wrapper.start_layer = 0``
        (which also reaches subclasses).  A store whose receiver cannot be resolved counts too
        (precision over recall), but only in the reading file's own module and in the modules it
        imports (read whether or not they are checked): a store in another file counts where it
        resolves to a candidate, so that an unresolved store in an unrelated file (a test's
        ``model.embed_tokens = ...``) does not make a file's verdict depend on whether that file
        is checked beside it."""
        key = (attr, frozenset(cands))
        if key not in self._store_memo:
            self._self_stores[key] = set()
            self._store_memo[key] = self._scan_stores(attr, cands, self._self_stores[key])
        hit, unresolved_in = self._store_memo[key]
        return hit or module in unresolved_in or (module, cls, tuple(chain)) in self._self_stores[key]

    def _stored_in_imports(self, attr: str, cands: set, module: str) -> bool:
        """Whether a module that ``module`` imports stores ``attr`` where it cannot be resolved or
        onto a candidate (asked only of a read about to be reported: it reads those modules)."""
        unresolved_in = self._store_memo[(attr, frozenset(cands))][1]
        return any(m in unresolved_in or self._module_stores(m, attr, cands) for m in self._imported(module))

    def _imported(self, module: str) -> list[str]:
        """The project modules whose names ``module`` imports (``from .patch import patch``)."""
        memo = self._store_memo.setdefault(("imported",), {})
        if module not in memo:
            s = self.project.summary(module) or {}
            found = set()
            imports = list(s.get("imports", {}).values())
            scopes = list(s.get("functions", {}).values()) + [m for c in s.get("classes", {}).values()
                                                              for m in c["methods"].values()]
            for scope in scopes:  # `from .patch import patch` inside a function
                imports += [d[1:] for ds in scope.get("locals", {}).values() for d in ds if d[0] == "import"]
            for target, attr, level in imports:
                absm = self._absolute(module, target, level)
                for m in (absm, f"{absm}.{attr}" if absm and attr else None):
                    if m and m != module and self.project.exists(m):
                        found.add(m)
            memo[module] = sorted(found)
        return memo[module]

    def _absolute(self, module: str, target: str, level: int) -> str | None:
        """The module ``from {'.' * level}{target} import ...`` names in ``module``."""
        if level == 0:
            return target or None
        parts = module.split(".") if self.project.is_package(module) else module.split(".")[:-1]
        if level - 1 > len(parts):
            return None
        parts = parts[:len(parts) - (level - 1)]
        return ".".join(parts + ([target] if target else [])) or None

    def _module_stores(self, module: str, attr: str, cands: set) -> bool:
        """Whether ``module`` (checked or not) has a store of ``attr`` that cannot be resolved or
        that resolves onto a candidate (not through its own ``self``)."""
        memo = self._store_memo.setdefault(("module-stores",), {})
        key = (module, attr, frozenset(cands))
        if key not in memo and not self.project.may_mention(module, (attr.encode(), b"setattr")):
            memo[key] = False  # a store of `attr` names it, or is a `setattr` call
        if key not in memo:
            s = self.project.summary(module) or {}
            memo[key] = any(self._store_verdict(module, s, *st, attr=attr, cands=cands) in ("hit", "unresolved")
                            for st in s.get("stores", ()))
        return memo[key]

    def _scan_stores(self, attr: str, cands: set, self_stores: set) -> tuple[bool, set[str]]:
        """``(a store resolved onto a candidate, the modules holding a store that cannot be
        resolved)``; ``self_stores`` gets the ``self.x.attr = ...`` stores onto a candidate."""
        unresolved: set[str] = set()
        for st, chain, stored, cls, fline in self.stores:
            got = self._store_verdict(st.module, st.summary, chain, stored, cls, fline, attr=attr, cands=cands)
            if got == "hit":
                return True, unresolved
            if got == "unresolved":
                unresolved.add(st.module)
            elif got == "self":
                self_stores.add((st.module, cls, tuple(chain)))
        return False, unresolved

    def _store_verdict(self, module: str, summary: dict, chain, stored, cls, fline, *, attr: str, cands: set):
        """One store of ``module``: ``"hit"`` (onto a candidate, any instance), ``"self"``
        (``self.lm.attr = ...`` onto a candidate: that one object), ``"unresolved"`` or ``None``."""
        if stored not in (attr, "*"):
            return None
        r = self.resolver
        # `setattr(obj, name, v)` with a computed name counts only where obj resolves to a
        # candidate: such generic setters (config objects, module surgery) are everywhere
        computed = stored == "*"
        if chain is None:
            return None if computed else "unresolved"
        if fline is None:  # module level: a class object, or something we cannot follow
            sym = r.resolve_dotted(module, ".".join(chain))
            if sym is None or sym[0] != "class":
                return None if computed else "unresolved"
            try:
                return "hit" if any((sym[1], sym[2]) in r.mro(c) for c in cands) else None
            except Unresolved:
                return "unresolved"
        scope = scopes_by_line(summary).get((cls, fline))
        got = None if scope is None else r.chain_candidates(tuple(chain), module, (module, cls) if cls else None, scope)
        if got is None:
            return None if computed else "unresolved"
        if got & set(cands):
            # `self.lm.start_layer = ...` sets it on that one object: it counts for reads of the
            # same receiver in the same class only; through a parameter or a local, any instance
            return "self" if chain[0] == scope.get("self") else "hit"
        return None

    def _finding(self, st: FileState, read: dict, cands: list[ClassKey], common: dict) -> Finding:
        rule, attr = self.rule, read["attr"]
        best_len = min(len(p) for p in common)
        best = sorted(p for p in common if len(p) == best_len)
        path = best[0]
        receiver = ".".join(read["chain"])
        trails = common[path]
        inner_keys: list[ClassKey] = []
        defs: list[Where] = []
        for k in cands:
            last = trails[k][-1]
            for ck, d in zip(last[1], last[2]):
                if ck not in inner_keys:
                    inner_keys.append(ck)
                    defs.append(d)
        wrapper = " | ".join(k[1] for k in cands)
        inner = " | ".join(k[1] for k in inner_keys)
        where = ", ".join(dict.fromkeys(_where(d) for d in defs))
        dotted = ".".join(path)
        if read["kind"] == "getattr":
            fixed = f'getattr({receiver}.{dotted}, "{attr}")'
        else:
            fixed = f"{receiver}.{dotted}.{attr}"
        owner = self._property_owner(st, read)
        fields = dict(receiver=receiver, wrapper=wrapper, attr=attr, inner=inner, path=dotted, where=where, fixed=fixed)
        if owner and rule.property_message:
            message = rule.property_message.format(owner=owner, **fields)
        else:
            message = rule.message.format(**fields)
        explanation = self._explain(receiver, cands, attr, path, trails, defs)
        witness = {"ranks": "every rank the line runs on (often only pipeline-parallel ranks > 0)", "config": {}}
        if owner:
            # an AttributeError raised in a property getter reads as the attribute being absent
            # (Python's getattr with a default and hasattr catch it)
            explanation.append(f"`{owner}.{attr}` is a property that returns this read: it raises AttributeError, "
                               f"so `hasattr(x, \"{attr}\")` is False and `getattr(x, \"{attr}\", default)` "
                               f"gives the default on every `{owner}`")
            witness = {"ranks": "every rank that reads the property", "config": {}}
        fix = None
        help = f"Read `{fixed}`"
        maybe_none = [(ck, step) for k in cands for ck, step, step_cands, _ in trails[k][:-1] if NONE_KEY in step_cands]
        if maybe_none:
            ck, step = maybe_none[0]
            explanation.append(f"no fix: `{ck[1]}.{step}` may be None, and a read through it would raise on None")
            help = f"Read `{fixed}` where `{ck[1]}.{step}` is not None"
        elif rule.fix_applicability and len(best) == 1:
            edit = Edit(content="." + dotted, row=read["recv_end_line"], column=read["recv_end_col"] + 1,
                        end_row=read["recv_end_line"], end_column=read["recv_end_col"] + 1)
            fix = Fix(applicability=rule.fix_applicability,
                      message=(rule.fix_message or "Read `{fixed}`").format(fixed=fixed, path=dotted, attr=attr),
                      edits=(edit,))
        elif len(best) > 1:
            explanation.append("no fix: several submodule paths lead to the attribute: "
                               + ", ".join("." + ".".join(p) for p in best))
            help = ("Read it through the submodule that holds it: "
                    + " or ".join(f"`{receiver}.{'.'.join(p)}.{attr}`" for p in best))
        return Finding(
            code=rule.code, name=rule.name, message=message, path=st.path,
            row=read["line"], column=read["col"] + 1, end_row=read["end_line"], end_column=read["end_col"] + 1,
            fix=fix, url=rule.url, noqa_row=read["line"], explanation=explanation, help=help,
            fix_data={"chain": list(read["chain"]), "path": list(path), "attr": attr, "kind": read["kind"]},
            witness=witness,
        )

    def _property_owner(self, st: FileState, read: dict) -> str | None:
        """The class of ``read`` when the read is in a property getter of the attribute's own
        name (``@property def start_layer(self): return self.model.start_layer``), else ``None``."""
        cls, attr = read["class"], read["attr"]
        rec = st.summary["classes"].get(cls) if cls else None
        if rec is None or attr not in rec.get("properties", ()):
            return None
        scope = rec["methods"].get(attr)  # the getter (a setter of the same name replaces it)
        return cls if scope is not None and scope["line"] == read["function"] else None

    def _explain(self, receiver, cands, attr, path, trails, defs) -> list[str]:
        r = self.resolver
        lines = []
        for k in cands:
            rec = r.class_record(k)
            mro = " -> ".join(e[1] if e[0] != EXTERNAL else ".".join(e[1].split(".")[-2:]) for e in r.mro(k))
            lines.append(f"`{receiver}` is a `{k[1]}` ({_where(Where(k[0], r.src.path(k[0]), rec['line'], ''))}); MRO: {mro}")
            inits = r.executed_inits(k)
            ran = ", ".join(f"{owner[1]}.__init__" for owner, _ in inits) or "no project __init__"
            lines.append(f"`{k[1]}()` runs {ran}; none of them sets `{attr}`, and no class on its MRO declares it")
            for ck, step, step_cands, wheres in trails[k][:-1]:
                at = ", ".join(dict.fromkeys(_where(w) for w in wheres))
                lines.append(f"`{ck[1]}.{step}` is a `{' | '.join(c[1] for c in step_cands)}` (set at {at})")
        for d, ck in zip(defs, [c for k in cands for c in trails[k][-1][1]]):
            lines.append(f"`{ck[1]}` sets `{attr}` in {d.what} at {_where(d)}")
        return lines

"""PPA301 attribute-of-skipped-init: an ``__init__`` that skips a base ``__init__``
(``nn.Module.__init__(self)``, ``super(Parent, self).__init__()``, or no call at all) leaves
the attributes only that base sets missing, and an inherited method or a caller reads one of them
(see README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk
from pp_attr_lint.textio import display_path, read_source
from pp_attr_lint.unjudged import MISSING_CODE


# characters str.splitlines() breaks at and Python's tokenizer does not
_OTHER_LINE_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class SkippedInitAttribute(Rule):
    # the files that read `x.end_layer` on another object too (what :meth:`_judge_callers` judges)
    wants_attribute_reads = True

    def prefilter(self, data: bytes) -> bool:
        """An explicit base ``__init__`` call that may skip a base
        (:func:`pp_attr_lint.kinds.skipped_init.may_skip_base_init`; imported here: a warm run
        loads the rules but no analysis code)."""
        from pp_attr_lint.kinds.skipped_init import may_skip_base_init

        return may_skip_base_init(data)

    def prefetch(self, module, summary, resolver):
        """The MRO of the classes :meth:`check` judges."""
        from pp_attr_lint.resolve import Unresolved

        for cname, rec in summary["classes"].items():
            if _judged(cname, rec):
                try:
                    resolver.mro((module, cname))
                except Unresolved:
                    pass

    def check(self, ctx):
        out = []
        unresolved = ctx.shared.setdefault(("PPA301", "unresolved"), {})
        for cname, rec in ctx.summary["classes"].items():
            if not _judged(cname, rec):
                continue
            init = rec["methods"]["__init__"]
            key = (ctx.module, cname)
            f = self._judge_class(ctx, key, rec, init)
            if f is not None:
                out.append(f)
            elif key in unresolved and unresolved[key].reason in MISSING_CODE:
                # the MRO leads into code the run does not have (a renamed copy whose absolute
                # imports name the original package, a plugin without vLLM): which base
                # `__init__` the explicit call skips cannot be told, and that is said
                from pp_attr_lint.model import NotJudged

                e = unresolved[key]
                out.append(NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=rec["line"], column=1,
                                     detail=f"`{cname}.__init__` "
                                            f"{_how(init).removesuffix(', which').removesuffix(' and so')}: {e.detail}",
                                     dep_path=e.path))
        out.extend(self._judge_callers(ctx))
        return out

    # -- the class that skips ------------------------------------------------------------------
    def skipped(self, ctx, key):
        """``[(base, its __init__ scope, attributes it sets that no executed code sets)]``."""
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        r = ctx.resolver
        memo = ctx.shared.setdefault(("PPA301", "skipped"), {})
        if key in memo:
            return memo[key]
        memo[key] = []
        try:
            r.check_resolved(key)
            mro = r.mro(key)
            inits = r.executed_inits(key)
        except Unresolved as e:
            ctx.shared.setdefault(("PPA301", "unresolved"), {})[key] = e
            return []
        executed = {id(s) for _, s in inits}
        if any(s.get("passes_self") for _, s in inits):
            return []
        out = []
        for entry in mro[1:]:
            if entry[0] == EXTERNAL:
                continue
            scope = r.class_record(entry)["methods"].get("__init__")
            if scope is None or id(scope) in executed:
                continue
            missing = []
            for attr in sorted(scope["assigns"]):
                if attr in F.SET_BY_ENGINE:
                    continue
                try:
                    if r.attribute_status(key, attr) == "absent":
                        missing.append(attr)
                except Unresolved:
                    return []
            if missing:
                out.append((entry, scope, missing))
        memo[key] = out
        return out

    def _judge_class(self, ctx, key, rec, init):
        skipped = self.skipped(ctx, key)
        if not skipped:
            return None
        r = ctx.resolver
        mro = r.mro(key)
        reads = []
        for base, _scope, missing in skipped:
            for attr in missing:
                got = self._inherited_read(ctx, key, mro, attr)
                if got is not None:
                    reads.append((base, attr, got))
        if not reads:
            return None
        base, attr, (owner, method, path, line) = reads[0]
        how = _how(init)
        message = (f"`{key[1]}.__init__` {how} skips `{base[1]}.__init__`, the only code that sets `{attr}`; "
                   f"`{owner[1]}.{method}` reads `self.{attr}` ({display_path(path)}:{line}) on `{key[1]}` instances: "
                   f"AttributeError.")
        explanation = [f"MRO: {' -> '.join(e[1] for e in mro)}",
                       f"executed: {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(key))}"]
        explanation += [f"`{a}` is set only in skipped `{b[1]}.__init__` and read by `{o[1]}.{m}` "
                        f"({display_path(p)}:{ln})" for b, a, (o, m, p, ln) in reads]
        help = (f"Call `{base[1]}.__init__` (or `super().__init__(...)`), or set "
                + ", ".join(f"`self.{a}`" for a in dict.fromkeys(a for _, a, _ in reads))
                + f" in `{key[1]}.__init__`")
        line = init["line"]
        return self.finding(ctx, line, 0, line, 0, message, explanation, help=help,
                            witness={"ranks": "every rank (pipeline parallelism not needed)", "config": {}})

    def _inherited_read(self, ctx, key, mro, attr):
        """The first method that ``key`` really runs (no class before its owner on the MRO
        defines it) and that reads ``self.attr``, itself or through the ``self.helper()`` calls
        it makes on every run (each helper the one ``key`` runs, to 4 calls deep):
        ``(owner, method, path, line)``; ``method`` names the helpers too
        (``load_weights` -> `_load_experts``)."""
        from pp_attr_lint.resolve import EXTERNAL
        r = ctx.resolver
        seen: set[str] = set()
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            crec = r.class_record(entry)
            for mname in crec["methods"]:
                if mname in seen or mname not in F.ENGINE_METHODS:
                    continue  # only methods the engine is known to call on every model
                seen.add(mname)
                got = self._read_through(ctx, mro, entry, mname, attr, [mname], set())
                if got is not None:
                    owner, path_names, path, line = got
                    return (entry, "` -> `".join(path_names) if len(path_names) > 1 else mname, path, line)
            seen.update(crec["body_names"])
        return None

    def _read_through(self, ctx, mro, entry, mname, attr, names, visited):
        """Where method ``mname`` of class ``entry`` (run on an instance whose MRO is ``mro``)
        reads ``self.attr`` on every run, itself or through its helpers: ``(owner, names, path,
        line)`` or ``None``."""
        r = ctx.resolver
        if (entry, mname) in visited or len(names) > 5:
            return None
        visited.add((entry, mname))
        reads, helpers = self._self_reads(ctx, entry).get(mname, ({}, ()))
        line = reads.get(attr)
        if line is not None:
            return (entry, names, r.src.path(entry[0]), line)
        for helper in helpers:
            owner = _runs(r, mro, helper)
            if owner is None:
                continue
            got = self._read_through(ctx, mro, owner, helper, attr, names + [helper], visited)
            if got is not None:
                return got
        return None

    def _self_reads(self, ctx, key) -> dict:
        """``{method: {attr: first line}}`` of ``self.attr`` loads in class ``key``'s methods
        (parsed once per run, only for classes whose subclasses skip an ``__init__``: the class's own
        lines when it is a top-level class, else its whole module)."""
        memo = ctx.shared.setdefault(("PPA301", "reads"), {})
        if key in memo:
            return memo[key]
        memo[key] = {}
        import ast

        from pp_attr_lint.semantic.flow import FunctionGuards

        path = ctx.resolver.src.path(key[0])
        rec = ctx.resolver.class_record(key)
        try:
            text = read_source(path).text
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return {}
        tree = None
        if rec.get("col") == 0 and rec.get("end_line") and not any(c in text for c in _OTHER_LINE_BREAKS):
            # a top-level class: only its own lines are parsed, not the whole module (blank lines
            # before it keep the line numbers); the whole module when that does not give the class
            lines = text.splitlines(keepends=True)
            try:
                tree = ast.parse("\n" * (rec["line"] - 1) + "".join(lines[rec["line"] - 1:rec["end_line"]]))
            except (SyntaxError, ValueError):
                tree = None
            if tree is None or len(tree.body) != 1 or getattr(tree.body[0], "name", None) != key[1] \
                    or tree.body[0].lineno != rec["line"]:
                tree = None
        if tree is None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, TypeError):
                return {}
        parts = key[1].split(".")
        body = tree.body
        node = None
        for part in parts:
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return {}
            body = node.body
        out: dict = {}
        for fn in body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            if any(isinstance(sub, ast.Name) and sub.id == me and not isinstance(sub.ctx, ast.Load)
                   for sub in _fast_walk(fn)):
                out[fn.name] = ({}, ())  # `self` rebound: not the instance throughout
                continue
            found: dict = {}
            helpers: list = []
            nested = _nested_helpers(fn, me)
            todo, done = [fn], set()
            while todo:  # the method, then the nested functions it surely calls (closing over `self`)
                f0 = todo.pop()
                done.add(id(f0))
                # what runs on every call (on some rank): not under a test of an argument or of
                # the configuration (SGLang's `forward(..., get_embedding=False)` reads
                # `self.pooler` only when asked for embeddings), nor in a loop body or a handler
                guards = FunctionGuards(f0)
                for sub in sorted(_fast_walk(f0), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
                    every = guards.every_call(sub)
                    if every is None:
                        continue
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and \
                            isinstance(sub.value, ast.Name) and sub.value.id == me:
                        found[sub.attr] = min(found.get(sub.attr, sub.lineno), sub.lineno)
                    elif isinstance(sub, ast.Call):
                        f = sub.func
                        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == me \
                                and f.attr not in helpers:
                            helpers.append(f.attr)
                        elif isinstance(f, ast.Name) and f.id in nested and id(nested[f.id]) not in done:
                            todo.append(nested[f.id])
            out[fn.name] = (found, tuple(helpers))
        memo[key] = out
        return out

    # -- the callers ---------------------------------------------------------------------------
    def _judge_callers(self, ctx):
        """Reads of a watched attribute (``x.end_layer``) whose receiver is typed as a base of
        a class that skips the ``__init__`` setting it (found in the base's module and the
        checked files)."""
        from pp_attr_lint.resolve import Unresolved
        out = []
        r = ctx.resolver
        from pp_attr_lint.index.summary import scopes_by_line

        scopes = None
        for read in ctx.summary["reads"]:
            chain = read["chain"]
            if not chain or read.get("guards") or read["attr"] not in self.attributes:
                continue
            if scopes is None:
                scopes = scopes_by_line(ctx.summary)
            scope = scopes.get((read["class"], read["function"]))
            if scope is None or (len(chain) == 1 and chain[0] == scope.get("self")):
                continue
            try:
                cands = r.chain_candidates(tuple(chain), ctx.module,
                                           (ctx.module, read["class"]) if read["class"] else None, scope)
            except Unresolved:
                continue
            if not cands:
                continue
            if _built_exactly(r, tuple(chain), ctx.module, (ctx.module, read["class"]) if read["class"] else None, scope):
                continue  # `self.model = TextModel(...)`: holds a TextModel, never a subclass
            for base in sorted(cands):
                try:
                    if r.attribute_status(base, read["attr"]) != "present":
                        continue
                except Unresolved:
                    continue
                for sub in self._subclasses(ctx, base):
                    missing = [m for b, _, ms in self.skipped(ctx, sub) for m in ms]
                    if read["attr"] in missing and not self._failed_before(ctx, read, chain, set(missing)):
                        recv = ".".join(chain)
                        message = (f"`{recv}` is typed as `{base[1]}`, but its subclass `{sub[1]}` skips the `__init__` "
                                   f"that sets `{read['attr']}` and never sets it: reading `{recv}.{read['attr']}` "
                                   f"raises AttributeError when it holds a `{sub[1]}`.")
                        explanation = [f"`{sub[1]}` MRO: {' -> '.join(e[1] for e in r.mro(sub))}",
                                       f"`{sub[1]}()` runs {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(sub))}"]
                        help = (f"Have `{sub[1]}.__init__` run the base `__init__` that sets `{read['attr']}`, "
                                f"or set `self.{read['attr']}` there")
                        out.append(self.finding(ctx, read["line"], read["col"], read["end_line"], read["end_col"],
                                                message, explanation, help=help,
                                                witness={"ranks": "every rank (pipeline parallelism not needed)",
                                                         "config": {}}))
                        break
                else:
                    continue
                break
        return out

    def _failed_before(self, ctx, read, chain, lacking: set) -> bool:
        """Whether a statement of the read's function that runs before it on every path (a simple
        statement of the function's own body, ahead of the one holding the read) reads another
        attribute in ``lacking`` through the same receiver ``chain`` (a local name), with nothing
        rebinding it in between: with a value of that subclass the function raises there, and the read
        never runs (SGLang 0.5.15 `HostKVCache.__init__` reads `device_pool.store_dtype` first)."""
        import ast

        from pp_attr_lint.index.astutil import ref_chain

        memo = ctx.shared.setdefault(("PPA301", "trees"), {})
        path = ctx.file.path
        if path not in memo:
            try:
                memo[path] = ast.parse(read_source(path).text)
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                memo[path] = None
        tree = memo[path]
        fn = next((n for n in _fast_walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.lineno == read["function"]), None) if tree is not None else None
        if fn is None or len(chain) != 1:
            return False  # an attribute chain (`self.pool`) may be rebound by any call in between
        chain = tuple(chain)
        lazy = (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.FunctionDef,
                ast.AsyncFunctionDef, ast.ClassDef)

        def evaluated(node):
            """The nodes of a simple statement that always run (not in a lambda, comprehension,
            an assert's message, a local annotation, the branches of a conditional expression,
            the later operands of `and` / `or` or of a chained comparison)."""
            todo = [node]
            while todo:
                n = todo.pop()
                yield n
                if isinstance(n, ast.IfExp):
                    todo.append(n.test)
                elif isinstance(n, ast.BoolOp):
                    todo.append(n.values[0])
                elif isinstance(n, ast.Compare):
                    todo += [n.left, n.comparators[0]]
                elif isinstance(n, ast.Assert):
                    todo.append(n.test)
                elif isinstance(n, ast.AnnAssign):
                    todo += [x for x in (n.target, n.value) if x is not None]
                elif not isinstance(n, lazy):
                    todo.extend(ast.iter_child_nodes(n))

        failed = False
        for st in fn.body:
            if st.lineno <= read["line"] <= st.end_lineno:
                return failed
            stores = [n for n in _fast_walk(st) if isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del))]
            if any(ref_chain(n) is not None and chain[:len(ref_chain(n))] == ref_chain(n) for n in stores):
                failed = False  # the receiver (or what holds it) is bound anew
                continue
            if isinstance(st, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Assert)):
                if any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr in lacking
                       and n.attr != read["attr"] and ref_chain(n.value) == chain for n in evaluated(st)):
                    failed = True
        return False

    def _subclasses(self, ctx, base):
        from pp_attr_lint.resolve import Unresolved
        r = ctx.resolver
        # the other checked files its own prefilter accepts: the same whichever rules run
        mods = {base[0], ctx.module} | {st.module for st in ctx.checked if ctx.accepts(st, self)}
        out = []
        for mod in sorted(mods):
            s = ctx.project.summary(mod)
            if s is None:
                continue
            for cname in s["classes"]:
                key = (mod, cname)
                if key == base:
                    continue
                try:
                    if base in r.mro(key):
                        out.append(key)
                except Unresolved:
                    continue
        return out


def _built_exactly(r, chain, module, cls, scope) -> bool:
    """Whether every value the receiver ``chain`` may hold is built by calling a class by its
    name (``self.model = TextModel(...)``, ``model = TextModel(...)``), or is ``None``: it is an
    instance of that very class, not of a subclass.  An annotation, a parameter, a factory, a
    class attribute, or anything not understood gives ``False``."""
    from pp_attr_lint.resolve import EXTERNAL, NONE_KEY, Unresolved

    def exact(desc, mod, sc) -> bool:
        if desc[0] == "none":
            return True
        if desc[0] != "call":
            return False
        head = desc[1].split(".", 1)[0]
        if sc is not None and (head in sc["locals"] or head in sc["params"] or head == sc.get("self")):
            return False
        sym = r.resolve_dotted(mod, desc[1])
        return sym is not None and sym[0] == "class"

    try:
        if len(chain) == 1:
            head = chain[0]
            if scope is None or head not in scope["locals"] or head in scope["params"]:
                return False
            return all(exact(d, module, scope) for d in scope["locals"][head])
        owners = r.chain_candidates(chain[:-1], module, cls, scope)
        if not owners or not owners - {NONE_KEY}:
            return False
        attr = chain[-1]
        for ck in owners - {NONE_KEY}:
            found = False
            for entry in r.mro(ck):
                if entry[0] == EXTERNAL:
                    continue
                crec = r.class_record(entry)
                if attr in crec["body_names"] or attr in crec["properties"] or attr in crec["annotations"]:
                    return False
                for scope2 in crec["methods"].values():
                    if scope2["dynamic"]:
                        return False
                    for _line, descs in scope2["assigns"].get(attr, ()):
                        found = True
                        if not all(exact(d, entry[0], scope2) for d in descs):
                            return False
            if not found:
                return False
        return True
    except Unresolved:
        return False


def _nested_helpers(fn, me: str) -> dict:
    """The functions defined once in method ``fn`` (at any depth, not in a nested class) that
    close over its ``self`` (``me`` is not bound in them) and that ``fn`` only ever calls by name
    (never hands out or rebinds): name -> def node."""
    import ast

    defs: dict = {}
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.ClassDef) or isinstance(n, ast.Lambda):
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(n.name, []).append(n)
        todo.extend(ast.iter_child_nodes(n))
    out = {}
    for name, nodes in defs.items():
        if len(nodes) != 1:
            continue
        node = nodes[0]
        a = node.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x}
        if me in params or any(isinstance(sub, ast.Name) and sub.id == me and not isinstance(sub.ctx, ast.Load)
                               for sub in _fast_walk(node)):
            continue
        calls = loads = 0
        for sub in _fast_walk(fn):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
                calls += 1
            elif isinstance(sub, ast.Name) and sub.id == name:
                loads += 1 if isinstance(sub.ctx, ast.Load) else 10 ** 6
            elif isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
                loads += 10 ** 6
        if calls and loads == calls:
            out[name] = node
    return out


def _runs(r, mro, name):
    """The class whose method ``name`` an instance with MRO ``mro`` runs: the first class on it
    that binds the name, when that binding is a plain method of project code; else ``None``."""
    from pp_attr_lint.resolve import EXTERNAL, Unresolved

    for entry in mro:
        if entry[0] == EXTERNAL:
            return None
        try:
            crec = r.class_record(entry)
        except Unresolved:
            return None
        if name in crec["properties"] or name in crec["annotations"]:
            return None
        if name in crec["methods"]:
            return entry if name in crec["body_names"] else None
        if name in crec["body_names"]:
            return None
    return None



_PLAIN_BASES = {"object", "nn.Module", "torch.nn.Module", "Module", "ABC", "abc.ABC", "Protocol", "Generic"}


def _judged(cname: str, rec: dict) -> bool:
    """Whether :meth:`SkippedInitAttribute.check` judges this top-level class."""
    init = rec["methods"].get("__init__")
    return init is not None and "." not in cname and _may_skip(init, rec)


def _may_skip(init: dict, rec: dict) -> bool:
    """Cheap test before any resolution: the ``__init__`` calls a base explicitly
    (``nn.Module.__init__(self)``, ``super(P, self)``), or calls none while the class has a base
    that may define one."""
    calls = init.get("init_calls", [])
    if any(c[0] == "explicit" or (c[0] == "super" and c[1]) or c[0] == "unknown" for c in calls):
        return True
    return not calls and any(b is not None and b not in _PLAIN_BASES for b in rec["bases"])


def _how(init: dict) -> str:
    calls = init.get("init_calls", [])
    for c in calls:
        if c[0] == "explicit":
            return f"calls `{c[1]}.__init__(self)`, which"
        if c[0] == "super" and c[1]:
            return f"calls `super({c[1]}, self).__init__()`, which"
    if any(c[0] == "super" for c in calls):
        return "calls `super().__init__()`, whose chain along the MRO"
    return "calls no base `__init__` and so"


RULE = SkippedInitAttribute(
    code="PPA301",
    name="attribute-of-skipped-init",
    summary="Attribute set only by a base __init__ that this class skips is read",
    needles=(".__init__(self", ", self).__init__("),
    attributes=F.RANGE_ATTRIBUTES,  # the reads its callers' check judges (`self.pool.end_layer`)
)

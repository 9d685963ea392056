"""Construction: which ``__init__``s run when a class is built, what the skipped ones alone would
have set, and which ``self.x`` a method reads on every call.

An ``__init__`` that calls ``nn.Module.__init__(self)``, ``super(Parent, self).__init__()`` or no
base ``__init__`` at all skips the ``__init__``s of some bases; the attributes only those set are
missing on the instance.  :class:`Inits` (one per run, ``Inits.of(ctx)``) answers:

* ``skipped(key)``: the bases whose ``__init__`` does not run and the attributes only they set;
* ``inherited_read(key, mro, attr)``: the first method the engine calls (``facts.ENGINE_METHODS``)
  that reads ``self.attr`` on every call, itself or through the helpers it calls;
* ``self_reads(key)``: per method, the ``self.x`` it reads and the ``self.helper()`` it calls on
  every call (:meth:`~.flow.FunctionGuards.every_call`);
* ``tree(path)``: a checked file's ``ast``, parsed once per run.

The free functions answer one question each: :func:`runs` (which class's method an instance runs),
:func:`built_exactly` (a receiver that holds exactly one class, never a subclass) and
:func:`fails_before` (an earlier read of another missing attribute always raises first).
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..index.astutil import ref_chain
from ..index.astutil import walk as fast_walk
from ..resolve import EXTERNAL, NONE_KEY, Unresolved
from ..textio import read_source
from .flow import FunctionGuards, only_called

# characters str.splitlines() breaks at and Python's tokenizer does not
OTHER_LINE_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
# the key of the run's :class:`Inits` in ``ctx.shared``
INITS_KEY = ("semantic", "inits")


class Inits:
    """What construction leaves unset, memoized for one run; ``r`` is the run's
    :class:`~pp_attr_lint.resolve.Resolver`.  ``unresolved`` maps each class whose
    :meth:`skipped` could not be told to the :class:`~pp_attr_lint.resolve.Unresolved` that says
    why (a rule lists it as not judged)."""

    def __init__(self, resolver):
        self.r = resolver
        self.unresolved: dict = {}
        self._skipped: dict = {}
        self._reads: dict = {}
        self._trees: dict = {}

    @classmethod
    def of(cls, ctx) -> "Inits":
        """The run's :class:`Inits` (kept in ``ctx.shared``), pointed at ``ctx``'s resolver."""
        got = ctx.shared.get(INITS_KEY)
        if got is None:
            got = ctx.shared[INITS_KEY] = cls(ctx.resolver)
        got.r = ctx.resolver
        return got

    def skipped(self, key) -> list:
        """``[(base, its __init__ scope, attributes it sets that no executed code sets)]`` for
        class ``key`` (a :data:`~pp_attr_lint.resolve.ClassKey`), in MRO order; ``[]`` when every
        base ``__init__`` runs, when an executed ``__init__`` hands ``self`` on (it may set
        anything), or when the MRO or an attribute's status cannot be resolved (recorded in
        :attr:`unresolved` for the class itself)."""
        memo = self._skipped
        if key in memo:
            return memo[key]
        memo[key] = []
        r = self.r
        try:
            r.check_resolved(key)
            mro = r.mro(key)
            inits = r.executed_inits(key)
        except Unresolved as e:
            self.unresolved[key] = e
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

    def inherited_read(self, key, mro: list, attr: str) -> tuple | None:
        """The first method that ``key`` really runs (no class before its owner on ``mro``
        defines it), that the engine calls on every model (``facts.ENGINE_METHODS``) and that
        reads ``self.attr``, itself or through the ``self.helper()`` calls it makes on every run
        (each helper the one ``key`` runs, to 4 calls deep): ``(owner, method, path, line)``;
        ``method`` names the helpers too (``load_weights` -> `_load_experts``).  ``None`` when
        none does."""
        r = self.r
        seen: set[str] = set()
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            crec = r.class_record(entry)
            for mname in crec["methods"]:
                if mname in seen or mname not in F.ENGINE_METHODS:
                    continue
                seen.add(mname)
                got = self._read_through(mro, entry, mname, attr, [mname], set())
                if got is not None:
                    _owner, names, path, line = got
                    return (entry, "` -> `".join(names) if len(names) > 1 else mname, path, line)
            seen.update(crec["body_names"])
        return None

    def _read_through(self, mro, entry, mname, attr, names, visited):
        """Where method ``mname`` of class ``entry`` (run on an instance whose MRO is ``mro``)
        reads ``self.attr`` on every run, itself or through its helpers: ``(owner, names, path,
        line)`` or ``None``."""
        if (entry, mname) in visited or len(names) > 5:
            return None
        visited.add((entry, mname))
        reads, helpers = self.self_reads(entry).get(mname, ({}, ()))
        line = reads.get(attr)
        if line is not None:
            return (entry, names, self.r.src.path(entry[0]), line)
        for helper in helpers:
            owner = runs(self.r, mro, helper)
            if owner is None:
                continue
            got = self._read_through(mro, owner, helper, attr, names + [helper], visited)
            if got is not None:
                return got
        return None

    def self_reads(self, key) -> dict:
        """``{method: ({attr: first line}, helpers)}`` for the methods of class ``key``: the
        ``self.attr`` loads and ``self.helper()`` calls that run on every call of the method (on
        some rank): not under a test of an argument or of the configuration (SGLang's
        ``forward(..., get_embedding=False)`` reads ``self.pooler`` only when asked for
        embeddings), nor in a loop body or a handler; the nested functions the method surely calls
        (closing over ``self``) count as its own lines.  A method that rebinds ``self`` gives
        nothing.  Parsed once per run: the class's own lines when it is a top-level class, else
        its whole module; ``{}`` when the file cannot be read or parsed."""
        memo = self._reads
        if key in memo:
            return memo[key]
        memo[key] = {}
        body = self._class_body(key)
        if body is None:
            return {}
        out: dict = {}
        for fn in body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            if any(isinstance(sub, ast.Name) and sub.id == me and not isinstance(sub.ctx, ast.Load)
                   for sub in fast_walk(fn)):
                out[fn.name] = ({}, ())  # `self` rebound: not the instance throughout
                continue
            out[fn.name] = _every_call_reads(fn, me)
        memo[key] = out
        return out

    def _class_body(self, key) -> list | None:
        """The statements of class ``key``'s body, parsed from its file."""
        path = self.r.src.path(key[0])
        rec = self.r.class_record(key)
        try:
            text = read_source(path).text
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return None
        tree = None
        if rec.get("col") == 0 and rec.get("end_line") and not any(c in text for c in OTHER_LINE_BREAKS):
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
                return None
        body = tree.body
        for part in key[1].split("."):
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return None
            body = node.body
        return body

    def tree(self, path):
        """The ``ast`` of the file at ``path``, parsed once per run; ``None`` when it cannot be
        read or parsed."""
        memo = self._trees
        if path not in memo:
            try:
                memo[path] = ast.parse(read_source(path).text)
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                memo[path] = None
        return memo[path]


def _every_call_reads(fn, me: str) -> tuple:
    """``({attr: first line}, helpers)``: the ``me.attr`` loads and ``me.helper()`` calls of
    method ``fn`` and of the nested functions it surely calls that run on every call."""
    found: dict = {}
    helpers: list = []
    nested = nested_helpers(fn, me)
    todo, done = [fn], set()
    while todo:  # the method, then the nested functions it surely calls (closing over `self`)
        f0 = todo.pop()
        done.add(id(f0))
        guards = FunctionGuards(f0)
        for sub in sorted(fast_walk(f0), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            if guards.every_call(sub) is None:
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
    return found, tuple(helpers)


def nested_helpers(fn, me: str) -> dict:
    """The functions defined once in method ``fn`` (at any depth, not in a nested class or
    lambda) that close over its ``self`` (``me`` is neither a parameter of theirs nor bound in
    them) and that ``fn`` only ever calls by name (:func:`~.flow.only_called`): name -> def
    node."""
    defs: dict = {}
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.ClassDef, ast.Lambda)):
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
                               for sub in fast_walk(node)):
            continue
        if only_called(fn, name):
            out[name] = node
    return out


def runs(r, mro: list, name: str):
    """The class whose method ``name`` an instance with MRO ``mro`` runs: the first class on it
    that binds the name, when that binding is a plain method of project code; else ``None`` (a
    property, an annotation, a class attribute, external code, an unresolved class)."""
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


def built_exactly(r, chain: tuple, module: str, cls, scope) -> bool:
    """Whether every value the receiver ``chain`` (read in ``scope`` of class ``cls`` in
    ``module``) may hold is built by calling a class by its name (``self.model =
    TextModel(...)``, ``model = TextModel(...)``), or is ``None``: it is an instance of that very
    class, not of a subclass.  An annotation, a parameter, a factory, a class attribute, anything
    unresolved or not understood gives ``False``."""

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


_LAZY = (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.FunctionDef,
         ast.AsyncFunctionDef, ast.ClassDef)


def surely_run(node):
    """The nodes of a simple statement that always run: not in a lambda, comprehension, an
    assert's message, a local annotation, the branches of a conditional expression, the later
    operands of ``and`` / ``or`` or of a chained comparison."""
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
        elif not isinstance(n, _LAZY):
            todo.extend(ast.iter_child_nodes(n))


def fails_before(tree, read: dict, chain, lacking: set) -> bool:
    """Whether a statement of the read's function (the function of ``tree`` defined at line
    ``read["function"]``) that runs before the read on every path (a simple statement of the
    function's own body, ahead of the one holding the read) reads another attribute in
    ``lacking`` through the same receiver ``chain`` (a local name), with nothing rebinding it in
    between: with a value that lacks them the function raises there, and the read never runs
    (SGLang 0.5.15 ``HostKVCache.__init__`` reads ``device_pool.store_dtype`` first).  ``False``
    for an attribute chain (``self.pool`` may be rebound by any call in between) or when the
    function is not found."""
    fn = next((n for n in fast_walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno == read["function"]), None) if tree is not None else None
    if fn is None or len(chain) != 1:
        return False
    chain = tuple(chain)
    failed = False
    for st in fn.body:
        if st.lineno <= read["line"] <= st.end_lineno:
            return failed
        stores = [n for n in fast_walk(st) if isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del))]
        if any(ref_chain(n) is not None and chain[:len(ref_chain(n))] == ref_chain(n) for n in stores):
            failed = False  # the receiver (or what holds it) is bound anew
            continue
        if isinstance(st, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Assert)):
            if any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr in lacking
                   and n.attr != read["attr"] and ref_chain(n.value) == chain for n in surely_run(st)):
                failed = True
    return False

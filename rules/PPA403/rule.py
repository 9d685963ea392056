"""PPA403 stage-local-layer-id: a constant (global) layer id passed to an accessor that indexes a
pipeline stage's own layers by ``layer_id - self.start_layer`` (see README.md).

The rule works from the accessor's side: a file that holds such an accessor (its bytes hold
``- self.start_layer``, a rare test) is checked, and the tree is scanned for the calls of the
accessor's name (as :class:`pp_attr_lint.semantic.model.RankFacts` scans for a method's callers).  A call
in another file is reported at the accessor's index, naming the call; a call in the same file is
reported at the call.  So a file's findings depend only on its own bytes and the tree it lies in,
never on which files are named or which rules are selected.
"""

from __future__ import annotations

import re

from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk

_INDEX = re.compile(rb"-\s*self\.start_layer\b")
_INDEX_TEXT = re.compile(_INDEX.pattern.decode())
# how many construction hops an unannotated parameter is followed through
_MAX_HOPS = 3


def _ast():
    import ast

    return ast


def _self_attr(node, self_name: str) -> str | None:
    ast = _ast()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return node.attr
    return None


def _rebound(fn, name: str) -> bool:
    """Whether ``fn`` stores to the plain name ``name`` anywhere (so a parameter may change)."""
    ast = _ast()
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn))


def _positional(fn) -> list[str]:
    """The positional parameter names of method ``fn`` without its first (``self``)."""
    return [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]


def _accessors(tree, lines) -> list:
    """The accessors of ``tree``: ``[[class, method, param, position, buffer, row, col, end_row,
    end_col, via, index]]``, one per method of a top-level class that indexes
    ``self.<buffer>[<param> - self.start_layer]`` with one of its parameters, or with a local whose
    one store is that difference (``via`` ``None``), or that passes a parameter unchanged to such a
    method of the same class (``via`` that method's name; the index's position and text,
    ``index``, are those it leads to).  A class whose every store of ``self.start_layer`` is a
    constant (never a stage's range) has none."""
    ast = _ast()
    out = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        stores = [n.value for m in methods.values() for n in ast.walk(m)
                  if isinstance(n, ast.Assign) and any(_self_attr(t, "self") == "start_layer" for t in n.targets)]
        if stores and all(isinstance(v, ast.Constant) for v in stores):
            continue
        found: dict[str, list] = {}
        for name, m in methods.items():
            params = _positional(m)
            if not params:
                continue
            me = m.args.args[0].arg

            def local_of(e):
                """The parameter ``e`` (``p - self.start_layer``) makes stage-local, else ``None``."""
                if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and isinstance(e.left, ast.Name) \
                        and e.left.id in params and _self_attr(e.right, me) == "start_layer" \
                        and not _rebound(m, e.left.id):
                    return e.left.id
                return None

            # `local = p - self.start_layer`, the only store of `local`
            stores: dict[str, list] = {}
            for n in ast.walk(m):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    stores.setdefault(n.id, []).append(n)
            aliases = {}
            for n in ast.walk(m):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and len(stores.get(n.targets[0].id, ())) == 1 and local_of(n.value):
                    aliases[n.targets[0].id] = local_of(n.value)
            for n in ast.walk(m):
                if not (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)):
                    continue
                buf = _self_attr(n.value, me)
                s = n.slice
                param = local_of(s) or (aliases.get(s.id) if isinstance(s, ast.Name) else None)
                if buf is None or param is None:
                    continue
                index = ast.unparse(n)
                if isinstance(s, ast.Name):
                    index += f"` with `{s.id} = {param} - self.start_layer"
                found[name] = [cls.name, name, param, params.index(param), buf, n.lineno,
                               lines.col(n.lineno, n.col_offset), n.end_lineno,
                               lines.col(n.end_lineno, n.end_col_offset), None, index]
                break
        changed = True
        while changed:  # a method that hands its parameter on unchanged to one of them
            changed = False
            for name, m in methods.items():
                if name in found or not _positional(m):
                    continue
                params = _positional(m)
                for n in ast.walk(m):
                    if not (isinstance(n, ast.Call) and _self_attr(n.func, m.args.args[0].arg) in found):
                        continue
                    target = found[n.func.attr]
                    arg = _argument(n, target[3], target[2])
                    if isinstance(arg, ast.Name) and arg.id in params and not _rebound(m, arg.id):
                        found[name] = [cls.name, name, arg.id, params.index(arg.id), *target[4:9], n.func.attr,
                                       target[10]]
                        changed = True
                        break
        out += found.values()
    return out


def _argument(call, position: int, keyword: str):
    """The argument ``call`` passes at ``position`` (after ``self``) or as ``keyword``; ``None``
    when not passed; ``...`` when ``*args`` / ``**kwargs`` may pass it."""
    ast = _ast()
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return ...
        if i == position:
            return a
    for k in call.keywords:
        if k.arg is None:
            return ...
        if k.arg == keyword:
            return k.value
    return None


def _int_constant(node) -> bool:
    """A literal layer id: a non-negative ``int`` constant."""
    ast = _ast()
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0


def _stage_test(node) -> bool:
    """Whether a test names the stage (``self.start_layer == 0``, ``pp_group.is_first_rank``)."""
    from pp_attr_lint.semantic.guards import STAGE_WORD_PARTS

    ast = _ast()
    for n in ast.walk(node):
        word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if word and any(w in word.lower() for w in STAGE_WORD_PARTS):
            return True
    return False


# what a test on a call's path says of the pipeline stages that run the call
FIRST, LATER, UNKNOWN = "first", "later", "unknown"  # only the first; only stages after it (PP >= 2); not read
# names of the stage's position: 0 on the first stage
_MIRROR = {"Lt": "Gt", "Gt": "Lt", "LtE": "GtE", "GtE": "LtE", "Eq": "Eq", "NotEq": "NotEq"}


def _flip(c):
    """What the negation of a test whose stage class is ``c`` says."""
    return {FIRST: LATER, LATER: FIRST}.get(c, c)


def _last_name(node) -> str | None:
    ast = _ast()
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _stage_class(test):
    """What ``test`` holding says of the stage: :data:`FIRST` (only the first stage holds it:
    ``is_first_rank``, ``self.start_layer == 0``, ``not pp_rank``), :data:`LATER` (only the
    stages after the first: ``is_last_rank`` under PP >= 2, ``start_layer != 0`` / ``> 0``,
    ``not is_first_rank``), :data:`UNKNOWN` (it names the stage otherwise), ``None`` (it does not
    name the stage)."""
    from pp_attr_lint.semantic.guards import STAGE_POSITION_NAMES

    ast = _ast()
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flip(_stage_class(test.operand))
    if isinstance(test, ast.BoolOp):
        parts = [_stage_class(v) for v in test.values]
        if isinstance(test.op, ast.And):  # a conjunction holds only where each part holds
            if FIRST in parts:
                return FIRST
            if LATER in parts:
                return LATER
        elif None not in parts and len(set(parts)) == 1 and parts[0] != UNKNOWN:
            return parts[0]  # a disjunction of parts that all say the same
        return UNKNOWN if any(p is not None for p in parts) else None
    word = _last_name(test)
    if word == "is_first_rank":
        return FIRST
    if word == "is_last_rank":
        return LATER
    if word in STAGE_POSITION_NAMES:
        return LATER  # `if self.start_layer:`
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, type(test.ops[0]).__name__, test.comparators[0]
        if isinstance(left, ast.Constant) and op in _MIRROR:
            left, op, right = right, _MIRROR[op], left  # `0 == self.start_layer`
        if _last_name(left) in STAGE_POSITION_NAMES and isinstance(right, ast.Constant) and type(right.value) is int:
            c = right.value
            if (op, c) in (("Eq", 0), ("LtE", 0), ("Lt", 1)):
                return FIRST
            if (op, c) in (("NotEq", 0), ("Gt", 0), ("GtE", 1)):
                return LATER
    return UNKNOWN if _stage_test(test) else None


def _stage_atom(test):
    """The atom of a test that names the pipeline stage (see :func:`_stage_class`): ``@first``
    when only the first stage holds it, its negation when only the later ones do, an opaque
    ``stage?...`` atom when it names the stage otherwise; ``None`` (the model's own naming) for a
    rank predicate or a test that does not name the stage."""
    from pp_attr_lint.semantic import guards as G

    if G.rank_predicate(test) is not None:
        return None  # `is_first_rank` / `is_last_rank`: the model's @first / @last
    c = _stage_class(test)
    if c == FIRST:
        return G.FIRST
    if c == LATER:
        return G.f_not(G.FIRST)
    return ("a", "stage?" + _ast().unparse(test)) if c == UNKNOWN else None


def _calls(tree, names: frozenset):
    """``(call, class node or None, function node, guard)`` for each call ``x.name(...)`` with
    ``name`` in ``names`` inside a function of ``tree`` (the innermost one: a nested function has
    no scope of its own in the summary), with its guard from the flow walker
    (:class:`~pp_attr_lint.semantic.flow.FunctionGuards`; stage tests named by
    :func:`_stage_atom`): ``if`` / ``while`` / conditional expressions, ``and`` / ``or``, early
    ``return`` / ``raise``, ``assert``."""
    from pp_attr_lint.semantic.flow import FunctionGuards

    ast = _ast()
    out = []
    todo = [(tree, None, None)]
    while todo:
        node, cls, fn = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((child, cls, child))
            elif isinstance(child, ast.ClassDef):
                todo.append((child, child if cls is None and fn is None else cls, fn))
            else:
                todo.append((child, cls, fn))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            guards = None
            for call in _fast_walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in names:
                    guards = guards or FunctionGuards(node, atom_of=_stage_atom)
                    guard = guards.of(call)
                    if guard is not None:  # (a call of a nested function is that function's)
                        out.append((call, cls, node, guard))
    out.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
    return out


def _resolver(ctx):
    """A resolver of this rule's own for the checked file (kept in ``ctx.shared``): a resolver
    memoizes each answer with what it met at the depth of its first question, so with the shared
    one the questions of this rule would change the reasons other rules give for their reads, and
    the questions other files asked first would change this file's."""
    from pp_attr_lint.resolve import Resolver

    key = ("PPA403:resolver", ctx.file.path)
    got = ctx.shared.get(key)
    if got is None or got.src is not ctx.project:
        got = ctx.shared[key] = Resolver(ctx.project, ctx.resolver.settings)
    return got


class _NotEstablished(Exception):
    """The class of a receiver cannot be established: ``reason`` (an unjudged reason code) and
    ``detail``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _Receivers:
    """Establishes the classes a receiver may be, through the resolver and, for an unannotated
    parameter of an ``__init__``, through every construction of its class in the tree."""

    def __init__(self, ctx, rf):
        from pp_attr_lint.index.summary import scopes_by_line

        self.ctx, self.rf, self.r = ctx, rf, _resolver(ctx)
        self._scopes = {}
        self._scopes_by_line = scopes_by_line
        self._built: dict = {}

    def scope(self, module: str, cls: str | None, fn):
        if module not in self._scopes:
            s = self.ctx.project.summary(module)
            self._scopes[module] = self._scopes_by_line(s) if s else {}
        return self._scopes[module].get((cls, fn.lineno))

    def _why(self, fallback: str) -> _NotEstablished:
        why = self.r.why or ("receiver-unresolved", fallback, None)
        return _NotEstablished(why[0], why[1])

    def classes(self, chain, module: str, cls, fn, hops: int = 0) -> tuple[set, list]:
        """``(classes, why lines)`` of receiver ``chain`` read in function ``fn`` (of class node
        ``cls`` or a module function) of ``module``; raises :class:`_NotEstablished`."""
        from pp_attr_lint.resolve import NONE_KEY, Unresolved

        scope = self.scope(module, cls.name if cls is not None else None, fn)
        if scope is None:
            raise _NotEstablished("receiver-unresolved", f"`{'.'.join(chain)}` is read in a nested function")
        clskey = (module, cls.name) if cls is not None else None
        why: list[str] = []
        try:
            self.r.why = None
            got = self.r.chain_candidates(tuple(chain), module, clskey, scope)
            if got is not None:
                return got, why
            head = chain[0]
            if not (head in scope["params"] and scope["params"][head] is None and head not in scope["locals"]
                    and head != scope.get("self")):
                raise self._why(f"`{'.'.join(chain)}` cannot be resolved")
            if cls is None or fn.name != "__init__":
                raise _NotEstablished("receiver-unresolved",
                                      f"parameter `{head}` of `{fn.name}` has no class annotation, and only an "
                                      f"`__init__`'s parameter is followed to the calls that pass it")
            current, why = self.constructed(clskey, head, hops)
            for attr in chain[1:]:
                nxt = set()
                for ck in current:
                    if ck == NONE_KEY:
                        continue
                    r = self.r.attr_candidates(ck, attr)
                    if r is None:
                        raise self._why(f"`{ck[1]}.{attr}` cannot be resolved")
                    nxt |= r[0]
                current = nxt
            return current, why
        except Unresolved as e:
            raise _NotEstablished(e.reason, e.detail)

    def constructed(self, key, param: str, hops: int) -> tuple[set, list]:
        """The classes every construction of class ``key`` in the tree passes as ``param`` of its
        ``__init__``, with a why line; raises :class:`_NotEstablished` when one cannot be told (a
        reference to the class other than a call or a type test, a subclass, ``*args``, a default,
        an argument that cannot be resolved)."""
        memo = (key, param)
        if memo in self._built:
            got = self._built[memo]
            if isinstance(got, _NotEstablished):
                raise got
            return got
        try:
            got = self._built[memo] = self._constructed(key, param, hops)
        except _NotEstablished as e:
            if e.reason != "recursion-limit":  # a limit met this deep may not be met nearer the call
                self._built[memo] = e
            raise
        return got

    def stage_built(self, key) -> str | None:
        """Where class ``key`` is built with a ``start_layer`` that is not a constant (the stage's
        range: ``MHATokenToKVPool(..., start_layer=self.start_layer)``), as a why line; ``None``
        when no construction in the tree shows one (a pool built without it starts at layer 0 on
        every stage, as SGLang's sub-pools of a hybrid pool are, and takes stage-local ids)."""
        from pp_attr_lint.textio import display_path

        ast = _ast()
        memo = ("stage-built", tuple(key))
        if memo in self._built:
            return self._built[memo]
        self._built[memo] = None
        files = self.rf.tree_files(key[1].encode()) or ()
        position = None
        for _path, module, tree, _lines in files:
            if module == key[0]:
                for node in tree.body:
                    if isinstance(node, ast.ClassDef) and node.name == key[1]:
                        init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
                                    None)
                        if init is not None and "start_layer" in _positional(init):
                            position = _positional(init).index("start_layer")
        for path, module, tree, _lines in files:
            for node, parent, cls, fn, skip in _name_uses(tree, key[1]):
                if skip or not (isinstance(parent, ast.Call) and parent.func is node):
                    continue
                arg = _argument(parent, position if position is not None else 1 << 30, "start_layer")
                if arg is None or arg is ... or isinstance(arg, ast.Constant):
                    continue
                if not self._names(node, key, module, cls, fn):
                    continue
                got = (f"`{key[1]}` is built with `start_layer={ast.unparse(arg)}` at "
                       f"{display_path(path)}:{node.lineno}: the stage's first layer")
                self._built[memo] = got
                return got
        return None

    def _names(self, node, key, module: str, cls, fn) -> bool:
        """Whether the name or attribute ``node`` (in function ``fn`` of ``module``) is class ``key``."""
        return self._which(node, key, module, cls, fn) == "key"

    def _which(self, node, key, module: str, cls, fn) -> str:
        """What the name or attribute ``node`` spelled like class ``key`` (in function ``fn`` of class
        node ``cls`` of ``module``) is: ``"key"``, ``"other"`` (another class, or an attribute of an
        object that does not lead to a class) or ``"unknown"`` (a name that cannot be resolved)."""
        ast = _ast()
        name = key[1]
        scope = self.scope(module, cls.name if cls is not None else None, fn) if fn is not None else None
        try:
            if isinstance(node, ast.Name) and scope is not None and name in scope["locals"]:
                # a name bound inside the function (`from .backend import Backend` there)
                local = self.r._local_classes(name, module, scope)
                if not local:
                    return "unknown"
                return "key" if local == {tuple(key)} else "other" if tuple(key) not in local else "unknown"
            dotted = _dotted(node)
            sym = self.r.resolve_dotted(module, dotted) if dotted else None
        except Exception:
            sym = None
        if sym is not None and sym[0] == "class":
            return "key" if (sym[1], sym[2]) == tuple(key) else "other"
        return "other" if isinstance(node, ast.Attribute) else "unknown"

    def _constructed(self, key, param: str, hops: int) -> tuple[set, list]:
        from pp_attr_lint.index.astutil import ref_chain
        from pp_attr_lint.textio import display_path

        ast = _ast()
        name = key[1]
        if hops >= _MAX_HOPS:
            raise _NotEstablished("recursion-limit", f"`{name}({param}=...)` is built more than {_MAX_HOPS} calls away")
        files = self.rf.tree_files(name.encode())
        if files is None:
            raise _NotEstablished("syntax-error", f"a file that may construct `{name}` cannot be read or parsed")
        init = None
        for path, module, tree, _lines in files:
            if module == key[0]:
                for node in tree.body:
                    if isinstance(node, ast.ClassDef) and node.name == name:
                        text = ast.unparse(node)
                        if "cls(" in text or "type(self)(" in text or "__class__(" in text or "__new__" in text:
                            raise _NotEstablished("receiver-unresolved",
                                                  f"`{name}` may construct itself (`cls(...)`, `__new__`)")
                        init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
                                    None)
        if init is None or param not in _positional(init):
            raise _NotEstablished("receiver-unresolved", f"`{name}.__init__` with a parameter `{param}` was not found")
        position = _positional(init).index(param)
        classes: set = set()
        sites = []
        for path, module, tree, _lines in files:
            for node, parent, cls, fn, skip in _name_uses(tree, name):
                if skip:
                    continue
                where = f"{display_path(path)}:{node.lineno}"
                which = self._which(node, key, module, cls, fn)
                if which == "other":
                    continue  # another class of the same name, or another object's attribute
                if which == "unknown":
                    raise _NotEstablished("receiver-unresolved",
                                          f"`{name}` at {where} cannot be resolved (it may be the class)")
                if isinstance(parent, ast.ClassDef):
                    raise _NotEstablished("receiver-unresolved", f"`{name}` is subclassed at {where}")
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    raise _NotEstablished("receiver-unresolved",
                                          f"`{name}` is used as a value at {where} (a registry, a factory "
                                          f"argument), so not every construction of it can be seen")
                arg = _argument(parent, position, param)
                if arg is None or arg is ...:
                    raise _NotEstablished("receiver-unresolved",
                                          f"`{name}(...)` at {where} passes `{param}` "
                                          f"{'through *args / **kwargs' if arg is ... else 'by its default'}")
                chain = ref_chain(arg)
                if chain is None or fn is None:
                    raise _NotEstablished("receiver-unresolved",
                                          f"`{name}(...)` at {where} passes an expression as `{param}`")
                got, _ = self.classes(chain, module, cls, fn, hops + 1)
                classes |= got
                sites.append(f"`{name}({ast.unparse(arg)})` in `{_qual(cls, fn)}` at {where}")
        if not sites:
            raise _NotEstablished("receiver-unresolved", f"no construction of `{name}` was found in the tree")
        names = " | ".join(sorted(k[1] for k in classes if k[0] != "builtins"))
        more = f" and {len(sites) - 1} more" if len(sites) > 1 else ""
        return classes, [f"`{param}` is a `{names}`: every construction of `{name}` in the tree passes one "
                         f"({sites[0]}{more})"]


def _stub_statement(st) -> bool:
    """A statement of an abstract method's body: a docstring, ``...``, ``pass`` or
    ``raise NotImplementedError(...)``."""
    ast = _ast()
    if isinstance(st, ast.Pass):
        return True
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
        return isinstance(st.value.value, str) or st.value.value is Ellipsis
    return isinstance(st, ast.Raise) and "NotImplementedError" in ast.unparse(st)


def _qual(cls, fn) -> str:
    return f"{cls.name}.{fn.name}" if cls is not None else fn.name


def _dotted(node) -> str | None:
    from pp_attr_lint.index.astutil import ref_chain

    chain = ref_chain(node)
    return ".".join(chain) if chain else None


def _name_uses(tree, name: str):
    """``(node, parent, class, function, harmless)`` for each ``Name`` / ``Attribute`` spelled
    ``name`` in ``tree``; ``harmless``: in an annotation or a type test (``isinstance(x, name)``)."""
    ast = _ast()
    out = []
    harmless: set[int] = set()
    for n in ast.walk(tree):
        anns = []
        if isinstance(n, ast.arg) and n.annotation is not None:
            anns.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            anns.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            anns.append(n.annotation)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("isinstance", "issubclass") \
                and len(n.args) == 2:
            anns.append(n.args[1])
        for a in anns:
            harmless.update(id(x) for x in ast.walk(a))

    def visit(node, parent, cls, fn):
        if isinstance(node, ast.ClassDef) and fn is None and cls is None:
            cls = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = node
        if (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name):
            out.append((node, parent, cls, fn, id(node) in harmless))
            if isinstance(node, ast.Attribute):
                return
        for c in ast.iter_child_nodes(node):
            visit(c, node, cls, fn)

    visit(tree, None, None, None)
    return out


class StageLocalLayerId(Rule):
    def prefilter(self, data: bytes) -> bool:
        """A file that subtracts ``self.start_layer`` (``[layer_id - self.start_layer]``, or
        ``local = layer_id - self.start_layer``): the only shapes of accessor the rule reads; the
        calls of an accessor are found by scanning the tree when its file is checked."""
        return b"self.start_layer" in data and _INDEX.search(data) is not None

    def collect(self, tree, lines):
        # runs on every parsed file: one whose text does not subtract `self.start_layer` has no
        # accessor (the same test as the prefilter, so most files cost one search)
        text = "".join(lines.lines)
        if "self.start_layer" not in text or _INDEX_TEXT.search(text) is None:
            return None
        return _accessors(tree, lines) or None

    def check(self, ctx):
        """The findings of ``ctx``'s file: each call in the tree that passes a constant layer id to
        one of the file's accessors (reported at the accessor's index, or at the call when it is
        in this file), and a :class:`~pp_attr_lint.model.NotJudged` record for each such call
        whose receiver cannot be established, or for all of them when a file of the tree that may
        hold one cannot be read or parsed."""
        from pp_attr_lint.index.astutil import ref_chain
        from pp_attr_lint.semantic import guards as G
        from pp_attr_lint.semantic.model import RankFacts
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.textio import display_path

        accessors = ctx.facts(self.code)
        if not accessors:
            return []
        rf = RankFacts.of(ctx)
        own = {(ctx.module, a[0], a[1]): a for a in accessors}
        names = frozenset(a[1] for a in accessors)
        files = rf.tree_files(*sorted(b"." + n.encode() for n in names))
        first = min(accessors, key=lambda a: (a[5], a[6]))
        if files is None:
            return [NotJudged(code=self.code, reason="syntax-error", path=ctx.file.path, row=first[5],
                              column=first[6] + 1,
                              detail=f"calls of `{first[0]}.{first[1]}`: a file of the tree that may call it cannot "
                                     f"be read or parsed")]
        receivers = _Receivers(ctx, rf)
        out = []
        for path, module, tree, _lines in files:
            for call, cls, fn, guard in _calls(tree, names):
                m = call.func.attr
                shaped = [a for a in accessors if a[1] == m and _int_constant(_argument(call, a[3], a[2]))]
                if not shaped:
                    continue
                first_only = G.implies(guard, G.FIRST)
                if first_only and all(_argument(call, a[3], a[2]).value == 0 for a in shaped):
                    continue  # runs on the first stage only, which holds layer 0
                a0 = shaped[0]
                site = f"{display_path(path)}:{call.lineno}"
                text = _ast().unparse(call)
                chain = ref_chain(call.func.value)
                try:
                    if chain is None:
                        raise _NotEstablished("receiver-unresolved", f"the receiver of `{m}` is an expression")
                    classes, why = receivers.classes(chain, module, cls, fn)
                    hit = self._accessor_of(ctx, classes, m, own, receivers)
                except _NotEstablished as e:
                    row, col = (call.lineno, call.col_offset) if path == ctx.file.path else (a0[5], a0[6])
                    out.append(NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=row,
                                         column=col + 1,
                                         detail=f"`{text}` at {site}, a call of `{a0[0]}.{m}` when its receiver "
                                                f"is one: {e.detail}"))
                    continue
                if hit is None:
                    continue
                acc, holders, stages = hit
                why = why + list(dict.fromkeys(stages))
                arg = _argument(call, acc[3], acc[2])
                if not _int_constant(arg):
                    continue
                if first_only or any(x.startswith("stage?") for x in G.atoms(guard)):
                    row, col = (call.lineno, call.col_offset) if path == ctx.file.path else (acc[5], acc[6])
                    out.append(NotJudged(code=self.code, reason="stage-guard", path=ctx.file.path, row=row,
                                         column=col + 1,
                                         detail=f"`{text}` at {site} passes layer {arg.value} to `{acc[0]}.{m}`, under "
                                                f"a test that names the pipeline stage in a way that does not tell "
                                                f"which stages run it"))
                    continue
                out.append(self._finding(ctx, acc, holders, call, arg, cls, fn, chain, why, path, site, text,
                                         _lines))
        return out

    def _accessor_of(self, ctx, classes, m: str, own: dict, receivers):
        """The accessor of this file that ``x.m(...)`` runs for receiver classes ``classes``, with
        the receiver's class names and where each is built with a stage's ``start_layer``, when
        every class (``None`` aside) runs a stage-local accessor for ``m``, is built so somewhere
        (:meth:`_Receivers.stage_built`) and one of them is this file's; else ``None``."""
        from pp_attr_lint.resolve import EXTERNAL, NONE_KEY, Unresolved

        r = _resolver(ctx)
        hit, holders, stages = None, [], []
        real = [k for k in classes if k != NONE_KEY]
        if not real:
            return None
        for k in sorted(real):
            if k[0] == EXTERNAL:
                return None
            entry = None
            try:
                for e in r.mro(k):
                    if e[0] == EXTERNAL:
                        continue
                    rec = r.class_record(e)
                    if m in rec["methods"] or m in rec["body_names"] or m in rec["properties"]:
                        entry = e
                        break
            except Unresolved as e:
                raise _NotEstablished(e.reason, e.detail)
            if entry is None:
                return None
            facts = ctx.facts(self.code, entry[0]) or ()
            acc = next((a for a in facts if a[0] == entry[1] and a[1] == m), None)
            if acc is None:
                if self._abstract(ctx, entry, m):
                    raise _NotEstablished("receiver-unresolved",
                                          f"the receiver is declared a `{entry[1]}`, whose `{m}` is abstract: which "
                                          f"subclass it holds at run time cannot be told")
                return None  # this class's `m` is not a stage-local accessor
            built = receivers.stage_built(k)
            if built is None:
                return None  # built with no stage range anywhere: its start_layer is 0 on every stage
            if (entry[0], entry[1], m) in own and hit is None:
                hit = own[(entry[0], entry[1], m)]
            holders.append(k[1])
            stages.append(built)
        return (hit, holders, stages) if hit is not None else None

    def _abstract(self, ctx, key, m: str) -> bool:
        """Whether method ``m`` of class ``key`` is abstract (``@abstractmethod``, or a body that only
        raises ``NotImplementedError`` / is ``...``); ``True`` when its source cannot be read."""
        from pp_attr_lint.semantic.model import RankFacts

        ast = _ast()
        for _path, module, tree, _lines in RankFacts.of(ctx).tree_files(b"def " + m.encode()) or ():
            if module != key[0]:
                continue
            for node in tree.body:
                if not (isinstance(node, ast.ClassDef) and node.name == key[1]):
                    continue
                for fn in node.body:
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == m:
                        if any((_dotted(d) or "").endswith("abstractmethod") for d in fn.decorator_list):
                            return True
                        return all(_stub_statement(st) for st in fn.body)
                return False
        return True

    def _finding(self, ctx, acc, holders, call, arg, cls, fn, chain, why, path, site, text, lines):
        ast = _ast()
        cname, m, param, _pos, buf, row, col, end_row, end_col, via, index = acc
        value = ast.unparse(arg)
        recv = ".".join(chain)
        same = path == ctx.file.path
        caller = _qual(cls, fn)
        message = (f"`{caller}` passes the constant layer id {value} to `{cname}.{m}`{'' if same else f' ({site})'}, "
                   f"which reads `{index}`"
                   + (f" through `{via}`" if via else "")
                   + f": a pipeline stage's `{buf}` holds only its own layers, so on every stage whose "
                     f"`start_layer` is past layer {value} the index is negative (another layer's entry) or "
                     f"out of range (IndexError).")
        explanation = list(why) + [
            f"`{recv}` is a `{' | '.join(sorted(set(holders)))}`, whose `{m}` indexes `{index}`"
            + (f" (through `{via}`)" if via else "") + ": a global layer id minus the stage's first layer",
            f"{value} is a global layer id that is not adjusted to the stage: only the stage that holds layer "
            f"{value} has it",
        ]
        if not same:
            explanation.append(f"reported at the index in `{cname}`: the call is `{text}` at {site}")
        help = (f"Pass a layer this stage holds (a layer's own `layer_id`, or `start_layer + i`), or read what "
                f"you need from the model config instead of layer {value}'s entry (e.g. the head size: "
                f"`model_config.v_head_dim`)")
        if same:
            row, col = call.lineno, lines.col(call.lineno, call.col_offset)
            end_row, end_col = call.end_lineno, lines.col(call.end_lineno, call.end_col_offset)
        return self.finding(ctx, row, col, end_row, end_col, message, explanation, help=help,
                            witness={"ranks": f"every pipeline-parallel rank whose stage starts after layer {value} "
                                              f"(rank > 0)", "config": {},
                                     # an index past the stage's own layers (IndexError, not a silent
                                     # read of another layer as under an even split) needs a stage
                                     # that starts after more layers than it holds
                                     "layer_partition": "front-loaded"})


RULE = StageLocalLayerId(
    code="PPA403",
    name="stage-local-layer-id",
    summary="a constant global layer id passed to an accessor that indexes a stage's own layers",
    version=1,
)

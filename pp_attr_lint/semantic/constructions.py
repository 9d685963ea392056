"""The classes a receiver may hold, followed through constructions: where the resolver cannot
name the class of ``param.attr`` read in an ``__init__`` whose ``param`` has no annotation, every
construction of the class in the analysed tree is read for what it passes as ``param``
(:class:`Receivers`).  What cannot be established is raised as :class:`NotEstablished` with an
unjudged reason code, for the rule to list as not judged.
"""

from __future__ import annotations

import ast

from .callsites import argument, name_uses, positional

# how many construction hops an unannotated parameter is followed through
MAX_HOPS = 3


def own_resolver(ctx, owner: str):
    """A resolver of ``owner``'s own (a rule code) for the checked file, kept in ``ctx.shared``: a
    resolver memoizes each answer with what it met at the depth of its first question, so with the
    shared one the questions of one rule would change the reasons other rules give for their
    reads, and the questions other files asked first would change this file's."""
    from ..resolve import Resolver

    key = (f"{owner}:resolver", ctx.file.path)
    got = ctx.shared.get(key)
    if got is None or got.src is not ctx.project:
        got = ctx.shared[key] = Resolver(ctx.project, ctx.resolver.settings)
    return got


def qual(cls, fn) -> str:
    """``Class.function`` or ``function`` for function node ``fn`` in class node ``cls``."""
    return f"{cls.name}.{fn.name}" if cls is not None else fn.name


def dotted(node) -> str | None:
    """The dotted name ``node`` reads (``a.b.c``), ``None`` when it is not a plain chain."""
    from ..index.astutil import ref_chain

    chain = ref_chain(node)
    return ".".join(chain) if chain else None


class NotEstablished(Exception):
    """The class of a receiver cannot be established: ``reason`` (an unjudged reason code) and
    ``detail``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class Receivers:
    """Establishes the classes a receiver may be, through the resolver and, for an unannotated
    parameter of an ``__init__``, through every construction of its class in the tree.

    ``ctx`` is the rule context of the checked file, ``rf`` its
    :class:`~.model.RankFacts` (the tree's files), ``owner`` the rule whose resolver it uses
    (:func:`own_resolver`).  ``memo`` keeps the answers for the run of one file; a caller may
    keep its own answers there under keys of its own shape."""

    def __init__(self, ctx, rf, owner: str):
        from ..index.summary import scopes_by_line

        self.ctx, self.rf, self.r = ctx, rf, own_resolver(ctx, owner)
        self._scopes = {}
        self._scopes_by_line = scopes_by_line
        self.memo: dict = {}

    def scope(self, module: str, cls: str | None, fn):
        """The summary scope of function node ``fn`` of class ``cls`` (a name, ``None`` for a
        module function) in ``module``; ``None`` for a nested function."""
        if module not in self._scopes:
            s = self.ctx.project.summary(module)
            self._scopes[module] = self._scopes_by_line(s) if s else {}
        return self._scopes[module].get((cls, fn.lineno))

    def _why(self, fallback: str) -> NotEstablished:
        why = self.r.why or ("receiver-unresolved", fallback, None)
        return NotEstablished(why[0], why[1])

    def classes(self, chain, module: str, cls, fn, hops: int = 0) -> tuple[set, list]:
        """``(classes, why lines)`` of receiver ``chain`` read in function ``fn`` (of class node
        ``cls`` or a module function) of ``module``; raises :class:`NotEstablished`."""
        from ..resolve import NONE_KEY, Unresolved

        scope = self.scope(module, cls.name if cls is not None else None, fn)
        if scope is None:
            raise NotEstablished("receiver-unresolved", f"`{'.'.join(chain)}` is read in a nested function")
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
                raise NotEstablished("receiver-unresolved",
                                     f"parameter `{head}` of `{fn.name}` has no class annotation, and only an "
                                     f"`__init__`'s parameter is followed to the calls that pass it")
            current, why = self.constructed(clskey, head, hops)
            for attr in chain[1:]:
                nxt = set()
                for ck in sorted(current):
                    if ck == NONE_KEY:
                        continue
                    r = self.r.attr_candidates(ck, attr)
                    if r is None:
                        raise self._why(f"`{ck[1]}.{attr}` cannot be resolved")
                    nxt |= r[0]
                current = nxt
            return current, why
        except Unresolved as e:
            raise NotEstablished(e.reason, e.detail)

    def constructed(self, key, param: str, hops: int) -> tuple[set, list]:
        """The classes every construction of class ``key`` in the tree passes as ``param`` of its
        ``__init__``, with a why line; raises :class:`NotEstablished` when one cannot be told (a
        reference to the class other than a call or a type test, a subclass, ``*args``, a default,
        an argument that cannot be resolved)."""
        memo = (key, param)
        if memo in self.memo:
            got = self.memo[memo]
            if isinstance(got, NotEstablished):
                raise got
            return got
        try:
            got = self.memo[memo] = self._constructed(key, param, hops)
        except NotEstablished as e:
            if e.reason != "recursion-limit":  # a limit met this deep may not be met nearer the call
                self.memo[memo] = e
            raise
        return got

    def names(self, node, key, module: str, cls, fn) -> bool:
        """Whether the name or attribute ``node`` (in function ``fn`` of ``module``) is class ``key``."""
        return self.which(node, key, module, cls, fn) == "key"

    def which(self, node, key, module: str, cls, fn) -> str:
        """What the name or attribute ``node`` spelled like class ``key`` (in function ``fn`` of class
        node ``cls`` of ``module``) is: ``"key"``, ``"other"`` (another class, or an attribute of an
        object that does not lead to a class) or ``"unknown"`` (a name that cannot be resolved)."""
        name = key[1]
        scope = self.scope(module, cls.name if cls is not None else None, fn) if fn is not None else None
        try:
            if isinstance(node, ast.Name) and scope is not None and name in scope["locals"]:
                # a name bound inside the function (`from .backend import Backend` there)
                local = self.r.local_classes(name, module, scope)
                if not local:
                    return "unknown"
                return "key" if local == {tuple(key)} else "other" if tuple(key) not in local else "unknown"
            spelled = dotted(node)
            sym = self.r.resolve_dotted(module, spelled) if spelled else None
        except Exception:
            sym = None
        if sym is not None and sym[0] == "class":
            return "key" if (sym[1], sym[2]) == tuple(key) else "other"
        return "other" if isinstance(node, ast.Attribute) else "unknown"

    def _constructed(self, key, param: str, hops: int) -> tuple[set, list]:
        from ..index.astutil import ref_chain
        from ..textio import display_path

        name = key[1]
        if hops >= MAX_HOPS:
            raise NotEstablished("recursion-limit", f"`{name}({param}=...)` is built more than {MAX_HOPS} calls away")
        files = self.rf.tree_files(name.encode())
        if files is None:
            raise NotEstablished("syntax-error", f"a file that may construct `{name}` cannot be read or parsed")
        init = None
        for path, module, tree, _lines in files:
            if module == key[0]:
                for node in tree.body:
                    if isinstance(node, ast.ClassDef) and node.name == name:
                        text = ast.unparse(node)
                        if "cls(" in text or "type(self)(" in text or "__class__(" in text or "__new__" in text:
                            raise NotEstablished("receiver-unresolved",
                                                 f"`{name}` may construct itself (`cls(...)`, `__new__`)")
                        init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
                                    None)
        if init is None or param not in positional(init):
            raise NotEstablished("receiver-unresolved", f"`{name}.__init__` with a parameter `{param}` was not found")
        position = positional(init).index(param)
        classes: set = set()
        sites = []
        for path, module, tree, _lines in files:
            for node, parent, cls, fn, skip in name_uses(tree, name):
                if skip:
                    continue
                where = f"{display_path(path)}:{node.lineno}"
                which = self.which(node, key, module, cls, fn)
                if which == "other":
                    continue  # another class of the same name, or another object's attribute
                if which == "unknown":
                    raise NotEstablished("receiver-unresolved",
                                         f"`{name}` at {where} cannot be resolved (it may be the class)")
                if isinstance(parent, ast.ClassDef):
                    raise NotEstablished("receiver-unresolved", f"`{name}` is subclassed at {where}")
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    raise NotEstablished("receiver-unresolved",
                                         f"`{name}` is used as a value at {where} (a registry, a factory "
                                         f"argument), so not every construction of it can be seen")
                arg = argument(parent, position, param)
                if arg is None or arg is ...:
                    raise NotEstablished("receiver-unresolved",
                                         f"`{name}(...)` at {where} passes `{param}` "
                                         f"{'through *args / **kwargs' if arg is ... else 'by its default'}")
                chain = ref_chain(arg)
                if chain is None or fn is None:
                    raise NotEstablished("receiver-unresolved",
                                         f"`{name}(...)` at {where} passes an expression as `{param}`")
                got, _ = self.classes(chain, module, cls, fn, hops + 1)
                classes |= got
                sites.append(f"`{name}({ast.unparse(arg)})` in `{qual(cls, fn)}` at {where}")
        if not sites:
            raise NotEstablished("receiver-unresolved", f"no construction of `{name}` was found in the tree")
        names = " | ".join(sorted(k[1] for k in classes if k[0] != "builtins"))
        more = f" and {len(sites) - 1} more" if len(sites) > 1 else ""
        return classes, [f"`{param}` is a `{names}`: every construction of `{name}` in the tree passes one "
                         f"({sites[0]}{more})"]

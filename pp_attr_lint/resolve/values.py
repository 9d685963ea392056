"""What a value or a receiver is: the classes an assigned value, an annotation, a call's result or
a receiver chain (``self.a.b``, local aliases, annotated parameters) may be an instance of, read
from the per-file summaries.  A mixin of :class:`pp_attr_lint.resolve.Resolver`, whose lookups,
MRO and attribute questions it asks; it fails the resolver's one way (``None``, the reason in
``why``)."""

from __future__ import annotations

import fnmatch

from ..settings import Factory
from ..value_words import value_text
from .keys import EXTERNAL, NONE_KEY, ClassKey, Unresolved


class ValueReading:
    """Value and receiver questions of :class:`pp_attr_lint.resolve.Resolver`."""

    def resolve_ann(self, module: str, ann: str | None) -> set[ClassKey] | None:
        """The classes an annotation string of :mod:`pp_attr_lint.index.summary` admits: ``{cls}``, plus
        :data:`NONE_KEY` for ``"?X"`` (``Optional[X]``, ``X | None``, a ``None`` default)."""
        if ann is None:
            return self._fail("receiver-unresolved", "no class annotation")
        optional = ann.startswith("?")
        ck = self.resolve_class(module, ann.lstrip("?"))
        if ck is None:
            return None
        return {ck, NONE_KEY} if optional else {ck}

    def value_candidates(self, desc: tuple, module: str, cls: ClassKey | None, scope: dict | None, depth: int = 0,
                         inst: ClassKey | None = None) -> set[ClassKey] | None:
        """Classes an assigned value may be an instance of (see :mod:`pp_attr_lint.index.summary` for
        value descriptors; :data:`NONE_KEY` for ``None``).  ``inst`` is the class of ``self``
        (for ``self.build(...)``; default ``cls``).  ``None`` when unresolved (reason in
        :attr:`why`)."""
        if depth > 12:
            return self._cutoff("a value followed through more than 12 steps")
        kind = desc[0]
        if kind == "none":
            return {NONE_KEY}
        if kind == "call" and scope is not None and cls is not None and scope.get("self") \
                and desc[1].startswith(scope["self"] + ".") and desc[1].count(".") == 1 \
                and scope["self"] not in scope["locals"]:
            return self._method_returns(inst or cls, desc[1].split(".", 1)[1], depth)
        if kind in ("call", "ann") and scope is not None:
            head = desc[1].lstrip("?").split(".", 1)[0]
            if head in scope["locals"] and head not in scope["params"] and desc[1].lstrip("?") == head:
                # `from .pool import Pool` or `pool_cls = A if c else B` in the function, then `Pool(...)`
                classes = self._local_classes(head, module, scope)
                if classes is None:
                    return None
                return classes | {NONE_KEY} if desc[1].startswith("?") else classes
            if kind == "call" and "." in desc[1] and (head == scope.get("self") or head in scope["locals"]
                                                        or head in scope["params"]):
                # `self.builder.build(...)`, `factory.make(...)`: the method of the receiver's classes
                *prefix, meth = desc[1].split(".")
                owners = self.chain_candidates(tuple(prefix), module, cls, scope, depth + 1)
                if owners is None:
                    return None
                out: set[ClassKey] = set()
                for ok in sorted(owners - {NONE_KEY}):
                    got = self._method_returns(ok, meth, depth)
                    if got is None:
                        return None
                    out |= got
                return out or self._fail("receiver-unresolved", f"`{desc[1]}(...)`: the receiver is only ever None")
            if head in scope["locals"] or (kind == "call" and head in scope["params"]):
                # `Cls = Other` inside the function shadows the module's class
                return self._fail("receiver-unresolved", f"`{head}` is a local name or parameter")
        if kind == "call":
            callee, kwargs = desc[1], desc[2]
            fac = self._factory(module, callee)
            if fac is not None:
                archs = kwargs.get(fac.keyword)
                if not archs:
                    return self._fail("receiver-unresolved", f"`{callee}(...)` without literal `{fac.keyword}`")
                out: set[ClassKey] = set()
                for arch in archs:
                    ck = self.registry_class(fac, arch)
                    if ck is None:
                        return self._fail("module-not-found" if fac.registry_module not in self._registry
                                          or not self._registry[fac.registry_module] else "receiver-unresolved",
                                          f"architecture `{arch}` not found in {fac.registry_module}")
                    out.add(ck)
                return out
            sym = self.resolve_dotted(module, callee)
            if sym is not None and sym[0] == "function":
                s = self.src.summary(sym[1])
                fscope = s["functions"].get(sym[2]) if s else None
                if fscope is None:
                    return self._fail("receiver-unresolved", f"`{callee}` is not a plain function")
                return self._returns(sym[1], None, fscope, depth, callee)
            if sym is not None and sym[0] == "class":
                return {(sym[1], sym[2])}
            return self.resolve_class(module, callee) if sym is not None else None
        if kind == "ann":
            return self.resolve_ann(module, desc[1])
        if kind == "ref":
            return self.chain_candidates(desc[1], module, cls, scope, depth + 1)
        return self._opaque_fail(value_text(desc))

    def local_classes(self, head: str, module: str, scope: dict) -> set[ClassKey] | None:
        """The classes local name ``head`` of function scope ``scope`` (of ``module``) is bound to,
        when every binding is a class (an import inside the function, ``cls = A if c else B``);
        ``None`` when one is not (the reason in :attr:`why`)."""
        return self._local_classes(head, module, scope)

    def _local_classes(self, head: str, module: str, scope: dict) -> set[ClassKey] | None:
        """The classes a local name of ``scope`` is bound to, when every binding is a class: an
        import inside the function or a module-level class name (``cls = A if c else B``)."""
        out: set[ClassKey] = set()
        for d in scope["locals"][head]:
            if d[0] == "import":
                _, target, name, level = d
                absm = self._abs_module(module, target, level)
                if absm is None:
                    return self._fail("relative-import", f"`from {'.' * level}{target} import {name}` in {module} "
                                      "goes beyond its top-level package")
                if self.src.summary(absm) is None:
                    return self._missing(absm)
                sym = self.lookup(absm, name)
            elif d[0] == "ref" and len(d[1]) == 1 and d[1][0] not in scope["locals"] and d[1][0] not in scope["params"]:
                sym = self.lookup(module, d[1][0])
            else:
                return self._fail("receiver-unresolved", f"`{head}` is a local name bound to a value that is not a class")
            if sym is None:
                return None
            if sym[0] != "class":
                return self._fail("receiver-unresolved", f"`{head}` is bound to a {sym[0]}, not a class")
            out.add((sym[1], sym[2]))
        return out or None

    def _method_returns(self, key: ClassKey, name: str, depth: int) -> set[ClassKey] | None:
        """What ``self.<name>(...)`` returns on an instance of ``key`` (the first class on its MRO
        that defines it; see :meth:`_returns`)."""
        try:
            for entry in self.mro(key):
                if entry[0] == EXTERNAL:
                    break
                rec = self.class_record(entry)
                if name in rec["methods"] and name in rec["body_names"]:
                    return self._returns(entry[0], entry, rec["methods"][name], depth, f"{entry[1]}.{name}")
                if name in rec.get("class_values", {}) and not self._instance_sets(key, name):
                    # `model_cls = Inner` in the class body, `self.model = self.model_cls(...)`
                    return self.value_candidates(("call", rec["class_values"][name], {}), entry[0], None, None, depth + 1)
                if name in rec["body_names"] or name in rec["properties"] or name in rec["annotations"]:
                    break
        except Unresolved as e:
            return self._fail(e.reason, e.detail, e.path)
        return self._fail("receiver-unresolved", f"`self.{name}(...)`: no plain method `{name}` on {key[1]}")

    def _instance_sets(self, key: ClassKey, name: str) -> bool:
        """Whether a method of a class on ``key``'s MRO assigns ``self.<name>``."""
        return any(name in scope["assigns"] for e in self.mro(key) if e[0] != EXTERNAL
                   for scope in self.class_record(e)["methods"].values())

    def _returns(self, module: str, cls: ClassKey | None, scope: dict, depth: int, what: str) -> set[ClassKey] | None:
        """The classes a function or method returns: the union over its ``return`` statements
        (constructor calls, parameters annotated with a class, other factories) when all resolve,
        else its return annotation."""
        out: set[ClassKey] = set()
        descs = scope.get("returns") or []
        for d in descs:
            got = self.value_candidates(d, module, cls, scope, depth + 1)
            if got is None:
                out = set()
                break
            out |= got
        if out - {NONE_KEY}:
            return out
        if scope.get("return_ann"):
            return self.resolve_ann(module, scope["return_ann"])
        if not descs:
            return self._fail("receiver-unresolved", f"`{what}` has no return statement or annotation")
        return None

    def _factory(self, module: str, callee: str) -> Factory | None:
        """The factory ``callee`` (as written in ``module``) calls, bound to the top-level package
        that defines it (:meth:`_top_of`); ``None`` when it is no factory."""
        last = callee.rsplit(".", 1)[-1]
        for fac in self.settings.factories:
            if fnmatch.fnmatchcase(last, fac.name):
                sym = self.resolve_dotted(module, callee)
                if sym is not None and sym[0] == "class":
                    return None  # a class that happens to share the factory's name
                return fac.bound(self._top_of(module, callee, sym))
        return None


    def chain_candidates(self, chain: tuple[str, ...], module: str, cls: ClassKey | None, scope: dict | None, depth: int = 0) -> set[ClassKey] | None:
        """Classes the receiver ``chain`` (``("self", "language_model")``) may be, read inside
        ``scope`` (a method of ``cls`` or a module function of ``module``); :data:`NONE_KEY`
        among them when the last step may be ``None``.  ``None`` when unresolved (reason in
        :attr:`why`)."""
        if depth > 12:
            return self._cutoff(f"`{'.'.join(chain)}` followed through more than 12 steps")
        if not chain:
            return self._fail("receiver-unresolved", "an empty receiver")
        head, rest = chain[0], chain[1:]
        current: set[ClassKey] | None
        if scope is not None and cls is not None and head == scope.get("self") and head not in scope["locals"]:
            current = {cls}
        elif scope is not None and head in scope["locals"]:
            if head in scope["params"]:
                return self._fail("receiver-unresolved", f"parameter `{head}` is re-bound in the function")
            current = set()
            for d in scope["locals"][head]:
                if d[0] == "ref" and d[1][0] == head:
                    return self._fail("receiver-unresolved", f"`{head}` is re-bound from itself")
                c = self.value_candidates(d, module, cls, scope, depth + 1)
                if c is None:
                    return self._local_fail(head, d)
                current |= c
            if not current - {NONE_KEY}:
                return self._fail("receiver-unresolved", f"`{head}` is only ever None")
        elif scope is not None and head in scope["params"]:
            if scope["params"][head] is None:
                return self._fail("receiver-unresolved", f"parameter `{head}` has no class annotation")
            current = self.resolve_ann(module, scope["params"][head])
            if current is None:
                return None
        else:
            return self._fail("receiver-unresolved", f"`{head}` is a module-level or enclosing name")
        for attr in rest:
            nxt: set[ClassKey] = set()
            for ck in sorted(current):
                if ck == NONE_KEY:
                    continue  # `None.attr` raises before the read: that branch never reaches it
                r = self.attr_candidates(ck, attr, depth + 1)
                if r is None:
                    return None
                nxt |= r[0]
            current = nxt
        return current

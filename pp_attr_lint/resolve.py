"""Resolve: what a name, a class and a receiver expression are, across the files of a project.

Input is the per-file summaries of :mod:`pp_attr_lint.index`, loaded lazily through a
:class:`SummarySource` (so only the files a finding can depend on are read).  Output is
*class keys* ``(module, class_name)`` or ``None`` when something cannot be resolved; every caller
treats ``None`` as "stay silent" (precision over recall).

The semantics follow CPython and ``torch.nn.Module``:

* the MRO is the C3 linearization of the bases;
* instance attributes come from the ``__init__`` methods that really execute: the first
  ``__init__`` on the MRO, then whatever it reaches with ``super().__init__()`` (next class after
  the *calling* class on the instance's MRO), ``super(P, self).__init__()`` (next after ``P``,
  so ``P.__init__`` is skipped) or ``B.__init__(self)``.  ``torch.nn.Module.__init__`` calls no
  further ``__init__`` (``call_super_init`` is ``False`` by default, torch/nn/modules/module.py), so
  a chain that reaches it, or ``object``, stops there.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Protocol

from .settings import Factory, Settings

ClassKey = tuple[str, str]  # (module, class name)


class Unresolved(Exception):
    """Raised inside the resolver when a fact cannot be established; callers stay silent."""


class SummarySource(Protocol):
    def summary(self, module: str) -> dict | None:  # pragma: no cover - protocol
        """The summary of ``module`` or ``None`` when it is not in the project (or does not parse)."""

    def is_package(self, module: str) -> bool:  # pragma: no cover - protocol
        """Whether ``module`` is a package (an ``__init__.py``)."""

    def path(self, module: str) -> str | None:  # pragma: no cover - protocol
        """The file of ``module``."""

    def in_checked_root(self, module: str) -> bool:  # pragma: no cover - protocol
        """Whether ``module`` lies in the folder of a checked file's top package."""


@dataclass
class Where:
    """Where an attribute or a value comes from, for messages."""

    module: str
    path: str | None
    line: int
    what: str


EXTERNAL = "<external>"


class Resolver:
    """Answers questions about classes and receivers; memoizes everything per run."""

    def __init__(self, source: SummarySource, settings: Settings):
        self.src = source
        self.settings = settings
        self._mro: dict[ClassKey, Any] = {}
        self._lookup_memo: dict[tuple[str, str], Any] = {}
        self._registry: dict[str, dict[str, tuple[str, str]] | None] = {}
        self._memo: dict[tuple, Any] = {}

    # -- names ---------------------------------------------------------------------------------
    def _abs_module(self, module: str, target: str, level: int) -> str | None:
        if level == 0:
            return target
        parts = module.split(".")
        if not self.src.is_package(module):
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        if target:
            return f"{base}.{target}" if base else target
        return base or None

    def lookup(self, module: str, name: str, _depth: int = 0) -> tuple | None:
        """Resolve ``name`` as seen at the top level of ``module``.

        Returns ``("class", module, name)``, ``("module", name)``, ``("external", qualified_name)``
        or ``None`` when the name is not found or not understood.
        """
        key = (module, name)
        if key in self._lookup_memo:
            return self._lookup_memo[key]
        self._lookup_memo[key] = None  # cycle guard
        result = self._lookup(module, name, _depth)
        self._lookup_memo[key] = result
        return result

    def _lookup(self, module: str, name: str, depth: int) -> tuple | None:
        if depth > 30:
            return None
        s = self.src.summary(module)
        if s is None:
            return None
        if name in s.get("rebound", ()):
            return None  # bound twice at module level: which binding wins depends on the run
        if (name in s["classes"] or name in s["functions"] or name in s["imports"] or name in s["aliases"]) and any(
            self._star_may_bind(module, target, level, name, depth) for target, level in s.get("star_imports", [])
        ):
            return None  # a `from m import *` may rebind it
        if name in s["classes"]:
            return ("class", module, name)
        if name in s["functions"]:
            return ("function", module, name)
        if name in s["imports"]:
            target, attr, level = s["imports"][name]
            absm = self._abs_module(module, target, level)
            if absm is None:
                return None
            if attr is None:
                return self._module_or_external(absm)
            if self.src.summary(absm) is not None:
                found = self.lookup(absm, attr, depth + 1)
                if found is not None:
                    return found
                sub = f"{absm}.{attr}"
                if self.src.summary(sub) is not None:
                    return ("module", sub)
                return None
            if self._in_project_namespace(absm):
                sub = f"{absm}.{attr}"
                if self.src.summary(sub) is not None:
                    return ("module", sub)
                return None
            return ("external", f"{absm}.{attr}")
        if name in s["aliases"]:
            return self.resolve_dotted(module, s["aliases"][name], depth + 1)
        star_found = []
        for target, level in s.get("star_imports", []):
            absm = self._abs_module(module, target, level)
            if absm and self.src.summary(absm) is not None:
                found = self.lookup(absm, name, depth + 1)
                if found is not None:
                    star_found.append(found)
        if star_found:
            # several `from m import *` that all provide the name: the last one wins at run time,
            # unless they agree, stay silent
            return star_found[0] if all(f == star_found[0] for f in star_found) else None
        if name == "object":
            return ("external", "builtins.object")
        return None

    def _star_may_bind(self, module: str, target: str, level: int, name: str, depth: int) -> bool:
        absm = self._abs_module(module, target, level)
        if absm is None:
            return True
        if self.src.summary(absm) is None:
            return not self._known_external(f"{absm}.{name}") and absm.split(".")[0] == module.split(".")[0]
        return self.lookup(absm, name, depth + 1) is not None

    def _in_project_namespace(self, module: str) -> bool:
        """A module missing from the project whose package is in it is *not* external."""
        parts = module.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if self.src.summary(".".join(parts[:i])) is not None:
                return True
        return False

    def _module_or_external(self, absm: str) -> tuple:
        if self.src.summary(absm) is not None:
            return ("module", absm)
        return ("external", absm)

    def resolve_dotted(self, module: str, dotted: str, depth: int = 0) -> tuple | None:
        """Resolve ``a.b.C`` as written in ``module`` (see :meth:`lookup` for the result)."""
        first, *rest = dotted.split(".")
        sym = self.lookup(module, first, depth)
        for part in rest:
            if sym is None:
                return None
            if sym[0] == "module":
                parent = sym[1]
                sym = self.lookup(parent, part, depth + 1)
                if sym is None and self.src.summary(f"{parent}.{part}") is not None:
                    sym = ("module", f"{parent}.{part}")
            elif sym[0] == "external":
                sym = ("external", f"{sym[1]}.{part}")
            elif sym[0] == "class" and f"{sym[2]}.{part}" in (self.src.summary(sym[1]) or {}).get("classes", {}):
                sym = ("class", sym[1], f"{sym[2]}.{part}")  # a nested class
            else:
                return None
        if (
            sym is not None
            and sym[0] == "class"
            and self._known_external(f"{sym[1]}.{sym[2]}", exact=True)
            and not self.src.in_checked_root(sym[1])
        ):
            # torch.nn.Module and friends stay what the rule says they are when their source is
            # only reachable through --src (a site-packages folder); a copy that sits beside the
            # checked code is read like the rest of it
            return ("external", f"{sym[1]}.{sym[2]}")
        return sym

    def resolve_class(self, module: str, dotted: str | None) -> ClassKey | None:
        if dotted is None:
            return None
        sym = self.resolve_dotted(module, dotted)
        if sym is not None and sym[0] == "class":
            return (sym[1], sym[2])
        return None

    def class_record(self, key: ClassKey) -> dict:
        s = self.src.summary(key[0])
        if s is None or key[1] not in s["classes"]:
            raise Unresolved(f"class {key[1]} not found in {key[0]}")
        return s["classes"][key[1]]

    # -- MRO -----------------------------------------------------------------------------------
    def _known_external(self, qualified: str, exact: bool = False) -> bool:
        """Whether ``qualified`` is a base the rule declares attribute-less.  ``exact``: only
        patterns without wildcards (a project class that merely matches ``Supports*`` is read from
        its source instead)."""
        if exact:
            return qualified in self.settings.attributeless_bases
        return any(fnmatch.fnmatchcase(qualified, pat) for pat in self.settings.attributeless_bases)

    def mro(self, key: ClassKey) -> list:
        """The C3 MRO of ``key``: class keys, and ``(EXTERNAL, qualified)`` for known
        attribute-less bases outside the project.  Raises :class:`Unresolved`."""
        memo = self._mro.get(key)
        if memo is not None:
            if isinstance(memo, Unresolved):
                raise memo
            if memo == "computing":
                raise Unresolved(f"inheritance cycle at {key[1]}")
            return memo
        self._mro[key] = "computing"
        try:
            rec = self.class_record(key)
            base_mros = []
            bases = []
            for b in rec["bases"]:
                if b is None:
                    raise Unresolved(f"{key[1]} has a base that is not a plain name")
                sym = None
                if "." in key[1]:  # a nested class: its bases are looked up in the enclosing body first
                    outer = key[1].rsplit(".", 1)[0]
                    if f"{outer}.{b}" in self.src.summary(key[0])["classes"]:  # type: ignore[index]
                        sym = ("class", key[0], f"{outer}.{b}")
                if sym is None:
                    sym = self.resolve_dotted(key[0], b)
                if sym is None:
                    raise Unresolved(f"base {b} of {key[1]} cannot be resolved")
                if sym[0] == "class":
                    bk = (sym[1], sym[2])
                    bases.append(bk)
                    base_mros.append(list(self.mro(bk)))
                elif sym[0] == "external" and self._known_external(sym[1]):
                    ext = (EXTERNAL, sym[1])
                    bases.append(ext)
                    base_mros.append([ext])
                else:
                    raise Unresolved(f"base {b} of {key[1]} is outside the project ({sym[1]})")
            result = [key] + _c3_merge(base_mros + [list(bases)])
        except Unresolved as e:
            self._mro[key] = e
            raise
        self._mro[key] = result
        return result

    def check_resolved(self, key: ClassKey) -> None:
        """Raise :class:`Unresolved` unless every class on the MRO is understood: resolved bases,
        only transparent decorators, no metaclass or ``__init_subclass__`` magic."""
        for entry in self.mro(key):
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            for d in rec["decorators"]:
                if d is None or not any(
                    fnmatch.fnmatchcase(d, pat) or fnmatch.fnmatchcase(d.rsplit(".", 1)[-1], pat)
                    for pat in self.settings.transparent_decorators
                ):
                    raise Unresolved(f"{entry[1]} has decorator {d}")
            if any(k not in (None,) for k in rec["keywords"]):
                raise Unresolved(f"{entry[1]} has class keywords {rec['keywords']}")

    # -- __init__ chains -----------------------------------------------------------------------
    def executed_inits(self, key: ClassKey) -> list[tuple[ClassKey, dict]]:
        """Memoized :meth:`_executed_inits`."""
        memo = self._memo.get(("inits", key))
        if memo is None:
            try:
                memo = self._executed_inits(key)
            except Unresolved as e:
                memo = e
            self._memo[("inits", key)] = memo
        if isinstance(memo, Unresolved):
            raise memo
        return memo

    def _executed_inits(self, key: ClassKey) -> list[tuple[ClassKey, dict]]:
        """The ``__init__`` methods that run when ``key`` is instantiated, in call order.

        Returns ``[(defining_class, method_scope), ...]``.  Raises :class:`Unresolved` when a call
        in the chain is not understood.
        """
        mro = self.mro(key)
        out: list[tuple[ClassKey, dict]] = []
        seen: set[ClassKey] = set()

        def run_from(start: int) -> None:
            for i in range(start, len(mro)):
                entry = mro[i]
                if entry[0] == EXTERNAL:
                    return  # object / nn.Module / Protocol: nothing project-specific runs after it
                rec = self.class_record(entry)
                if "__init__" in rec["methods"]:
                    run_at(i, entry, rec["methods"]["__init__"])
                    return
                if "__init__" in rec["body_names"] or "__init__" in rec["properties"]:
                    raise Unresolved(f"{entry[1]}.__init__ is not a plain method")

        def run_at(i: int, entry: ClassKey, scope: dict) -> None:
            if entry in seen:
                return
            seen.add(entry)
            out.append((entry, scope))
            for call in scope["init_calls"]:
                if call[0] == "super" and call[1] is None:
                    run_from(i + 1)
                elif call[0] == "super":
                    target = self._resolve_in_mro(entry[0], call[1], mro)
                    run_from(target + 1)
                elif call[0] == "explicit":
                    sym = self.resolve_dotted(entry[0], call[1])
                    if sym is not None and sym[0] == "external" and self._known_external(sym[1]):
                        continue  # nn.Module.__init__(self): no project attributes
                    if sym is None or sym[0] != "class":
                        raise Unresolved(f"cannot resolve {call[1]}.__init__")
                    for j, e in enumerate(self.mro((sym[1], sym[2]))):
                        if e[0] == EXTERNAL:
                            break
                        r = self.class_record(e)
                        if "__init__" in r["methods"]:
                            if e not in mro:
                                raise Unresolved(f"{e[1]}.__init__ called on a non-base")
                            run_at(mro.index(e), e, r["methods"]["__init__"])
                            break
                else:
                    raise Unresolved("an __init__ call that is not understood")

        run_from(0)
        return out

    def _resolve_in_mro(self, module: str, dotted: str | None, mro: list) -> int:
        sym = self.resolve_dotted(module, dotted) if dotted else None
        if sym is None:
            raise Unresolved(f"cannot resolve super({dotted}, self)")
        entry = (sym[1], sym[2]) if sym[0] == "class" else (EXTERNAL, sym[1])
        if entry not in mro:
            raise Unresolved(f"{dotted} is not on the MRO")
        return mro.index(entry)

    # -- attributes ----------------------------------------------------------------------------
    def attribute_status(self, key: ClassKey, attr: str) -> str:
        """``"absent"`` when no instance of ``key`` can have ``attr`` as set by project code,
        ``"present"`` when some code may set or declare it, ``"unknown"`` when that cannot be told
        (``__getattr__``, ``setattr`` with a computed name, ``self.__dict__`` writes).
        Raises :class:`Unresolved` when the class or its ``__init__`` chain cannot be resolved."""
        memo = self._memo.get(("status", key, attr))
        if memo is None:
            try:
                memo = self._attribute_status(key, attr)
            except Unresolved as e:
                memo = e
            self._memo[("status", key, attr)] = memo
        if isinstance(memo, Unresolved):
            raise memo
        return memo

    def _attribute_status(self, key: ClassKey, attr: str) -> str:
        self.check_resolved(key)
        inits = self.executed_inits(key)
        if any(scope.get("passes_self") for _, scope in inits):
            return "unknown"  # `helper(self)` in an executed __init__ may set anything on it
        executed = {id(scope) for _, scope in inits}
        for entry in self.mro(key):
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            for special in ("__getattr__", "__getattribute__", "__setattr__", "__slots__", "__dict__"):
                if special in rec["methods"] or special in rec["body_names"]:
                    return "unknown"
            new = rec["methods"].get("__new__")
            if (new is not None and not new.get("new_benign")) or (new is None and "__new__" in rec["body_names"]):
                return "unknown"  # a __new__ that may set the attribute or return another object
            if attr in rec["body_names"] or attr in rec["properties"] or attr in rec["annotations"]:
                return "present"
            for mname, scope in rec["methods"].items():
                if scope["dynamic"]:
                    return "unknown"
                if mname == "__init__" and id(scope) not in executed:
                    continue  # skipped by super(Parent, self) / nn.Module.__init__(self)
                if attr in scope["assigns"]:
                    return "present"
        return "absent"

    def definition(self, key: ClassKey, attr: str) -> Where | None:
        """Where ``attr`` is definitely set for every instance of ``key``: in an executed
        ``__init__``, the class body or a property.  ``None`` when it is not (or unknown)."""
        try:
            inits = self.executed_inits(key)
            mro = self.mro(key)
        except Unresolved:
            return None
        for owner, scope in inits:
            if attr in scope["assigns"]:
                line = scope["assigns"][attr][0][0]
                return Where(owner[0], self.src.path(owner[0]), line, f"{owner[1]}.__init__")
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            if attr in rec["body_names"] or attr in rec["properties"]:
                return Where(entry[0], self.src.path(entry[0]), rec["line"], f"class {entry[1]}")
        return None

    def attr_candidates(self, key: ClassKey, attr: str, depth: int = 0) -> tuple[set[ClassKey], list[Where]] | None:
        """The classes ``self.<attr>`` may hold on an instance of ``key``: the union over every
        assignment ``self.<attr> = ...`` in any method of any class on its MRO (all branches),
        plus a class-level annotation.  ``None`` when any of them is not a resolvable class."""
        if depth > 8:
            return None
        mkey = ("attr", key, attr)
        if mkey in self._memo:
            return self._memo[mkey]
        self._memo[mkey] = None  # cycle guard
        result = self._attr_candidates(key, attr, depth)
        self._memo[mkey] = result
        return result

    def _attr_candidates(self, key: ClassKey, attr: str, depth: int) -> tuple[set[ClassKey], list[Where]] | None:
        try:
            mro = self.mro(key)
        except Unresolved:
            return None
        try:  # an __init__ that never runs for `key` (skipped by super(P, self)) assigns nothing
            executed: set[int] | None = {id(sc) for _, sc in self.executed_inits(key)}
        except Unresolved:
            executed = None
        found: set[ClassKey] = set()
        wheres: list[Where] = []
        any_assign = False
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            if attr in rec["body_names"] or attr in rec["properties"]:
                return None
            if attr in rec["annotations"]:
                ck = self.resolve_class(entry[0], rec["annotations"][attr])
                if ck is None:
                    return None
                found.add(ck)
                any_assign = True
            for mname, scope in rec["methods"].items():
                if scope["dynamic"]:
                    return None
                if mname == "__init__" and executed is not None and id(scope) not in executed:
                    continue
                for line, descs in scope["assigns"].get(attr, ()):
                    any_assign = True
                    for d in descs:
                        if d[0] == "none":
                            continue
                        cands = self.value_candidates(d, entry[0], entry, scope, depth + 1)
                        if cands is None:
                            return None
                        found |= cands
                        wheres.append(Where(entry[0], self.src.path(entry[0]), line, f"{entry[1]}.{attr}"))
        if not any_assign or not found:
            return None
        return found, wheres

    # -- values and receivers ------------------------------------------------------------------
    def value_candidates(self, desc: tuple, module: str, cls: ClassKey | None, scope: dict | None, depth: int = 0) -> set[ClassKey] | None:
        """Classes an assigned value may be an instance of (see :mod:`pp_attr_lint.index` for
        value descriptors).  ``None`` when unresolved."""
        kind = desc[0]
        if kind in ("call", "ann") and scope is not None:
            head = desc[1].split(".", 1)[0]
            if head in scope["locals"] or (kind == "call" and head in scope["params"]):
                return None  # `Cls = Other` inside the function shadows the module's class
        if kind == "call":
            callee, kwargs = desc[1], desc[2]
            fac = self._factory(module, callee)
            if fac is not None:
                archs = kwargs.get(fac.keyword)
                if not archs:
                    return None
                out: set[ClassKey] = set()
                for arch in archs:
                    ck = self.registry_class(fac, arch)
                    if ck is None:
                        return None
                    out.add(ck)
                return out
            ck = self.resolve_class(module, callee)
            return {ck} if ck is not None else None
        if kind == "ann":
            ck = self.resolve_class(module, desc[1])
            return {ck} if ck is not None else None
        if kind == "ref":
            return self.chain_candidates(desc[1], module, cls, scope, depth + 1)
        return None

    def _factory(self, module: str, callee: str) -> Factory | None:
        last = callee.rsplit(".", 1)[-1]
        for fac in self.settings.factories:
            if last == fac.name:
                sym = self.resolve_dotted(module, callee)
                if sym is not None and sym[0] == "class":
                    return None  # a class that happens to share the factory's name
                return fac
        return None

    def registry_class(self, fac: Factory, arch: str) -> ClassKey | None:
        """Resolve an architecture name through the registry tables to a class key."""
        if fac.registry_module not in self._registry:
            s = self.src.summary(fac.registry_module)
            table: dict[str, set] | None = None
            if s is not None:
                table = {}
                for tname, entries in s["tables"].items():
                    if fnmatch.fnmatchcase(tname, fac.tables):
                        for a, target in entries.items():
                            table.setdefault(a, set()).add(tuple(target))
            self._registry[fac.registry_module] = table  # type: ignore[assignment]
        table = self._registry[fac.registry_module]
        if not table or arch not in table or len(table[arch]) != 1:
            return None
        (modrel, clsname), = table[arch]
        mod = f"{fac.package}.{modrel}"
        ck = self.resolve_class(mod, clsname) if self.src.summary(mod) is not None else None
        return ck

    def chain_candidates(self, chain: tuple[str, ...], module: str, cls: ClassKey | None, scope: dict | None, depth: int = 0) -> set[ClassKey] | None:
        """Classes the receiver ``chain`` (``("self", "language_model")``) may be, read inside
        ``scope`` (a method of ``cls`` or a module function of ``module``)."""
        if depth > 12 or not chain:
            return None
        head, rest = chain[0], chain[1:]
        current: set[ClassKey] | None
        if scope is not None and cls is not None and head == scope.get("self") and head not in scope["locals"]:
            current = {cls}
        elif scope is not None and head in scope["locals"]:
            if head in scope["params"]:
                return None  # a parameter re-bound in the body
            current = set()
            for d in scope["locals"][head]:
                if d[0] == "none":
                    continue
                if d[0] == "ref" and d[1][0] == head:
                    return None
                c = self.value_candidates(d, module, cls, scope, depth + 1)
                if c is None:
                    return None
                current |= c
            if not current:
                return None
        elif scope is not None and head in scope["params"]:
            ck = self.resolve_class(module, scope["params"][head])
            if ck is None:
                return None
            current = {ck}
        else:
            return None
        for attr in rest:
            nxt: set[ClassKey] = set()
            for ck in current:
                r = self.attr_candidates(ck, attr, depth + 1)
                if r is None:
                    return None
                nxt |= r[0]
            current = nxt
        return current


def _c3_merge(seqs: list[list]) -> list:
    result = []
    seqs = [s for s in seqs if s]
    while seqs:
        for s in seqs:
            head = s[0]
            if not any(head in other[1:] for other in seqs):
                break
        else:
            raise Unresolved("inconsistent MRO")
        result.append(head)
        seqs = [[x for x in s if x != head] for s in seqs]
        seqs = [s for s in seqs if s]
    return result

"""Resolve: what a name, a class and a receiver expression are, across the files of a project.

Input is the per-file summaries of :mod:`pp_attr_lint.index.summary`, loaded lazily through a
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

What a value or a receiver chain is lives in :mod:`.values` (a mixin of :class:`Resolver`); the
vocabulary (class keys, :class:`Unresolved`, :class:`Where`, :class:`SummarySource`) in
:mod:`.keys`.
"""

from __future__ import annotations

import fnmatch
import sys
from contextlib import contextmanager
from typing import Any

from ..index.registry import registry_entries
from ..index.spec import MODULE_NAME_MARK
from ..settings import Factory, Settings
from ..unjudged import BROKEN_FILE
from ..value_words import attribute_detail, call_detail, name_detail
from .keys import EXTERNAL, NONE_KEY, ClassKey, SummarySource, Unresolved, Where
from .values import ValueReading

__all__ = ["EXTERNAL", "NONE_KEY", "ClassKey", "Resolver", "SummarySource", "Unresolved", "Where",
           "adds_no_attribute", "answers_held_names_only"]


# attribute questions (``self.x`` of a class) answered inside one another at most (a chain of
# attributes each built from the next); deeper ones are cut
_MAX_NESTED_ATTRS = 48




class Resolver(ValueReading):
    """Answers questions about classes and receivers; memoizes everything per run."""

    def __init__(self, source: SummarySource, settings: Settings):
        self.src = source
        self.settings = settings
        self._mro: dict[ClassKey, Any] = {}
        self._lookup_memo: dict[tuple[str, str], Any] = {}
        self._registry: dict[str, dict[str, tuple[str, str]] | None] = {}
        self._memo: dict[tuple, Any] = {}
        self._why_memo: dict[tuple, tuple] = {}
        # why the last question answered ``None``: (reason code, detail, path or None); read it
        # right after a call that returned ``None`` (see pp_attr_lint.unjudged)
        self.why: tuple[str, str, str | None] | None = None
        # depth cutoffs met so far: an answer reached through one depends on the depth its
        # question was asked at, so it is not memoized (it would answer a later question asked
        # nearer the start, and the reasons a run gives would depend on the order of its questions)
        self._cutoffs = 0
        self._nested_attrs = 0  # attribute questions being answered (see attr_candidates)
        self._opaque: set[str] = set()  # details of an unread value (whose value it is may be said)

    def _cutoff(self, detail: str) -> None:
        """Fail the current question at a depth limit (``recursion-limit``); returns ``None``."""
        self._cutoffs += 1
        return self._fail("recursion-limit", detail)

    @contextmanager
    def keeping_why(self):
        """A side question: whatever is asked inside the ``with`` block leaves :attr:`why` as it
        was before (its failure is not the reason of the answer being built)."""
        why = self.why
        try:
            yield self
        finally:
            self.why = why

    def _fail(self, reason: str, detail: str, path: str | None = None) -> None:
        """Record why the current question has no answer; returns ``None`` for ``return``."""
        self.why = (reason, detail, path)
        return None

    def _opaque_fail(self, detail: str, reason: str = "receiver-unresolved", path: str | None = None) -> None:
        """Fail at a value that is not followed (a detail of :mod:`pp_attr_lint.value_words`)."""
        self._opaque.add(detail)
        return self._fail(reason, detail, path)

    def _local_fail(self, head: str, desc: tuple) -> None:
        """Fail at local ``head`` bound to ``desc``, naming ``head`` where the reason met is an unread value."""
        if desc[0] in ("unknown", "import"):
            return self._opaque_fail(name_detail(head, desc))
        if desc[0] == "call" and self.why is not None and self.why[1] in self._opaque:
            return self._opaque_fail(call_detail(head, desc[1], self.why[1]), self.why[0], self.why[2])
        return None

    def _missing(self, module: str) -> None:
        """``None``, with the reason ``module`` has no summary (not found, does not parse)."""
        failure = getattr(self.src, "failure", None)
        self.why = failure(module) if failure else ("module-not-found", f"module `{module}` not found", None)
        return None

    # -- names ---------------------------------------------------------------------------------
    def absolute_module(self, module: str, target: str | None, level: int) -> str | None:
        """The module ``from {'.' * level}{target} import ...`` written in ``module`` names;
        ``None`` when it goes beyond the top-level package (a lone file has none)."""
        return self._abs_module(module, target, level)

    def _abs_module(self, module: str, target: str | None, level: int) -> str | None:
        if level == 0:
            return target
        parts = module.split(".")
        if not self.src.is_package(module):
            parts = parts[:-1]
        if level > len(parts):
            return None  # beyond the top-level package (a lone file has none)
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        if target:
            return f"{base}.{target}" if base else target
        return base or None

    def lookup(self, module: str, name: str, _depth: int = 0) -> tuple | None:
        """Resolve ``name`` as seen at the top level of ``module``.

        Returns ``("class", module, name)``, ``("module", name)``, ``("external", qualified_name)``
        or ``None`` when the name is not found or not understood."""
        key = (module, name)
        if key in self._lookup_memo:
            got = self._lookup_memo[key]
            if got is None:
                self.why = self._why_memo.get(("lookup", key), ("recursion-limit", f"`{name}` refers to itself", None))
            return got
        self._lookup_memo[key] = None  # cycle guard
        cutoffs = self._cutoffs
        result = self._lookup(module, name, _depth)
        if self._cutoffs != cutoffs:
            del self._lookup_memo[key]  # depends on the depth it was asked at
            return result
        self._lookup_memo[key] = result
        if result is None and self.why is not None:
            self._why_memo[("lookup", key)] = self.why
        return result

    def _lookup(self, module: str, name: str, depth: int) -> tuple | None:
        if depth > 30:
            return self._cutoff(f"more than 30 re-exports of `{name}`")
        s = self.src.summary(module)
        if s is None:
            return self._missing(module)
        if name in s.get("rebound", ()):
            # bound twice at module level: which binding wins depends on the run
            return self._fail("ambiguous", f"`{name}` is bound more than once in {module}")
        if (name in s["classes"] or name in s["functions"] or name in s["imports"] or name in s["aliases"]) and any(
            self._star_may_bind(module, target, level, name, depth) for target, level in s.get("star_imports", [])
        ):
            return self._fail("ambiguous", f"a `from ... import *` in {module} may rebind `{name}`")
        if name in s["classes"]:
            return ("class", module, name)
        if name in s["functions"]:
            return ("function", module, name)
        if name in s["imports"]:
            target, attr, level = s["imports"][name]
            absm = self._abs_module(module, target, level)
            if absm is None:
                return self._fail("relative-import", f"`from {'.' * level}{target} import {attr}` in {module} "
                                  "goes beyond its top-level package")
            if attr is None:
                return self._module_or_external(absm)
            if self.src.summary(absm) is not None:
                found = self.lookup(absm, attr, depth + 1)
                if found is not None:
                    return found
                sub = f"{absm}.{attr}"
                with self.keeping_why():
                    if self.src.summary(sub) is not None:
                        return ("module", sub)
                return None
            why = self.src.failure(absm) if hasattr(self.src, "failure") else None
            if why is not None and why[0] in BROKEN_FILE:
                self.why = why
                return None
            if level > 0 or self._in_project_namespace(absm):
                sub = f"{absm}.{attr}"
                if self.src.summary(sub) is not None:
                    return ("module", sub)
                return self._missing(absm)
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
        if s.get("star_imports"):
            return self._fail("module-not-found", f"`{name}` may come from a `from ... import *` of a module not found")
        return self._fail("receiver-unresolved", f"`{name}` is not a class, function or import of {module}")

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
        return ("module", absm) if self.src.summary(absm) is not None else ("external", absm)

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
                if sym is None:
                    with self.keeping_why():  # kept when no submodule of that name exists either
                        sym = ("module", f"{parent}.{part}") if self.src.summary(f"{parent}.{part}") is not None else None
            elif sym[0] == "external":
                sym = ("external", f"{sym[1]}.{part}")
            elif sym[0] == "class" and f"{sym[2]}.{part}" in (self.src.summary(sym[1]) or {}).get("classes", {}):
                sym = ("class", sym[1], f"{sym[2]}.{part}")  # a nested class
            else:
                return self._fail("receiver-unresolved", f"`{dotted}` reads an attribute of a class or function")
        if sym is not None and sym[0] == "class" and self._known_external(f"{sym[1]}.{sym[2]}", exact=True) \
                and not self.src.in_checked_root(sym[1]):
            # torch.nn.Module and friends stay what the rule says they are when their source is
            # only reachable through --src (a site-packages folder); a copy that sits beside the
            # checked code is read like the rest of it
            return ("external", f"{sym[1]}.{sym[2]}")
        return sym

    def resolve_class(self, module: str, dotted: str | None) -> ClassKey | None:
        sym = self.resolve_dotted(module, dotted) if dotted is not None else None
        if sym is not None and sym[0] == "class":
            return (sym[1], sym[2])
        if sym is not None and sym[0] == "external":
            return self._external(sym[1], "outside-code")
        if sym is not None:
            return self._fail("receiver-unresolved", f"`{dotted}` is a {sym[0]}, not a class")
        return None

    def _external(self, qualified: str, reason: str) -> None:
        """``None`` for a name outside the analysed code: ``module-not-found`` when no folder
        holds its top-level package, else ``reason``."""
        top = qualified.split(".", 1)[0]
        if self._known_external(qualified) or top in ("typing", "typing_extensions", "builtins", "collections"):
            # `x: nn.Module`, `x: Any`: says nothing about which class the value is
            return self._fail("receiver-unresolved", f"`{qualified}` does not tell which class the value is")
        if any(b.split(".", 1)[0] == top for b in self.settings.attributeless_bases):
            return self._fail(reason, f"`{qualified}` is outside the analysed code (`{top}` is never read from source)")
        if self.src.summary(top) is None and not self.src.is_package(top):
            if top in sys.stdlib_module_names:
                # nothing to install: what a standard-library call returns is not read
                return self._fail("receiver-unresolved", f"`{qualified}` is in the standard library, which is not read")
            return self._fail("module-not-found", f"`{qualified}`: module `{top}` not found")
        return self._fail(reason, f"`{qualified}` is outside the analysed code")

    def class_record(self, key: ClassKey) -> dict:
        s = self.src.summary(key[0])
        if s is None or key[1] not in s["classes"]:
            if s is None:
                self._missing(key[0])
                raise Unresolved(*self.why)  # type: ignore[misc]
            raise Unresolved("receiver-unresolved", f"class {key[1]} not found in {key[0]}")
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
                raise Unresolved("recursion-limit", f"inheritance cycle at {key[1]}")
            return memo
        self._mro[key] = "computing"
        try:
            rec = self.class_record(key)
            base_mros, bases = [], []
            for b in rec["bases"]:
                if b is None:
                    raise Unresolved("dynamic-class", f"{key[1]} has a base that is not a plain name")
                sym = None
                if "." in key[1]:  # a nested class: its bases are looked up in the enclosing body first
                    outer = key[1].rsplit(".", 1)[0]
                    if f"{outer}.{b}" in self.src.summary(key[0])["classes"]:  # type: ignore[index]
                        sym = ("class", key[0], f"{outer}.{b}")
                if sym is None:
                    sym = self.resolve_dotted(key[0], b)
                if sym is None:
                    reason, detail, path = self.why or ("unknown-base", "", None)
                    if reason in ("receiver-unresolved", "outside-code"):
                        reason = "unknown-base"
                    raise Unresolved(reason, f"base {b} of {key[1]}: {detail}", path)
                if sym[0] == "class":
                    bk = (sym[1], sym[2])
                    bases.append(bk)
                    base_mros.append(list(self.mro(bk)))
                elif sym[0] == "external" and self._known_external(sym[1]):
                    ext = (EXTERNAL, sym[1])
                    bases.append(ext)
                    base_mros.append([ext])
                elif sym[0] == "external":
                    self._external(sym[1], "unknown-base")
                    raise Unresolved(self.why[0], f"base {b} of {key[1]} ({sym[1]}) is outside the analysed "  # type: ignore[index]
                                     "code, and which attributes it adds cannot be read")
                else:
                    raise Unresolved("dynamic-class", f"base {b} of {key[1]} is a {sym[0]}, not a class")
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
                    raise Unresolved("dynamic-class", f"{entry[1]} has decorator {d}")
            if any(k not in (None,) for k in rec["keywords"]):
                raise Unresolved("dynamic-class", f"{entry[1]} has class keywords {rec['keywords']}")

    def may_derive(self, sub: ClassKey, key: ClassKey, _seen: set | None = None) -> bool:
        """Whether class ``sub`` may have project class ``key`` on its MRO, also when that MRO
        cannot be resolved: ``False`` only when every base of ``sub`` is known not to lead to
        ``key``, i.e. it resolves to a project class that does not, or to a name outside the
        analysed code (``transformers.PretrainedConfig``: such a class is no subclass of a class
        of the analysed code, whether or not its package is installed).  A base that is not a
        plain name, or that cannot be looked up inside the project, may lead to ``key``."""
        if sub == key:
            return True
        seen = set() if _seen is None else _seen
        if sub in seen:
            return False
        seen.add(sub)
        try:
            return key in self.mro(sub)
        except Unresolved:
            pass
        try:
            rec = self.class_record(sub)
        except Unresolved:
            return True
        for b in rec["bases"]:
            if b is None:
                return True
            outer = f"{sub[1].rsplit('.', 1)[0]}.{b}" if "." in sub[1] else None
            if outer is not None and outer in self.src.summary(sub[0])["classes"]:  # type: ignore[index]
                sym = ("class", sub[0], outer)  # a nested class's base in the enclosing body
            else:
                sym = self.resolve_dotted(sub[0], b)
            if sym is None:
                return True
            if sym[0] == "class":
                if self.may_derive((sym[1], sym[2]), key, seen):
                    return True
            elif sym[0] != "external":
                return True
        return False

    # -- __init__ chains -----------------------------------------------------------------------
    def executed_inits(self, key: ClassKey) -> list[tuple[ClassKey, dict]]:
        """Memoized :meth:`_executed_inits`."""
        memo = self._memo.get(("inits", key))
        if memo is None:
            cutoffs = self._cutoffs
            try:
                memo = self._executed_inits(key)
            except Unresolved as e:
                memo = e
            if self._cutoffs == cutoffs:  # else it depends on the depth it was asked at
                self._memo[("inits", key)] = memo
        if isinstance(memo, Unresolved):
            raise memo
        return memo

    def _executed_inits(self, key: ClassKey) -> list[tuple[ClassKey, dict]]:
        """The ``__init__`` methods that run when ``key`` is instantiated, in call order.

        Returns ``[(defining_class, method_scope), ...]``.  Raises :class:`Unresolved` when a call
        in the chain is not understood."""
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
                    raise Unresolved("dynamic-class", f"{entry[1]}.__init__ is not a plain method")

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
                        reason = self.why[0] if sym is None and self.why else "unknown-base"
                        raise Unresolved(reason, f"cannot resolve {call[1]}.__init__")
                    for j, e in enumerate(self.mro((sym[1], sym[2]))):
                        if e[0] == EXTERNAL:
                            break
                        r = self.class_record(e)
                        if "__init__" in r["methods"]:
                            if e not in mro:
                                raise Unresolved("dynamic-class", f"{e[1]}.__init__ called on a non-base")
                            run_at(mro.index(e), e, r["methods"]["__init__"])
                            break
                else:
                    raise Unresolved("dynamic-class", "an __init__ call that is not understood")

        run_from(0)
        return out

    def _resolve_in_mro(self, module: str, dotted: str | None, mro: list) -> int:
        sym = self.resolve_dotted(module, dotted) if dotted else None
        if sym is None:
            raise Unresolved(self.why[0] if self.why else "unknown-base", f"cannot resolve super({dotted}, self)")
        entry = (sym[1], sym[2]) if sym[0] == "class" else (EXTERNAL, sym[1])
        if entry not in mro:
            raise Unresolved("dynamic-class", f"{dotted} is not on the MRO")
        return mro.index(entry)

    # -- attributes ----------------------------------------------------------------------------
    def attribute_status(self, key: ClassKey, attr: str) -> str:
        """``"absent"`` when no instance of ``key`` can have ``attr`` as set by project code,
        ``"present"`` when some code may set or declare it, ``"unknown"`` when that cannot be told
        (``__getattr__``, ``setattr`` with a computed name, ``self.__dict__`` writes).
        Raises :class:`Unresolved` when the class or its ``__init__`` chain cannot be resolved."""
        mkey = ("status", key, attr)
        memo = self._memo.get(mkey)
        if memo is None:
            cutoffs = self._cutoffs
            try:
                memo = self._attribute_status(key, attr)
            except Unresolved as e:
                memo = e
            if self._cutoffs == cutoffs:  # else it depends on the depth it was asked at
                self._memo[mkey] = memo
                if memo == "unknown":
                    self._why_memo[mkey] = self.why
        elif memo == "unknown":
            # the reason of this answer, not of whatever question was asked last
            self.why = self._why_memo.get(mkey, self.why)
        if isinstance(memo, Unresolved):
            raise memo
        return memo

    def _attribute_status(self, key: ClassKey, attr: str) -> str:
        self.check_resolved(key)
        inits = self.executed_inits(key)
        if any(scope.get("passes_self") for _, scope in inits):
            # `helper(self)` in an executed __init__ may set anything on it
            return self._unknown(f"an executed __init__ of {key[1]} passes `self` to a function")
        executed = {id(scope) for _, scope in inits}
        for entry in self.mro(key):
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            for special in ("__getattr__", "__getattribute__", "__setattr__", "__slots__", "__dict__"):
                if (special in rec["methods"] or special in rec["body_names"]) and not adds_no_attribute(rec, special):
                    return self._unknown(f"{entry[1]} defines `{special}`")
            new = rec["methods"].get("__new__")
            if (new is not None and not new.get("new_benign")) or (new is None and "__new__" in rec["body_names"]):
                # a __new__ that may set the attribute or return another object
                return self._unknown(f"{entry[1]}.__new__ may set attributes or return another object")
            if attr in rec["body_names"] or attr in rec["properties"] or attr in rec["annotations"]:
                return "present"
            for mname, scope in rec["methods"].items():
                if scope["dynamic"]:
                    return self._unknown(f"{entry[1]}.{mname} sets attributes dynamically")
                if mname == "__init__" and id(scope) not in executed:
                    continue  # skipped by super(Parent, self) / nn.Module.__init__(self)
                if attr in scope["assigns"]:
                    return "present"
        return "absent"

    def _unknown(self, detail: str) -> str:
        self.why = ("dynamic-class", detail, None)
        return "unknown"

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
        or, where none assigns anything but ``None``, what the class-level annotations admit;
        :data:`NONE_KEY` among them when it may be ``None``.
        ``None`` when any of them is not a resolvable class (the reason in :attr:`why`).

        Each question is answered with a budget of its own (the values it follows start at depth
        0, whatever ``depth`` it was asked at), so that the answer is the same whether it is
        computed here or was memoized by an earlier question: a run's verdicts do not depend on
        the order its files are checked in (``-j``, a file alone).  Questions nested more than
        :data:`_MAX_NESTED_ATTRS` deep are cut (``recursion-limit``)."""
        mkey = ("attr", key, attr)
        if mkey in self._memo:
            got = self._memo[mkey]
            if got is None:
                self.why = self._why_memo.get(mkey, ("recursion-limit", f"`{key[1]}.{attr}` refers to itself", None))
            return got
        if self._nested_attrs >= _MAX_NESTED_ATTRS:
            return self._cutoff(f"`{key[1]}.{attr}` is asked inside more than {_MAX_NESTED_ATTRS} other attributes")
        self._memo[mkey] = None  # cycle guard
        cutoffs = self._cutoffs
        self._nested_attrs += 1
        try:
            result = self._attr_candidates(key, attr, 0)
        finally:
            self._nested_attrs -= 1
        if self._cutoffs != cutoffs:
            del self._memo[mkey]  # depends on the depth it was asked at
            return result
        self._memo[mkey] = result
        if result is None and self.why is not None:
            self._why_memo[mkey] = self.why
        return result

    def _attr_candidates(self, key: ClassKey, attr: str, depth: int) -> tuple[set[ClassKey], list[Where]] | None:
        try:
            mro = self.mro(key)
        except Unresolved as e:
            return self._fail(e.reason, e.detail, e.path)
        try:  # an __init__ that never runs for `key` (skipped by super(P, self)) assigns nothing
            executed: set[int] | None = {id(sc) for _, sc in self.executed_inits(key)}
        except Unresolved:
            executed = None
        found: set[ClassKey] = set()
        wheres: list[Where] = []
        any_assign = False
        annotated: list[tuple[str, str]] = []  # (module, annotation) of the class-level annotations
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            rec = self.class_record(entry)
            if attr in rec["body_names"] or attr in rec["properties"]:
                return self._fail("receiver-unresolved", f"`{entry[1]}.{attr}` is a class attribute or property")
            if attr in rec["annotations"]:
                annotated.append((entry[0], rec["annotations"][attr]))
            for mname, scope in rec["methods"].items():
                if scope["dynamic"]:
                    return self._fail("dynamic-class", f"{entry[1]}.{mname} sets attributes dynamically")
                if mname == "__init__" and executed is not None and id(scope) not in executed:
                    continue
                for line, descs in scope["assigns"].get(attr, ()):
                    any_assign = True
                    for d in descs:
                        if d[0] == "none":
                            found.add(NONE_KEY)
                            continue
                        cands = self.value_candidates(d, entry[0], entry, scope, depth + 1, inst=key)
                        if cands is None:
                            if d[0] == "unknown":
                                return self._opaque_fail(attribute_detail(entry[1], attr, d))
                            return self._at_store(entry[1], mname, attr, line)
                        found |= cands
                        wheres.append(Where(entry[0], self.src.path(entry[0]), line, f"{entry[1]}.{attr}"))
        # a class-level annotation (`model: nn.Module` on a mixin) says what the attribute holds
        # only where no method that runs assigns it anything but None
        if not found - {NONE_KEY}:
            for module, ann in annotated:
                cks = self.resolve_ann(module, ann)
                if cks is None:
                    return None
                found |= cks
                any_assign = True
        if not any_assign:
            return self._fail("receiver-unresolved", f"no class on the MRO of {key[1]} sets `{attr}`")
        if not found - {NONE_KEY}:
            return self._fail("receiver-unresolved", f"`{key[1]}.{attr}` is only ever None")
        return found, wheres

    def _at_store(self, cls: str, method: str, attr: str, line: int) -> None:
        """``None``, the reason met while following the value of ``self.<attr> = ...`` (in
        ``cls.method``, at ``line``) prefixed by that store, unless it names a store already: a
        parameter of a setter the engine never calls is otherwise named at a read elsewhere."""
        if self.why is not None and self.why[0] == "receiver-unresolved" and not self.why[1].startswith("`self."):
            detail = f"`self.{attr} = ...` in `{cls}.{method}` (line {line}): {self.why[1]}"
            if self.why[1] in self._opaque:
                self._opaque.add(detail)
            self.why = (self.why[0], detail, self.why[2])
        return None

    def _top_of(self, module: str, dotted: str, sym: tuple | None, imports: dict | None = None) -> str | None:
        """The top-level package of what ``dotted`` (as written in ``module``) names: of the module
        that defines it (``sym``, its :meth:`resolve_dotted`), else of the module its first name is
        imported from (``imports``, else ``module``'s own imports); else ``module``'s own when no
        ``imports`` were given, else ``None``."""
        if sym is not None and len(sym) > 1 and sym[0] in ("class", "function", "module", "external"):
            return sym[1].split(".", 1)[0]
        head = dotted.split(".", 1)[0]
        imp = (imports or {}).get(head) or (self.src.summary(module) or {}).get("imports", {}).get(head)
        if imp is not None:
            absm = self._abs_module(module, imp[0], imp[2])
            if absm:
                return absm.split(".", 1)[0]
        return module.split(".", 1)[0] if imports is None else None

    def model_registry(self, top: str) -> list[tuple[str, str, str, str]] | None:
        """``[(table, arch, module, class)]`` of the model registry of top-level package ``top``
        (every factory's ``registry_module`` bound to ``top``, read with :func:`registry_entries`);
        ``None`` when the tree, ``--src`` and the environment hold none of them."""
        key = ("model-registry", top)
        if key not in self._memo:
            out: list | None = None
            for fac in dict.fromkeys(f.bound(top) for f in self.settings.factories):
                s = self.src.summary(fac.registry_module)
                if s is not None:
                    out = (out or []) + registry_entries(s, fac.package)
            self._memo[key] = out
        return self._memo[key]

    def registrations(self, summaries) -> list[tuple[str, str | None, ClassKey | None, str, str, int]]:
        """The ``register_model`` calls of ``summaries`` (``(module, summary)`` pairs: the checked
        files) as ``(arch, top, class, class name, module, line)``: ``top`` is the top-level package
        the receiver (``ModelRegistry``) is imported from, whose registry the architecture joins
        (``None`` when not known); ``class`` the registered class, ``None`` when it cannot be
        resolved (``class name`` is its last name as written)."""
        out = []
        for module, summary in summaries:
            for receiver, arch, kind, value, line, imports in (summary or {}).get("registrations", ()):
                top = self._top_of(module, receiver, None, imports)
                key: ClassKey | None = None
                try:
                    if kind == "str":
                        mod, name = value.replace(MODULE_NAME_MARK, module).split(":")
                        key = self.resolve_class(mod, name) if self.src.summary(mod) is not None else None
                    else:
                        name = value.rsplit(".", 1)[-1]
                        imp = imports.get(value.split(".", 1)[0])
                        if imp is not None and imp[1] is not None and "." not in value:
                            absm = self._abs_module(module, imp[0], imp[2])
                            sym = self.lookup(absm, imp[1]) if absm and self.src.summary(absm) is not None else None
                            key = (sym[1], sym[2]) if sym is not None and sym[0] == "class" else None
                        else:
                            key = self.resolve_class(module, value)
                except Unresolved:
                    key = None
                if key is not None and key[0] == EXTERNAL:
                    key = None
                out.append((arch, top, key, name, module, line))
        return out

    def registry_class(self, fac: Factory, arch: str) -> ClassKey | None:
        """Resolve an architecture name through the registry tables to a class key."""
        if fac.registry_module not in self._registry:
            s = self.src.summary(fac.registry_module)
            table: dict[str, set] | None = None
            if s is not None:
                table = {}
                for _tname, a, module, clsname in registry_entries(s, fac.package, fac.tables):
                    table.setdefault(a, set()).add((module, clsname))
            self._registry[fac.registry_module] = table  # type: ignore[assignment]
        table = self._registry[fac.registry_module]
        if not table or arch not in table or len(table[arch]) != 1:
            return None
        (mod, clsname), = table[arch]
        return self.resolve_class(mod, clsname) if self.src.summary(mod) is not None else None

def answers_held_names_only(rec: dict) -> bool:
    """Whether class record ``rec``'s ``__getattr__`` answers only the names its instance's
    containers hold (registered parameters, buffers, submodules) and raises ``AttributeError``
    for any other (MindSpore's ``Cell.__getattr__``), or only raises (:func:`adds_no_attribute`):
    on an instance that registered nothing else, it answers no name its class does not set."""
    scope = rec["methods"].get("__getattr__")
    return scope is not None and bool(scope.get("raises_only") or scope.get("held_only"))


def adds_no_attribute(rec: dict, special: str) -> bool:
    """Whether the special method ``special`` of class record ``rec`` is a ``__getattr__`` whose
    body only raises ``AttributeError`` (it answers no name, as ``torch.nn.Module``'s does for a
    name it does not hold)."""
    scope = rec["methods"].get(special)
    return special == "__getattr__" and scope is not None and bool(scope.get("raises_only"))


def _c3_merge(seqs: list[list]) -> list:
    result = []
    seqs = [s for s in seqs if s]
    while seqs:
        for s in seqs:
            head = s[0]
            if not any(head in other[1:] for other in seqs):
                break
        else:
            raise Unresolved("dynamic-class", "inconsistent MRO")
        result.append(head)
        seqs = [[x for x in s if x != head] for s in seqs]
        seqs = [s for s in seqs if s]
    return result

"""Which models hold a ``make_layers`` list: a class whose own MRO builds one, or whose
``__init__`` chain assigns an instance of such a class, of any module of the analysed tree (SGLang
0.4.6 ``MiMoForCausalLM.model`` is a ``MiMoModel``, a ``Qwen2Model`` of another module, which
builds ``layers``).  Asked through :class:`~.model.RankFacts`; answers are memoized in the run's
:class:`~.values.Values`.
"""

from __future__ import annotations

from ..resolve import EXTERNAL, NONE_KEY

# holders followed below the class asked about (`self.model.model.layers` is two)
MAX_HOLDERS = 3


def holds_layer_list(values, key) -> bool:
    """Whether an instance of class ``key`` builds a ``make_layers`` list
    (:meth:`~.values.Values.list_builder` of an attribute a class on its MRO assigns one to) or
    holds, in an attribute its ``__init__`` chain assigns, an instance of a class that does, at
    most :data:`MAX_HOLDERS` holders deep.  ``values``: the run's :class:`~.values.Values`.
    ``False`` when that cannot be read; nothing is raised."""
    memo = values._memo.setdefault("holds-list", {})
    if key not in memo:  # each question walks from its own class: no answer depends on another's
        memo[key] = _holds(values, key, 0, {key})
    return memo[key]


def attribute_holds_layer_list(values, key, attr: str):
    """Whether attribute ``attr`` of an instance of class ``key`` may hold an instance of a class
    that builds or holds a ``make_layers`` list (:func:`holds_layer_list` of the classes its
    assignments may hold): ``True``, ``False``, or the
    :class:`~pp_attr_lint.resolve.Unresolved` that keeps the classes from being told (SGLang's
    ``self.minicpmv = instance_class(...)``, a class looked up in a dict).  Nothing is raised."""
    from ..resolve import Unresolved

    memo = values._memo.setdefault("attr-holds-list", {})
    if (key, attr) not in memo:
        try:
            got = values.r.attr_candidates(key, attr)
        except Unresolved as e:
            got = e
        except Exception:  # noqa: BLE001  (cannot be read)
            got = Unresolved("receiver-unresolved", f"the classes `{key[1]}.{attr}` may hold cannot be read")
        if got is None:
            why = values.r.why or ("receiver-unresolved", f"the classes `{key[1]}.{attr}` may hold cannot be read")
            got = Unresolved(why[0], why[1], why[2] if len(why) > 2 else None)
        memo[(key, attr)] = got if isinstance(got, Unresolved) else any(
            holds_layer_list(values, k) for k in sorted(got[0]) if k != NONE_KEY and k[0] != EXTERNAL)
    return memo[(key, attr)]


def _holds(values, key, depth: int, seen: set) -> bool:
    try:
        mro = [e for e in values.r.mro(key) if e[0] != EXTERNAL]
    except Exception:  # noqa: BLE001  (a base outside the analysed code: its own __init__ is read)
        mro = None
    if mro is not None:
        attrs = {a for entry in mro for c, a, *_ in (values.module_facts(entry[0]) or {}).get("lists", ())
                 if c == entry[1]}
        if any(values.list_builder(key, a) is not None for a in sorted(attrs)):
            return True
    if depth >= MAX_HOLDERS:
        return False
    for k in sorted(_held_classes(values, key, mro is not None)):
        if k != NONE_KEY and k[0] != EXTERNAL and k not in seen:
            seen.add(k)
            if _holds(values, k, depth + 1, seen):
                return True
    return False


def _held_classes(values, key, mro_known: bool) -> set:
    """The classes the attributes that ``key``'s ``__init__`` chain assigns may hold (with an MRO
    that cannot be read, those its own ``__init__`` assigns); what cannot be read adds none."""
    r = values.r
    out: set = set()
    try:
        if mro_known:
            for a in sorted({a for _owner, scope in r.executed_inits(key) for a in scope.get("assigns", {})}):
                got = r.attr_candidates(key, a)
                out |= got[0] if got else set()
        else:
            scope = r.class_record(key)["methods"].get("__init__")
            for _a, pairs in sorted((scope or {}).get("assigns", {}).items()):
                for _line, descs in pairs:
                    for d in descs:
                        if d[0] != "none":
                            out |= r.value_candidates(d, key[0], key, scope, 1, inst=key) or set()
    except Exception:  # noqa: BLE001  (not read: nothing held is known)
        pass
    return out

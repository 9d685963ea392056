"""Helpers handed this rank's parameter dict: whether one tests, against the dict, every key it
returns.

A loader's ``name = maybe_remap_kv_scale_name(name, params_dict)`` then ``if name is None:
continue`` tests ``name`` against the parameters only when every ``return`` of the helper that
can hand back a key (not ``None``) lies behind a membership test of that value in the dict
(``if key in params_dict: return key``, or ``if key not in params_dict: return None`` before
``return key``).  vLLM's ``maybe_remap_kv_scale_name`` (0.10.0 to 0.33.0) and SGLang's (0.5.23,
SGLang-kt 0.7.2), ``model_loader/weight_utils.py``, test only the names they remap and end with
``return name`` ("If there were no matches, return the untouched param name"): their call tests
no other name, and a loader that trusts it looks up another rank's layers.

:func:`returned_keys_tested` reads one function (the flow walker's guard of each ``return``);
:class:`KeyHelpers` finds the helper a call names, through the resolver (a plain or dotted name)
or the method resolution order (``self.helper``), and reads it.
"""

from __future__ import annotations

import ast

from ..index.astutil import walk as fast_walk
from ..resolve import Unresolved
from ..textio import display_path
from ..unjudged import MISSING_CODE
from .flow import ReturnWalker, own_nodes
from .loader import hands_dict
from .guards import atoms, f_not, f_or, implies
from .service import Service

TESTS, UNTESTED, UNREAD = "tests", "untested", "unread"
UNREAD_REASON = "callee-unread"  # the reason code of :data:`pp_attr_lint.unjudged.REASONS`
MAX_ATOMS = 16  # guards.satisfying enumerates at most this many atoms (more would count as implied)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _stores(fn, name: str) -> list | None:
    """``(line, col)`` of every binding of ``name`` in ``fn``'s own body (assignments, loop and
    ``with`` targets, ``del``, an ``except ... as`` name); ``None`` when a ``global`` or
    ``nonlocal`` statement (in ``fn`` or a function nested in it) names it: then it cannot be told."""
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in fast_walk(fn)):
        return None
    out = []
    for n in own_nodes(fn):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            out.append((n.lineno, n.col_offset))
        elif isinstance(n, ast.ExceptHandler) and n.name == name:
            out.append((n.lineno, n.col_offset))
    return out


def _span(node) -> tuple:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _holds_at(test, ret, stores: list, loops: list) -> bool:
    """Whether a membership test ``test`` (a Compare node) of a name still speaks of its value at
    ``return`` ``ret``: no binding of the name in ``stores`` can run between them, neither after
    the test and before the return in the text, nor in a loop around the return that does not
    hold the test (its next turn rebinds the name without testing it again)."""
    t_end = _span(test)[1]
    r_at = _span(ret)[0]
    for s in stores:
        if s < t_end:
            continue  # before the test (a loop around both runs the test again after it)
        if s < r_at:
            return False
        for loop in loops:
            start, end = _span(loop)
            inside = (lambda p: start <= p <= end)
            if inside(s) and inside(r_at) and not inside(t_end):
                return False
    return True


def returned_keys_tested(fn, dicts: set, lines) -> tuple[str, int, str]:
    """Whether function ``fn`` tests every key it returns against one of its parameters
    ``dicts`` (this rank's parameter dict): ``(verdict, line, what)`` with ``verdict``
    :data:`TESTS` (every ``return`` of a value other than ``None`` returns a name that a test
    ``name in d`` / ``name not in d`` with an exit, on the flow walker's path to it, shows to be
    in the dict, and that nothing rebinds in between), :data:`UNTESTED` (``line`` a ``return``
    of a value that no such test covers: ``return name``, ``return name.replace(...)``, a
    constant) or :data:`UNREAD` (``what`` says what the reading does not follow: a generator, a
    ``return`` the walk does not reach, a rebound dict, a value picked by a test or computed by
    a call handed the dict, a name rebound between its test and the return, too many tests).
    ``lines`` is the helper's file's :class:`~pp_attr_lint.index.spec.LineIndex`.  Nothing is
    raised."""
    own = list(own_nodes(fn))
    if isinstance(fn, ast.AsyncFunctionDef) or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
        return UNREAD, fn.lineno, "it is a generator or a coroutine"
    for d in sorted(dicts):
        if _stores(fn, d) != []:
            return UNREAD, fn.lineno, f"it rebinds `{d}`"
    tests: dict[str, ast.Compare] = {}  # atom name -> the test it names

    def atom_of(node):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(node.left, ast.Name) and isinstance(node.comparators[0], ast.Name) \
                and node.comparators[0].id in dicts:
            name = f"{node.left.id} in {node.comparators[0].id}@{node.lineno}:{node.col_offset}"
            tests[name] = node
            return ("a", name) if isinstance(node.ops[0], ast.In) else f_not(("a", name))
        return None

    w = ReturnWalker(lines, fn, atom_of)
    w.walk()
    if len(w.statements_returned) != sum(isinstance(n, ast.Return) for n in own):
        return UNREAD, fn.lineno, "a `return` lies where the walk does not follow (a `match`)"
    loops = [n for n in own if isinstance(n, _LOOPS)]
    for (guard, _value), ret in zip(w.returns, w.statements_returned):
        value = ret.value
        if value is None or (isinstance(value, ast.Constant) and value.value is None) or guard == ("F",):
            continue
        if isinstance(value, (ast.IfExp, ast.BoolOp, ast.NamedExpr)):
            return UNREAD, ret.lineno, "the value it returns at this line is picked by a test"
        if any(hands_dict(c, dicts) for c in fast_walk(value)):
            return UNREAD, ret.lineno, "the value it returns at this line comes from a call handed the dict"
        if not isinstance(value, ast.Name):
            return UNTESTED, ret.lineno, f"returns `{ast.unparse(value)[:60]}` without a test against the dict"
        if len(atoms(guard)) > MAX_ATOMS:
            return UNREAD, ret.lineno, "the path to the `return` at this line holds too many tests"
        mine = [a for a in sorted(atoms(guard)) if a in tests and tests[a].left.id == value.id]
        if not implies(guard, f_or(*(("a", a) for a in mine))):
            return UNTESTED, ret.lineno, f"returns `{value.id}` without a test against the dict"
        stores = _stores(fn, value.id)
        valid = [a for a in mine if stores is not None and _holds_at(tests[a], ret, stores, loops)]
        if not implies(guard, f_or(*(("a", a) for a in valid))):
            return UNREAD, ret.lineno, f"`{value.id}` may be rebound between its test and the `return` at this line"
    return TESTS, fn.lineno, "tests every key it returns against the dict"


class KeyHelpers(Service):
    """Reads the helpers a loader hands a parameter dict (for a :class:`~.model.RankFacts`
    ``model``; memoized per run)."""

    def verdict(self, cls: str, callee) -> tuple[str, str, str | None]:
        """Whether the helper of ``callee`` (``[kind, name, positions, line]`` of
        :func:`~.loader.callee_id`, called in class ``cls`` of the file being checked) tests every
        key it returns against the dict it is handed at ``positions``: ``(verdict, detail,
        reason)``, ``verdict`` one of :data:`TESTS`, :data:`UNTESTED`, :data:`UNREAD`; ``detail``
        names the helper's file and line in words; ``reason`` the code of
        :data:`pp_attr_lint.unjudged.REASONS` for :data:`UNREAD` (a missing module keeps the
        resolver's), else ``None``.  Nothing is raised."""
        kind, name, positions = callee[0], callee[1], tuple(callee[2])
        key = (self.ctx.module, cls, kind, name, positions)
        memo = self._memo.setdefault("verdict", {})
        if key not in memo:
            try:
                memo[key] = self._verdict(cls, kind, name, positions)
            except Unresolved as e:
                memo[key] = (UNREAD, f"`{name}` cannot be resolved: {e.detail}",
                             e.reason if e.reason in MISSING_CODE else UNREAD_REASON)
            except Exception as e:  # noqa: BLE001  (cannot tell: not judged)
                memo[key] = (UNREAD, f"`{name}` could not be read ({type(e).__name__})", UNREAD_REASON)
        return memo[key]

    def _verdict(self, cls: str, kind: str, name: str, positions: tuple):
        found = self._function(cls, kind, name)
        if isinstance(found[0], str):
            return found
        fn, offset, path, lines = found
        params = [p.arg for p in fn.args.posonlyargs + fn.args.args]
        if not positions or any(p + offset >= len(params) for p in positions):
            return UNREAD, f"`{name}` ({display_path(path)}:{fn.lineno}) takes the dict in `*args`", UNREAD_REASON
        verdict, line, what = returned_keys_tested(fn, {params[p + offset] for p in positions}, lines)
        return verdict, f"`{name}` ({display_path(path)}:{line}): {what}", UNREAD_REASON if verdict == UNREAD else None

    def _function(self, cls: str, kind: str, name: str):
        """``(function node, offset of the call's arguments, path, lines)``, or the ``(UNREAD,
        detail, reason)`` of a helper not found."""
        if kind == "self":
            got = self.m.call_context.method_node((self.ctx.module, cls), name)
            if got is None:
                return UNREAD, f"`self.{name}` is not a method of `{cls}` found in the analysed code", UNREAD_REASON
            owner, _cnode, fn, lines = got
            decorators = {getattr(d, "id", getattr(d, "attr", None)) for d in fn.decorator_list}
            if decorators - {"staticmethod", "classmethod"}:
                return UNREAD, f"`self.{name}` is decorated", UNREAD_REASON
            offset = 0 if "staticmethod" in decorators else 1
            return fn, offset, self.ctx.project.path(owner[0]) or owner[0], lines
        if kind != "name":
            return UNREAD, f"the callee `{name}` is not a name the run resolves", UNREAD_REASON
        sym = self.r.resolve_dotted(self.ctx.module, name)
        if sym is None:
            why = self.r.why or (UNREAD_REASON, f"`{name}` is not found", None)
            reason = why[0] if why[0] in MISSING_CODE else UNREAD_REASON
            return UNREAD, f"`{name}` cannot be resolved: {why[1]}", reason
        if sym[0] != "function":
            where = f" (`{sym[1]}`)" if sym[0] == "external" else ""
            return UNREAD, f"`{name}` is not a function of the analysed code{where}", UNREAD_REASON
        parsed = self.m.reader.module_parsed(sym[1])
        fn = None
        for n in parsed[2].body if parsed else ():
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == sym[2]:
                fn = n  # the last definition is the one bound
        if fn is None:
            return UNREAD, f"`{name}` is not found as a function of `{sym[1]}` the run can read", UNREAD_REASON
        if fn.decorator_list:
            return UNREAD, f"`{name}` ({display_path(parsed[0])}:{fn.lineno}) is decorated", UNREAD_REASON
        return fn, 0, parsed[0], parsed[3]

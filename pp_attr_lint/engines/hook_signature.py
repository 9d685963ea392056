"""Whether the callable a model assigns as its pipeline-parallel hook can take the model runner's
call.

vLLM's GPU model runner asks the model for the tensors it receives on every pipeline-parallel rank
but the first: ``self.model.make_empty_intermediate_tensors(batch_size=..., dtype=..., device=...)``
(``vllm/v1/worker/gpu_model_runner.py``; plugins' runners, as vllm-omni's
``vllm_omni/worker/gpu_model_runner.py``, the same).  A model that assigns the hook a callable of
another signature (``self.make_empty_intermediate_tensors = lambda: None`` on the stages of a
multi-stage model that do not run the language model) raises ``TypeError`` there.

* :func:`hook_callables`: per class of a file, the lambdas and local functions its ``__init__``
  assigns the hook (a branch of a conditional expression included), with their parameters and
  the guard that picks them, as the flow walker reads them (``semantic/flow.py``);
* :func:`runner_calls`: the runner's calls of the hook, read from the analysed tree (modules of
  a ``worker`` package, a receiver other than ``self``), not from a list kept here;
* :func:`binds`: whether a recorded callable takes a recorded call.
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..semantic import guards as G
from ..semantic.flow import FunctionGuards


def _params(fn) -> dict:
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    return {"args": positional, "posonly": len(a.posonlyargs), "defaults": len(a.defaults),
            "kwonly": [p.arg for p in a.kwonlyargs],
            "kwonly_required": [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None],
            "vararg": a.vararg is not None, "kwarg": a.kwarg is not None}


def _answers_none(fn) -> bool:
    """Whether callable ``fn`` (a lambda or a function) only ever returns ``None``: a lambda whose
    body is the constant ``None``, a function whose body holds only a docstring, ``pass`` and
    ``return`` / ``return None``."""
    if isinstance(fn, ast.Lambda):
        return isinstance(fn.body, ast.Constant) and fn.body.value is None
    for st in fn.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue
        if isinstance(st, ast.Pass) or (isinstance(st, ast.Return) and (
                st.value is None or (isinstance(st.value, ast.Constant) and st.value.value is None))):
            continue
        return False
    return True


def _hook_target(stmt) -> bool:
    return isinstance(stmt, ast.Assign) and any(
        isinstance(t, ast.Attribute) and t.attr == F.PP_HOOK and isinstance(t.value, ast.Name) and t.value.id == "self"
        for t in stmt.targets)


def _candidates(value, local_defs: dict, when: list, out: list) -> None:
    """The lambdas and local functions ``value`` may evaluate to, as ``(callable, words, the
    tests that pick it (``(test, taken)`` pairs, outermost first), the node of ``value`` that
    names it)``."""
    if isinstance(value, ast.IfExp):
        _candidates(value.body, local_defs, when + [(value.test, True)], out)
        _candidates(value.orelse, local_defs, when + [(value.test, False)], out)
    elif isinstance(value, ast.Lambda):
        out.append((value, "a `lambda`", when, value))
    elif isinstance(value, ast.Name) and local_defs.get(value.id) is not None:
        out.append((local_defs[value.id], f"the local function `{value.id}`", when, value))


def _switch(test) -> bool:
    """A test of a setting against constants (``self.model_stage == "thinker"``, ``mode in
    ("a", "b")``): some configuration takes either branch.  A test of what ``__init__`` built
    (``self.talker is not None``) may hold on every path, so which branch runs is not read."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
            and all(isinstance(n, ast.Constant) for c in test.comparators for n in ast.walk(c)
                    if not isinstance(n, (ast.Tuple, ast.List, ast.Set, ast.Load))))


def _setting_atom(test, settings: set):
    """An ``atom_of`` for the flow walker: a test of a setting (:func:`_switch`) as the atom of
    its positive form (``stage != "a"`` is ``not stage == "a"``), whose name is added to
    ``settings``; ``None`` for any other test (the walker's own naming)."""
    if not _switch(test):
        return None
    op = test.ops[0]
    negated = isinstance(op, (ast.NotEq, ast.NotIn))
    if negated:
        test = ast.Compare(left=test.left, ops=[ast.Eq() if isinstance(op, ast.NotEq) else ast.In()],
                           comparators=test.comparators)
    settings.add(name := ast.unparse(test))
    return G.f_not(("a", name)) if negated else ("a", name)


def hook_callables(tree, lines) -> dict:
    """``{class name: [record]}`` for the top-level classes whose own ``__init__`` assigns
    ``self.make_empty_intermediate_tensors`` a lambda or a function defined in that ``__init__``
    (directly or as a branch of ``a if test else b``).  A record: ``line``, ``col``, ``end_line``,
    ``end_col`` (the callable), ``what`` (in words), ``when`` (the tests that pick it, in words;
    ``None`` when always), ``switch`` (every test that picks it is a setting's, :func:`_switch`, or
    the rank's), ``skippable`` (it is assigned in a block a call may skip: a loop's body, an
    exception handler), ``none`` (it only returns ``None``, :func:`_answers_none`), and its
    parameters (see :func:`binds`).

    Which statements run, and under which guard, is the flow walker's
    (:class:`~pp_attr_lint.semantic.flow.FunctionGuards`: ``if``/``elif``/``else``, early
    ``return``/``raise``, ``assert``, ``and``/``or``, ``try``, ``with``, loops), the guard of a
    callable its branch's: a callable that no rank after the first can be assigned (under ``if
    False``, after a ``return``, only on the first rank, which the runner never asks) is left out,
    and so is one after which a later statement of ``__init__`` may assign the hook again (its
    guard and the callable's can hold together: ``x if stage == "a" else lambda: None`` followed
    by ``if stage == "a": self.hook = ...`` keeps the lambda).  Nothing is raised."""
    out: dict = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        if init is None or F.PP_HOOK not in lines.span(init):
            continue  # no assignment of the hook (its name is not in the text): nothing to walk
        settings: set = set()
        flow = FunctionGuards(init, lines, cls=cls.name, atom_of=lambda t: _setting_atom(t, settings))
        reached = [(st, g) for st, g in flow.reached_statements() if G.can_hold(g)]
        local_defs: dict = {}
        for st, _g in reached:
            if isinstance(st, ast.FunctionDef):  # a name bound twice is not told apart
                local_defs[st.name] = st if st.name not in local_defs else None
        assigns = [(st, g) for st, g in reached if _hook_target(st)]
        recs = []
        for k, (stmt, guard) in enumerate(assigns):
            found: list = []
            _candidates(stmt.value, local_defs, [], found)
            later = [g for s, g in assigns[k + 1:] if s.lineno > stmt.lineno]
            for fn, what, when, at in found:
                picked = G.f_and(flow.of(at) or G.FALSE, G.f_not(G.FIRST))  # the runner asks ranks > first
                if not G.can_hold(picked) or any(G.can_hold(G.f_and(picked, g)) for g in later):
                    continue  # never assigned where the runner asks, or assigned again where it was
                words = [f"`{G.describe(guard)}`"] * (guard != G.TRUE) + [
                    f"`{ast.unparse(t)}`" + ("" if taken else " is false") for t, taken in when]
                recs.append({"line": fn.lineno, "col": lines.col(fn.lineno, fn.col_offset),
                             "end_line": fn.lineno, "end_col": lines.col(fn.lineno, fn.col_offset) + (
                                 len("lambda") if isinstance(fn, ast.Lambda) else len("def " + fn.name)),
                             "what": what, "when": " and ".join(words) or None,
                             "switch": G.atoms(picked) <= settings | G.RANK_ATOMS,
                             "skippable": bool(flow.may_skip(at)), "none": _answers_none(fn),
                             **_params(fn)})
        if recs:
            out[cls.name] = recs
    return out


def binds(rec: dict, npos: int, keywords: list) -> bool:
    """Whether a callable with parameters ``rec`` (:func:`_params`) takes a call with ``npos``
    positional arguments and the keyword arguments ``keywords`` (Python's binding rules)."""
    args = rec["args"]
    if npos > len(args) and not rec["vararg"]:
        return False
    bound = set(args[:npos])
    for k in keywords:
        if k in bound or (k in args[:rec["posonly"]] and not rec["kwarg"]):
            return False
        if k not in args and k not in rec["kwonly"] and not rec["kwarg"]:
            return False
        bound.add(k)
    required = args[:len(args) - rec["defaults"]] + rec["kwonly_required"]
    return all(p in bound for p in required)


def runner_calls(reader) -> list | None:
    """``[(path, line, positional count, keyword names)]``: the calls
    ``<receiver>.make_empty_intermediate_tensors(...)`` in the modules of a ``worker`` package of
    the analysed tree (``reader``: :class:`~pp_attr_lint.semantic.reader.TreeReader`; the checked
    root and the engine it imports from), whose receiver is not ``self`` or ``super()`` (a model
    forwarding its own hook) and that pass no ``*args`` or ``**kwargs``.  ``None`` when a file
    cannot be read."""
    files = reader.tree_files(f".{F.PP_HOOK}(".encode())
    if files is None:
        return None
    out = []
    for path, module, tree, _lines in files:
        if "worker" not in module.split("."):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == F.PP_HOOK:
                recv = node.func.value
                if (isinstance(recv, ast.Name) and recv.id == "self") or (
                        isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super"):
                    continue
                if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    continue
                out.append((path, node.lineno, len(node.args), [k.arg for k in node.keywords]))
    return out


def verdict(reader, cname: str, bad: dict):
    """What to say of class ``cname``'s hook ``bad`` (a :func:`hook_callables` record): ``None``
    when a call of :func:`runner_calls` binds it and it may return something other than ``None``;
    ``(reason, detail)`` of a read not judged when no such call is found (``engine-fact-unknown``),
    or when a test of what ``__init__`` built picks it or a block that a call may skip holds it
    (``branch-unread``); else ``(message, explanation, help)`` of a finding: the runner's call does
    not bind (``TypeError``), or it binds and the hook returns only ``None``."""
    from ..textio import display_path

    calls = runner_calls(reader)
    if not calls:
        return ("engine-fact-unknown", f"`{cname}` assigns `{F.PP_HOOK}` {bad['what']}, and no call of the hook "
                f"by a model runner (a `worker` module of the analysed tree) is found to check it against")
    bound = [c for c in calls if binds(bad, c[2], c[3])]
    if bound and not bad["none"]:
        return None
    if not bad["switch"] or bad.get("skippable"):
        why = "it returns only `None`" if bound else "its call does not bind"
        where = (f"only when {bad['when']}, a test of what `__init__` built" if not bad["switch"] else
                 "only in a block that a call of `__init__` may skip (a loop's body, an exception handler)")
        return ("branch-unread", f"`{cname}` assigns `{F.PP_HOOK}` {bad['what']} that the model runner cannot use "
                f"({why}), but {where}: whether any configuration picks it is not read")
    path, line, n, kws = min(bound or calls, key=lambda c: (c[0].count("/"), c[0]))
    args = ", ".join([f"{n} positional argument{'s' * (n > 1)}"] * bool(n) + [f"`{k}=`" for k in kws]) \
        or "no arguments"
    when = f" (when {bad['when']})" if bad["when"] else ""  # a stage or mode setting
    if bound:  # it takes the call and answers None, as the protocol's stub does
        message = (f"`{cname}.__init__` assigns `{F.PP_HOOK}` {bad['what']}{when} that returns `None`: the model "
                   f"runner calls the hook ({display_path(path)}:{line}) on every pipeline-parallel rank but the "
                   f"first and keeps what it returns as the tensors it receives into; with `None` it fails there "
                   f"(vLLM's `sync_and_gather_intermediate_tensors` asserts they are not `None`).")
    else:
        message = (f"`{cname}.__init__` assigns `{F.PP_HOOK}` {bad['what']}{when} that cannot take the model "
                   f"runner's call: the runner calls the hook with {args} ({display_path(path)}:{line}) on every "
                   f"pipeline-parallel rank but the first, to allocate the tensors it receives: TypeError there.")
    explanation = [f"`{cname}` lists `SupportsPP`: the engine runs it under pipeline parallelism",
                   f"its parameters: {', '.join(bad['args'] + bad['kwonly']) or 'none'}; " + (
                       "it returns only `None`" if bound else f"no call of a model runner found ({len(calls)}) "
                                                               f"binds to them")]
    help = (f"Take the runner's arguments (`lambda batch_size, dtype, device: ...`), or forward a hook that "
            f"does (`self.{F.PP_HOOK} = self.<inner model>.{F.PP_HOOK}`)")
    return message, explanation, help

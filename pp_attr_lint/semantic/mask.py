"""Masking: a finding whose line never fails on its own, because on every path the engine takes
to it another failure always comes first on the same ranks.

The engine builds a model, loads its weights and only then serves (:mod:`.entry`).  Two failures
always happen on every rank of a pipeline of size >= 2, so that what the same model would run
after them never runs there:

* construction: an ``assert isinstance(slot, X)`` in a loop over every slot of a ``make_layers``
  list that the class's ``__init__`` runs on every call (``X`` is not the placeholder; every rank
  holds ``PPMissingLayer`` slots, vllm/model_executor/models/utils.py ``make_layers``);
* weight loading: a ``params_dict[name]`` lookup of the class's ``load_weights`` that no skip
  covers and that every checkpoint reaches (the PPA402 kind, judged whatever rules are selected:
  masking is a fact of the model, not of the output); every rank lacks some layer's weights.
  It masks serving, and the lines of the same ``load_weights`` after the loop that holds it.

And one on every rank after the first: serving, when the entry class's ``forward`` cannot run under
PP (:func:`~.entry.forward_failure`); it masks what the same class would fail at later while
serving on those ranks (``compute_logits``, a tied head the last rank uses, a line of ``forward``
after the failing call).

Within one method, a finding of a rule is masked by another of the same rule on the same ranks
whose line, a statement that fails every time it runs, comes before it on every path
(:func:`sequential_masks`).

A masked finding is not reported: it becomes a :class:`~pp_attr_lint.model.NotJudged` record
with the reason ``masked-by``, whose detail names the first failure and the path to it.
"""

from __future__ import annotations

import ast
import os
from typing import NamedTuple

from .entry import LOAD, SERVE, forward_failure, phase_of
from .guards import TRUE, later_ranks_only, rank_words

# rules whose findings, when their witness names no configuration, fail on every rank of a
# pipeline of size >= 2 in a phase before serving (weight loading)
LOADER_RULES = ("PPA402",)
MASKED_BY = "masked-by"


class Failure(NamedTuple):
    """A failure that always happens on every rank of a pipeline of size >= 2: the class whose
    method fails (``key``), the method, its line, the phase (:data:`~.entry.CONSTRUCT`,
    :data:`~.entry.LOAD`) and what fails, in words."""

    key: tuple
    method: str
    row: int
    phase: int
    what: str
    later_ranks_only: bool = False  # fails on every rank after the first, not on the first
    file: str | None = None  # the file of ``row`` when not the checked one (an inherited method)


def _enclosing(tree: ast.Module):
    """``[(class node, method node)]`` of the top-level classes' methods."""
    return [(c, f) for c in tree.body if isinstance(c, ast.ClassDef)
            for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _where(methods, row: int):
    return next(((c, f) for c, f in methods if f.lineno <= row <= f.end_lineno), (None, None))


def _assert_on_slot(loop) -> ast.Assert | None:
    """The ``assert isinstance(v, X)`` on the loop variable ``v`` of ``loop`` that every iteration
    reaches (only plain statements before it), ``X`` not named for the placeholder."""
    if not isinstance(loop.target, ast.Name):
        return None
    var = loop.target.id
    for st in loop.body:
        if isinstance(st, ast.Assert):
            t = st.test
            if (isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "isinstance"
                    and len(t.args) == 2 and isinstance(t.args[0], ast.Name) and t.args[0].id == var
                    and "PPMissingLayer" not in ast.unparse(t.args[1])):
                return st
            continue
        if not isinstance(st, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return None  # a branch, a nested loop, an exit: not every iteration reaches it
    return None


def construction_failures(rf, tree, lines, module: str) -> list[Failure]:
    """The :class:`Failure` records of ``__init__`` asserts on ``make_layers`` slots in ``module``
    (``tree``, ``lines``: its parse)."""
    from .flow import FunctionGuards
    from .guards import TRUE

    out = []
    for c, f in _enclosing(tree):
        if f.name != "__init__":
            continue
        if "assert" not in lines.span(f):
            continue  # no `assert` statement in its lines: nothing to walk for
        guards = None
        for loop in ast.walk(f):
            if not isinstance(loop, ast.For):
                continue
            found = _assert_on_slot(loop)
            chain = _ref(loop.iter)
            if found is None or chain is None:
                continue
            guards = guards or FunctionGuards(f, lines, cls=c.name)
            if guards.every_call(loop) != TRUE:
                continue  # a loop some call or rank may skip
            owners, _how = rf.list_owners(chain, c.name, f.lineno)
            if not owners or rf.conditional_list_note(owners, chain[-1]) is not None:
                continue
            out.append(Failure((module, c.name), "__init__", found.lineno, 0,
                               f"`{ast.unparse(found)}` fails on the first `PPMissingLayer` slot of "
                               f"`{'.'.join(chain)}`"))
    return out


def _ref(node) -> tuple | None:
    from ..index.astutil import ref_chain

    chain = ref_chain(node)
    return tuple(chain) if chain and len(chain) >= 2 else None


class _Facts:
    """A rule context whose ``facts`` of one rule are given (the rule's collector ran here)."""

    def __init__(self, ctx, code: str, facts):
        self._ctx, self._code, self._facts = ctx, code, facts

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def facts(self, code: str, module: str | None = None):
        if code == self._code and module is None:
            return self._facts
        return self._ctx.facts(code, module)


def loader_failures(ctx, tree, lines, methods, rules) -> list[Failure]:
    """The :class:`Failure` records of the loader ``rules`` (the rule objects of
    :data:`LOADER_RULES`, which the engine hands over) in this file, run whether or not they are
    selected, that name no configuration in their witness."""
    from ..model import Finding
    from .model import RankFacts

    out = []
    for rule in rules:
        code = rule.code
        # the collector did not run here (its prefilter turned the file down) or found nothing
        facts = ctx.facts(code) if ctx.holds(code) else None
        if facts is None:
            facts = rule.collect(tree, lines)
        if not facts:
            continue
        try:
            got = list(rule.check(_Facts(ctx, code, facts)))
        except Exception:  # noqa: BLE001  (it cannot judge: it masks nothing)
            got = []
        finally:
            RankFacts.of(ctx)  # the model points at the checked file again
        for f in got:
            if not isinstance(f, Finding) or (f.witness or {}).get("config") or (f.witness or {}).get("layer_partition"):
                continue
            c, fn = _where(methods, f.row)
            if c is None:
                continue
            out.append(Failure((ctx.module, c.name), "load_weights", f.row, LOAD,
                               f"{code}: the lookup `{f.message.split('`')[1]}` raises "
                               f"{'AttributeError' if 'get_submodule' in f.message else 'KeyError'} on every rank "
                               f"that does not own a layer of the checkpoint"))
    return out


def serving_failures(rf, module: str) -> list[Failure]:
    """The :class:`Failure` of each entry class of ``module`` whose ``forward`` cannot run under
    pipeline parallelism (:func:`~.entry.forward_failure`), at its failing call."""
    from .. import facts as F

    out = []
    for key in rf.entry_classes(module) or ():
        if tuple(key)[0] != module or any(w in key[1] for w in F.DRAFTER_NAME_WORDS):
            continue  # (a drafter: whether it runs under PP is not established)
        ff = forward_failure(rf, key)
        if ff is not None and ff.condition == TRUE:  # (under a test of its arguments: not on every call)
            definer = rf.entry.definer(key, "forward") or key
            out.append(Failure(tuple(key), "forward", ff.site.row, SERVE,
                               f"PPA202: `{key[1]}.forward` passes no `{ff.param}` to `{ff.site.callee[0][1]}.forward`, "
                               f"where `{ff.text}` fails", True,
                               None if definer[0] == module else definer[0].rsplit(".", 1)[-1] + ".py"))
    return out


def _later_ranks_only(f) -> bool:
    return later_ranks_only(str((f.witness or {}).get("ranks", "")))


def _entry_path(rf, module: str, fail: Failure, key: tuple, method: str) -> list | None:
    """The engine's way to the failing phase and then to ``method`` of ``key``: an entry class of
    ``module`` whose load (or construction) always reaches ``fail`` and whose serving reaches
    ``key.method``; ``None`` when none is found."""
    entries = rf.entry.entry_classes(module)
    if not entries:
        return None
    cc = rf.call_context
    for e in entries:
        to_fail = cc.path((e, "load_weights"), (fail.key, "load_weights"), always=True)
        if to_fail is None:
            continue
        for start in ("forward", "compute_logits"):
            to_line = cc.path((e, start), (key, method))
            if to_line is not None:
                return [(e, "load_weights"), *to_fail], [(e, start), *to_line]
    return None


def _describe(steps) -> str:
    """``A.load_weights -> B.load_weights (line 709)`` of a path of :func:`_entry_path`."""
    out = []
    for s in steps:
        if isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], tuple):
            out.append(f"{s[0][1]}.{s[1]}")
        else:
            out.append(f"{s.callee[0][1]}.{s.callee[1]} (line {s.row})")
    return " -> ".join(out)


def apply_masks(ctx, findings: list, loader_rules=()) -> tuple[list, list]:
    """``findings`` of the checked file ``ctx`` split into those reported and the
    :class:`~pp_attr_lint.model.NotJudged` records (reason ``masked-by``) of those masked; each
    finding also gets the engine's path to its line as its last ``= why:`` line, where known
    (:func:`add_paths`).  ``loader_rules``: the rule objects of :data:`LOADER_RULES` (selected or
    not), whose findings are the loader's failures."""
    from ..model import Finding, NotJudged
    from .model import RankFacts

    cands = [f for f in findings if isinstance(f, Finding) and f.code]
    if not cands:
        return findings, []
    rf = RankFacts.of(ctx)
    got = rf.reader.module_parsed(ctx.module)
    if got is None:
        return findings, []
    _path, _module, tree, lines = got
    methods = _enclosing(tree)
    add_paths(rf, ctx.module, cands, methods)
    add_first_waits(rf, cands, methods)
    try:
        fails = construction_failures(rf, tree, lines, ctx.module)
        fails += loader_failures(ctx, tree, lines, methods, loader_rules)
        fails += serving_failures(rf, ctx.module)
    except Exception:  # noqa: BLE001  (nothing established: nothing masked)
        fails = []
    fails.sort(key=lambda x: (x.phase, x.row))
    subclassed = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)
                  for c in tree.body if isinstance(c, ast.ClassDef) for b in c.bases}
    kept, masked = [], []
    earlier = sequential_masks(cands, methods, os.path.basename(ctx.file.path))
    for f in findings:
        why = None
        if isinstance(f, Finding) and f.code:
            c, fn = _where(methods, f.row)
            if c is not None:
                why = _masked(rf, ctx, f, c, fn, fails, subclassed) or earlier.get(id(f))
        if why is None:
            kept.append(f)
        else:
            masked.append(NotJudged(code=f.code, reason=MASKED_BY, detail=why, path=f.path, row=f.row,
                                    column=f.column))
    return kept, masked


def _simple_path(block: list, row: int) -> tuple | None:
    """``(block, index)`` of the innermost statement under ``block`` that holds ``row`` and
    holds it in none of its own blocks (a simple statement, or a compound one whose header
    holds the row); ``None`` when no statement does."""
    for i, st in enumerate(block):
        if st.lineno <= row <= st.end_lineno:
            subs = [getattr(st, f, None) or [] for f in ("body", "orelse", "finalbody")]
            subs += [h.body for h in getattr(st, "handlers", None) or ()]
            for sub in subs:
                got = _simple_path(sub, row)
                if got is not None:
                    return got
            return block, i
    return None


def _always_fails(st) -> bool:
    """Whether every part of the simple statement ``st`` runs each time it does: no conditional
    expression, short-circuit operator or lambda in it (a comprehension's element and filter run
    for each item, which the rule that reports it has established)."""
    return not isinstance(st, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) \
        and not any(isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda)) for n in ast.walk(st))


def sequential_masks(findings: list, methods, here: str) -> dict:
    """``{id(finding): why}`` for each finding of ``findings`` that another one of the same rule
    and method always precedes on the same ranks (one rule: the verdict does not depend on
    ``--select``): the earlier one's line is a simple statement
    that fails every time it runs (:func:`_always_fails`), in a block that holds the later one
    in a statement after it; both fail on the same ranks (their witnesses' ``ranks``) and every
    condition of the earlier one's witness is one of the later one's.  Then every path to the
    later line passes the earlier one first and fails there (SGLang 0.5.23 ``deepseek_v2.py``
    ``DeepseekV2Model.__init__``: two loops over every slot of ``self.layers``, one after the
    other).  A later finding with a fix is kept: it is part of the same repair, and one round of
    ``--fix`` or ``--diff`` then shows all of it."""
    out: dict = {}
    by_fn: dict = {}
    for f in findings:
        c, fn = _where(methods, f.row)
        if fn is not None and f.witness and f.witness.get("ranks"):
            by_fn.setdefault(id(fn), (fn, []))[1].append(f)
    for fn, fs in by_fn.values():
        if len(fs) < 2:
            continue
        fs.sort(key=lambda x: (x.row, x.column))
        for k, first in enumerate(fs):
            path = _simple_path(fn.body, first.row)
            if path is None:
                continue
            block, i = path
            if not _always_fails(block[i]):
                continue
            later = block[i + 1:]
            cond = first.witness.get("config") or {}
            for f in fs[k + 1:]:
                if id(f) in out or f.fix is not None or f.code != first.code \
                        or f.witness.get("ranks") != first.witness.get("ranks"):
                    continue
                if not any(st.lineno <= f.row <= st.end_lineno for st in later):
                    continue
                if any((f.witness.get("config") or {}).get(key, not v) != v for key, v in cond.items()):
                    continue
                out[id(f)] = (f"{here}:{first.row} ({first.code}) fails first, on {first.witness['ranks']}, "
                              f"every time this line is reached: it runs before it in `{fn.name}`")
    return out


def add_paths(rf, module: str, findings: list, methods) -> None:
    """Append to each finding's ``explanation`` the engine's way to its line, where known
    (:func:`~.entry.engine_path`: an entry class of ``module`` whose engine call reaches the
    method holding the line); ``methods``: :func:`_enclosing` of the module."""
    from .entry import engine_path

    for f in findings:
        c, fn = _where(methods, f.row)
        if c is None:
            continue
        try:
            words = engine_path(rf, module, (module, c.name), fn.name)
        except Exception:  # noqa: BLE001  (not known: nothing added)
            words = None
        if words is not None and not any(e.startswith("path: ") for e in f.explanation):
            f.explanation = [*f.explanation, f"path: {words} -> line {f.row}"]


# the rank of each witness's words (guards.rank_words)
_RANK_ENVS = tuple((rank_words(env).split(" (", 1)[0], env) for env in (
    {"@first": True, "@last": False}, {"@first": False, "@last": True}, {"@first": False, "@last": False}))


def add_first_waits(rf, findings: list, methods) -> None:
    """Say, in the message and the ``= why:`` lines of each finding whose witness names one rank,
    when a ``recv`` of the same function that nothing answers on that rank runs before its line
    (:func:`~.p2p.unanswered_recv`): the rank waits there forever, and the failure the message
    names is not the first thing that goes wrong.  ``methods``: :func:`_enclosing` of the module."""
    from .p2p import unanswered_recv

    for f in findings:
        words = str((f.witness or {}).get("ranks", ""))
        env = next((dict(e) for w, e in _RANK_ENVS if words.startswith(w)), None)
        c, fn = _where(methods, f.row)
        if env is None or fn is None:
            continue
        env.update((k, bool(v)) for k, v in ((f.witness or {}).get("config") or {}).items() if isinstance(v, bool))
        try:
            got = unanswered_recv(rf.function_guards(fn, c.name), f.row, env)
        except Exception:  # noqa: BLE001  (not known: nothing added)
            got = None
        if got is None:
            continue
        sends = ", ".join(map(str, got.sends))
        to = " and ".join(f"the {d} rank" for d in got.dsts)
        why = (f"first, on {words.split(' (')[0]}: the `recv` at line {got.row} waits for the {got.src} rank, which "
               f"sends only to {to} here (line {sends}): that rank hangs there before it reaches this line")
        f.message = (f"{f.message} Before that, though, such a rank hangs in the `recv` at line {got.row}: the "
                     f"{got.src} rank sends only to {to}.")
        f.explanation = [*f.explanation, why]


def _after_loop(fn, fail_row: int, row: int) -> bool:
    """Whether ``row`` lies in a statement of ``fn``'s body after the loop, a statement of that
    body itself, that holds ``fail_row``: ``row`` runs only once the loop is done."""
    body = getattr(fn, "body", [])
    at = next((i for i, st in enumerate(body) if st.lineno <= fail_row <= st.end_lineno), None)
    if at is None or not isinstance(body[at], (ast.For, ast.AsyncFor, ast.While)):
        return False
    return any(st.lineno <= row <= st.end_lineno for st in body[at + 1:])


def _masked(rf, ctx, f, c, fn, fails, subclassed) -> str | None:
    key = (ctx.module, c.name)
    here = os.path.basename(ctx.file.path)
    for fail in fails:
        if fail.row == f.row and fail.file is None:
            continue  # the failure itself
        first = f"{fail.file or here}:{fail.row} ({fail.what})"
        if fail.phase == 0 and fail.key == key:
            if fn.name == "__init__" and f.row > fail.row:
                return f"{first} fails first, on every rank of a pipeline of size >= 2, in `{c.name}.__init__`"
            if fn.name != "__init__" and c.name not in subclassed:
                return f"{first} fails first: `{c.name}.__init__` never completes under pipeline parallelism"
        if fail.later_ranks_only:
            if fail.key != key or not _later_ranks_only(f):
                continue
            later = ((fn.name == "forward" and fail.file is None and f.row > fail.row)
                     or (phase_of(fn.name) == SERVE and fn.name != "forward")
                     or (f.fix_data or {}).get("fails_in") == "serving")
            if later:
                return (f"{first} fails first, on every rank after the first, when the engine calls "
                        f"`{c.name}.forward`; this line fails only later, on such a rank")
            continue
        if fail.phase == LOAD and fail.key == key and fail.file is None and _after_loop(fn, fail.row, f.row):
            return (f"{first} fails first, on every rank of a pipeline of size >= 2: the loop over the "
                    f"checkpoint that holds it runs before this line in `{c.name}.{fn.name}`")
        serves = phase_of(fn.name) == SERVE or (f.fix_data or {}).get("fails_in") == "serving"
        if fail.phase == LOAD and serves:  # (a tied head set in `__init__` fails when the engine serves)
            steps = _entry_path(rf, ctx.module, fail, key, fn.name if phase_of(fn.name) == SERVE else "forward")
            if steps is not None:
                return (f"{first} fails first: the engine loads the weights ({_describe(steps[0])}) before "
                        f"it serves ({_describe(steps[1])})")
    return None

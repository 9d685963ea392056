"""PPA409 override-drops-pp-branch: a subclass's ``load_weights`` or ``__init__`` replaces its
parent's without calling it and without the parent's branch that only some pipeline-parallel ranks
take (the tied head's copy on the last rank): under pipeline parallelism those ranks skip what the
branch does (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk

# the methods whose overrides are judged: what the engine runs once per rank to build and load
_METHODS = ("load_weights", "__init__")
# the classes judged: subclasses of a model class (the classes whose `load_weights` the loader
# calls, or a backbone's): a base named `...ForCausalLM`, `...ForConditionalGeneration` or
# `...Model`; the prefilter and the collector agree on it (a base list without parentheses)
_MODEL_BASES = ("ForCausalLM", "ForConditionalGeneration", "Model")
_MODEL_BASE_LINE = re.compile(rb"^[ \t]*class \w+\([^)]*?\w(ForCausalLM|ForConditionalGeneration|Model)\b", re.M)


def _model_base_line(data: bytes) -> bool:
    """``_MODEL_BASE_LINE.search(data) is not None``, tried only at the lines that start with
    ``class `` (every match does)."""
    j = data.find(b"class ")
    while j >= 0:
        start = data.rfind(b"\n", 0, j) + 1
        if not data[start:j].strip(b" \t") and _MODEL_BASE_LINE.match(data, start) is not None:
            return True
        j = data.find(b"class ", j + 6)
    return False


def _ast():
    import ast

    return ast


def _guards():
    from pp_attr_lint.semantic import guards

    return guards


def _effects(test, block) -> list:
    """What a branch is about: the string constants of its test (``"lm_head.weight"``), the
    ``self`` attributes its block stores and the ``self`` methods it calls."""
    ast = _ast()
    out = {n.value for n in _fast_walk(test) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for b in block:
        for n in _fast_walk(b):
            target = n.func if isinstance(n, ast.Call) else n if isinstance(n, ast.Attribute) and \
                isinstance(n.ctx, ast.Store) else None
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                out.add(f"self.{target.attr}")
    return sorted(out)


def _tokens(fn) -> set:
    """The string constants of ``fn`` and the ``self.x`` it stores or calls (see :func:`_effects`)."""
    ast = _ast()
    return {n.value for n in _fast_walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)} | set(
        _effects(ast.Constant(value=None), fn.body))


def _pp_branch(fn, lines):
    """``[line, test in words, rank words, config, effects]`` of the first ``if`` of ``fn`` (at any
    depth) whose test names a pipeline-parallel rank and whose branch does work (assigns or calls,
    not only raises or leaves); ``None`` when there is none."""
    ast, guards = _ast(), _guards()
    text = lines.span(fn)
    if not any(w in text for w in guards.RANK_PREDICATES):
        return None
    for n in _fast_walk(fn):
        if not isinstance(n, ast.If):
            continue
        f = guards.formula(n.test)
        if not guards.rank_atoms(f):
            continue
        for block, g in ((n.body, f), (n.orelse, guards.f_not(f))):
            env = guards.satisfying(g)
            if env is None or guards.satisfying(guards.f_not(g)) is None:
                continue  # taken on every rank, or on none
            works = any(isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or
                        (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)) for b in block for s in _fast_walk(b))
            effects = _effects(n.test, block)
            if works and block and effects:
                config = {k: v for k, v in env.items() if not k.startswith("@") and k.isidentifier()}
                return [block[0].lineno if block is n.orelse else n.lineno, guards.describe(g), guards.rank_words(env),
                        config, effects]
    return None


def _refuses_pp(tree) -> bool:
    """Whether the module raises under pipeline parallelism (``if pp_group.world_size != 1: raise``,
    a test :func:`pp_attr_lint.guards.formula` reads as true under PP): its classes never run there."""
    ast, guards = _ast(), _guards()
    return any(isinstance(n, ast.If) and n.body and isinstance(n.body[-1], ast.Raise)
               and guards.formula(n.test) == guards.TRUE for n in _fast_walk(tree))


def _calls_parent(fn, name: str) -> bool:
    """Whether ``fn`` calls ``super().<name>(...)`` (or ``super(C, self).<name>``)."""
    ast = _ast()
    for n in _fast_walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name \
                and isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", None) == "super":
            return True
    return False


def _model_subclass(cls) -> bool:
    """Whether ``cls``'s bases are plain names, one of them a model class (:data:`_MODEL_BASES`)."""
    ast = _ast()
    names = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", None) for b in cls.bases]
    return all(names) and any(n.endswith(s) and len(n) > len(s) for n in names for s in _MODEL_BASES)


def _collect(tree, lines) -> dict:
    """``{class: {method: [def line, col, end col, branch or None, tokens or None]}}``: ``branch``
    as :func:`_pp_branch`; ``tokens`` (:func:`_tokens`) when the method neither calls its parent's
    nor names a rank (a candidate for dropping the parent's branch); an ``__init__`` only when it
    calls a base's ``__init__`` by name (``nn.Module.__init__(self)``), skipping its parent's; only in
    a model subclass (:func:`_model_subclass`).
    Empty when the module refuses pipeline parallelism (:func:`_refuses_pp`)."""
    rank_words = _guards().RANK_PREDICATES  # the one vocabulary's rank predicates
    ast = _ast()
    out = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        judged = _model_subclass(cls)  # its overrides are judged; any class may be a parent
        rec = {}
        for m in cls.body:
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name in _METHODS:
                text = lines.span(m)
                own = judged and not any(w in text for w in rank_words) and not _calls_parent(m, m.name) and (
                    m.name != "__init__" or ".__init__(self" in text)  # an __init__ that skips its parent's
                line_text = lines.lines[m.lineno - 1]
                col = max(line_text.find(m.name), 0)
                rec[m.name] = [m.lineno, col, col + len(m.name), _pp_branch(m, lines),
                               sorted(_tokens(m)) if own else None]
        if rec:
            out[cls.name] = rec
    if any(rec[4] is not None for r in out.values() for rec in r.values()) and _refuses_pp(tree):
        return {}
    return out


class OverrideDropsPPBranch(Rule):
    def prefilter(self, data: bytes) -> bool:
        return (b"def load_weights" in data or b".__init__(self" in data) and _model_base_line(data)

    def collect(self, tree, lines):
        # runs on every parsed file: a parent needs a rank predicate, an override its method
        text = lines.source
        if not any(w in text for w in (*_guards().RANK_PREDICATES, "def load_weights", ".__init__(self")):
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        out = []
        for cls, methods in sorted(facts.items()):
            todo = [(name, rec) for name, rec in sorted(methods.items()) if rec[4] is not None]
            if not todo:
                continue
            try:
                mro = ctx.resolver.mro((ctx.module, cls))
            except Unresolved as e:  # a base that cannot be read: its branch cannot be compared
                out += [self._unread(ctx, cls, name, rec, e) for name, rec in todo]
                continue
            for name, (line, col, end_col, _own_branch, tokens) in todo:
                for entry in mro[1:]:
                    if entry[0] == EXTERNAL:
                        break
                    parent = (ctx.facts(self.code, entry[0]) or {}).get(entry[1], {}).get(name)
                    if parent is None:
                        continue
                    branch = parent[3]
                    if branch is not None and not set(branch[4]) & set(tokens):
                        out += rf.unless_refused(self.code, cls, [self._finding(ctx, cls, name, line, col, end_col,
                                                                                entry, branch)])
                    break  # the first definition on the MRO is the one replaced
        return out

    def _unread(self, ctx, cls, name, rec, e):
        """The not-judged record of an override whose class's bases cannot be read (``e``)."""
        from pp_attr_lint.model import NotJudged

        return NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=rec[0], column=rec[1] + 1,
                         dep_path=e.path, detail=f"whether `{cls}.{name}` drops a parent's branch for some "
                         f"pipeline-parallel ranks (its bases are not read: {e.detail})")

    def _finding(self, ctx, cls, name, line, col, end_col, entry, branch):
        at, test, where, config, effects = branch
        parent = f"{entry[1]}.{name}"
        message = (f"`{cls}.{name}` replaces `{parent}` without calling it and without its branch for some "
                   f"pipeline-parallel ranks (`if {test}`, line {at} of `{entry[0]}`): under pipeline parallelism "
                   f"{where} skips what that branch does.")
        what = ", ".join(f"`{e}`" if e.startswith("self.") else f"`{e!r}`" for e in effects)
        explanation = [f"`{parent}` does work only when {test} (line {at}), about {what}",
                       f"`{cls}.{name}` neither calls `super().{name}` nor names a pipeline-parallel rank, and "
                       f"names none of {what}",
                       f"{where} runs the override, where the parent's branch would have run"]
        return self.finding(ctx, line, col, line, end_col, message, explanation,
                            help=f"Keep the parent's branch in the override (or call `super().{name}(...)` for "
                                 f"what it does)",
                            witness={"ranks": where, "config": config})


RULE = OverrideDropsPPBranch(
    code="PPA409",
    name="override-drops-pp-branch",
    summary="a subclass override drops its parent's branch for some pipeline-parallel ranks",
    version=1,
)

"""PPA405 config-layer-id-index: ``self.layers[layer_id].attr`` where ``self.layers`` comes from
``make_layers`` and ``layer_id`` walks a list of global layer ids from the model config
(``for layer_id in config.engram_layer_ids``): every rank that lacks one of those layers reads the
attribute on a ``PPMissingLayer`` (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.rule_api import Rule, module_classes
from pp_attr_lint.rule_api import fast_walk as _fast_walk

# the range attributes a make_layers tuple assigns besides the list (vLLM: start, end, list;
# SGLang: list, start, end)
_RANGE = frozenset({"start_layer", "end_layer"})
# words that, in a test around the read or in the loop, mean the code decides on what this rank
# owns (the read is then left alone: precision over recall)
_GUARD_WORDS = ("start_layer", "end_layer", "PPMissingLayer", "isinstance", "hasattr", "getattr", "is_first_rank",
                "is_last_rank", "pp_group", "get_pp_group", "pp_missing", "except")
# calls that keep the elements of their (first) iterable
_PASS_THROUGH = frozenset({"sorted", "list", "set", "tuple", "reversed", "frozenset"})


# a config attribute that names layers (`config.engram_layer_ids`, `hf_config.moe_layers`), not a
# count (`num_hidden_layers`, `n_layer`) or a norm's epsilon (`layer_norm_eps`): what the prefilter
# and the loop sources agree on
_CONFIG_LAYERS = re.compile(rb"config\.(?!num_|n_|layer_norm)[A-Za-z_]*layer")


def _ast():
    import ast

    return ast

def _chain(node) -> list | None:
    """``["self", "config", "x"]`` for ``self.config.x``; ``None`` for other expressions."""
    ast = _ast()
    out = []
    while isinstance(node, ast.Attribute):
        out.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    out.append(node.id)
    return out[::-1]


def _config_list(node) -> str | None:
    """The text of ``node`` when it is an attribute of a model config naming layers
    (``config.engram_layer_ids``, ``self.config.moe_layer_ids``); ``None`` otherwise."""
    c = _chain(node)
    if c is None or len(c) < 2 or not _CONFIG_LAYERS.search(f"config.{c[-1]}".encode()):
        return None
    if not any(p == "config" or p.endswith("_config") for p in c[:-1]):
        return None
    return ".".join(c)


def _bind(target, it, env: dict) -> None:
    """Record in ``env`` the loop names of ``target`` that take the config list's elements from
    iterable ``it`` (through ``zip``, ``enumerate`` and :data:`_PASS_THROUGH` calls)."""
    ast = _ast()
    while isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in _PASS_THROUGH \
            and len(it.args) == 1:
        it = it.args[0]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("zip", "enumerate") \
            and not it.keywords:
        if not isinstance(target, ast.Tuple):
            return
        pairs = list(zip(target.elts, it.args)) if it.func.id == "zip" else \
            ([(target.elts[1], it.args[0])] if len(target.elts) == 2 and it.args else [])
        for t, a in pairs:
            _bind(t, a, env)
        return
    src = _config_list(it)
    if src is not None and isinstance(target, ast.Name):
        env[target.id] = src


def _mentions_guard(text: str) -> bool:
    return any(w in text for w in _GUARD_WORDS)


class _Reads:
    """Finds ``self.<list>[v].attr`` with ``v`` a config-list loop name in one method."""

    def __init__(self, lists: frozenset, lines, source):
        self.lists, self.lines, self.source, self.out = lists, lines, source, []
        self.binder: dict[str, object] = {}  # loop name -> the `for` statement that binds it
        self.current = None  # the simple statement whose expressions are walked
        self.conditional = 0  # inside an operand that may not be evaluated

    def fix_at(self, var: str):
        """``[row, col, indent]`` where a skip of the ids this rank does not own can go (the first
        statement of the ``for`` loop that binds ``var``), when that changes nothing on a rank
        where the read works: the read is in a plain statement of the loop's own body, evaluated
        whenever that statement runs, and only plain statements (no branch, loop or exit) come
        before it; ``None`` otherwise."""
        ast = _ast()
        loop = self.binder.get(var)
        if loop is None or self.conditional or loop.orelse or self.current not in loop.body:
            return None
        first = loop.body[0]
        if first.lineno == loop.lineno:
            return None  # `for x in y: stmt` on one line
        before = loop.body[:loop.body.index(self.current)]
        if not all(isinstance(b, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)) for b in before):
            return None
        text = self.lines.lines[first.lineno - 1]
        indent = text[:len(text) - len(text.lstrip())]
        return [first.lineno, self.lines.col(first.lineno, first.col_offset), indent]

    def text(self, node) -> str:
        return self.source(node) or ""

    def stmts(self, body, env) -> None:
        ast = _ast()
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(st, ast.If):
                self.expr(st.test, env)
                if not _mentions_guard(self.text(st.test)):
                    self.stmts(st.body, env)
                    self.stmts(st.orelse, env)
                continue
            if isinstance(st, ast.Try):
                continue  # a handler may catch what the read raises
            if isinstance(st, (ast.For, ast.AsyncFor)):
                self.expr(st.iter, env)
                inner = dict(env)
                _bind(st.target, st.iter, inner)
                if inner != env and _mentions_guard(self.text(st)):
                    inner = env  # the loop decides on what this rank owns somewhere
                saved = dict(self.binder)
                self.binder.update({k: st for k in inner if inner[k] is not env.get(k)})
                self.stmts(st.body, inner)
                self.binder = saved
                self.stmts(st.orelse, env)
                continue
            if isinstance(st, (ast.While, ast.With, ast.AsyncWith)):
                for child in ast.iter_child_nodes(st):
                    if isinstance(child, ast.expr):
                        self.expr(child, env)
                self.stmts(st.body, env)
                self.stmts(getattr(st, "orelse", []), env)
                continue
            self.current = st
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.expr(child, env)
            self.current = None

    def expr(self, node, env) -> None:
        ast = _ast()
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(env)
            for gen in node.generators:
                self.expr(gen.iter, inner)
                if any(_mentions_guard(self.text(c)) for c in gen.ifs):
                    return  # filtered on what this rank owns
                _bind(gen.target, gen.iter, inner)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            saved = dict(self.binder)
            self.binder.update({k: None for k in inner if inner[k] is not env.get(k)})
            for p in parts + [c for g in node.generators for c in g.ifs]:
                self.expr(p, inner)
            self.binder = saved
            return
        if isinstance(node, (ast.IfExp, ast.Lambda)) or (isinstance(node, ast.BoolOp) and _mentions_guard(self.text(node))):
            return  # a conditional read: what decides it is not read
        if env and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Subscript):
            sub = node.value
            base = _chain(sub.value)
            if base and len(base) == 2 and base[0] == "self" and base[1] in self.lists \
                    and isinstance(sub.slice, ast.Name) and sub.slice.id in env:
                self.out.append((base[1], sub.slice.id, env[sub.slice.id], node.attr, node.lineno,
                                 self.lines.col(node.lineno, node.col_offset), node.end_lineno,
                                 self.lines.col(node.end_lineno, node.end_col_offset), self.fix_at(sub.slice.id)))
        for k, child in enumerate(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)):
            later = isinstance(node, ast.BoolOp) and k > 0
            self.conditional += later
            self.expr(child, env)
            self.conditional -= later


def _collect(tree, lines) -> list:
    """``[[class, method, list attr, loop name, config list, attr, line, col, end_line, end_col,
    fix]]`` (``fix``: :meth:`_Reads.fix_at`)."""
    ast = _ast()
    out = []

    def source(node):
        return "".join(lines.lines[node.lineno - 1:node.end_lineno])

    for cls in module_classes(tree):
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        lists = set()
        for m in methods:
            if "make_layers" not in source(m):
                continue
            for st in _fast_walk(m):
                if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) \
                        and (_chain(st.value.func) or [""])[-1] == "make_layers":
                    for t in st.targets:
                        if isinstance(t, ast.Tuple):
                            names = [c[1] for c in map(_chain, t.elts) if c and len(c) == 2 and c[0] == "self"]
                            rest = [n for n in names if n not in _RANGE]
                            if len(names) == len(t.elts) == 3 and len(rest) == 1 and set(names) - set(rest) == _RANGE:
                                lists.add(rest[0])
        if not lists:
            continue
        for m in methods:
            body = source(m)
            if not any(f"self.{a}[" in body for a in lists) or "config" not in body:
                continue
            r = _Reads(frozenset(lists), lines, source)
            r.stmts(m.body, {})
            out += [[cls.name, m.name, *rec] for rec in r.out]
    return out


class ConfigLayerIdIndex(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"make_layers" in data and _CONFIG_LAYERS.search(data) is not None

    def collect(self, tree, lines):
        text = "".join(lines.lines)
        if "make_layers" not in text or _CONFIG_LAYERS.search(text.encode()) is None:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        out = []
        fixed = set()  # one skip per loop: the loop's other reads are fixed by the same edit
        for cls, method, lst, var, src, attr, line, col, end_line, end_col, at in facts:
            fix = None
            if at is not None and (at[0], at[1]) not in fixed:
                fixed.add((at[0], at[1]))
                unit = "\t" if "\t" in at[2] else "    "
                fix = self.make_fix("safe", f"Skip the ids this rank does not own (`{var}` outside "
                                            f"`[self.start_layer, self.end_layer)`)",
                                    [self.replace((at[0], at[1], at[0], at[1]),
                                                  f"if not self.start_layer <= {var} < self.end_layer:\n{at[2]}{unit}"
                                                  f"continue  # another pipeline-parallel rank owns this layer\n{at[2]}")])
            message = (f"`self.{lst}[{var}].{attr}` in `{cls}.{method}`: `{var}` walks `{src}`, global layer ids, "
                       f"but `self.{lst}` comes from `make_layers`, whose slots outside "
                       f"`[start_layer, end_layer)` hold `PPMissingLayer`: AttributeError `{attr}` on every "
                       f"pipeline-parallel rank that lacks one of those layers.")
            explanation = [f"`self.{lst}` is assigned from `make_layers` in `{cls}`: this rank's layers only",
                           f"`{var}` takes every id of `{src}`, with no test of `start_layer` / `end_layer` or "
                           f"`isinstance(..., PPMissingLayer)` on the way to the read",
                           "fails on any rank of a pipeline of size >= 2 that does not own one of the listed "
                           "layers (rank 0 for a late one, the last rank for an early one)"]
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation, fix=fix,
                help=f"Skip the ids this rank does not own: `if not self.start_layer <= {var} < self.end_layer: "
                     f"continue` (or filter `{src}` to that range)",
                witness={"ranks": f"every pipeline-parallel rank that does not own a layer of `{src}`",
                         "config": {}})])
        return out


RULE = ConfigLayerIdIndex(
    code="PPA405",
    name="config-layer-id-index",
    summary="a global layer id from a config list indexes a make_layers list",
    fix_applicability="safe",
    version=2,
)

"""PPA405 config-layer-id-index: ``self.layers[i].attr`` (or ``self.model.layers[i].attr``) where the
list comes from ``make_layers`` and ``i`` walks a list of global layer ids of the model config
(``for i in config.engram_layer_ids``) or, in ``load_weights``, is parsed from a checkpoint name
(``int(name.split(".")[2])``): a rank that lacks such a layer reads a ``PPMissingLayer`` (README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.kinds.placeholder import FACTS_KEY, collect_facts, read_not_judged
from pp_attr_lint.rule_api import Rule, module_classes
from pp_attr_lint.rule_api import fast_walk as _fast_walk

# the range attributes a make_layers tuple assigns besides the list (vLLM: start, end, list)
_RANGE = frozenset({"start_layer", "end_layer"})
# words that, in a test around the read or in the loop, mean the code decides on what this rank
# owns (the read is then left alone: precision over recall)
_GUARD_WORDS = ("start_layer", "end_layer", "PPMissingLayer", "isinstance", "hasattr", "getattr", "is_first_rank",
                "is_last_rank", "pp_group", "get_pp_group", "pp_missing", "except")
_mentions_guard = re.compile("|".join(_GUARD_WORDS)).search
# calls that keep the elements of their (first) iterable
_PASS_THROUGH = frozenset({"sorted", "list", "set", "tuple", "reversed", "frozenset"})


# a config attribute that names layers (`config.engram_layer_ids`, `hf_config.moe_layers`), not a
# count (`num_hidden_layers`, `n_layer`) or a norm's epsilon (`layer_norm_eps`): what the prefilter
# and the loop sources agree on
_CONFIG_LAYERS = re.compile(rb"config\.(?!num_|n_|layer_norm)[A-Za-z_]*layer")
_LONG = re.compile(rb"self(?:\.\w+){2,}\[")  # `self.model.layers[`: a list of another object


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


# a global layer id read from a checkpoint weight's name (`model.layers.7.mlp.up_proj.weight`)
_PARSED_ID = re.compile(r"int\(\w+\.split\('[^']*'\)\[\d+\]\)")


class _Reads:
    """Finds ``self.<list>[v].attr`` (or ``self.a.<list>[v].attr``) with ``v`` a config-list loop
    name, or in ``load_weights`` a name assigned a parsed checkpoint id, in method ``fn``."""

    def __init__(self, lists: frozenset, lines, source, fn):
        self.lists, self.lines, self.source, self.out, self.fn = lists, lines, source, [], fn
        self.parsed = "load_weights" in fn.name
        self.binder: dict[str, object] = {}  # name -> the `for` statement (or method) that binds it
        self.current = None  # the simple statement whose expressions are walked
        self.conditional = 0  # inside an operand that may not be evaluated

    def fix_at(self, var: str):
        """``[row, col, indent]`` of the first statement of the ``for`` loop that binds ``var``,
        where a skip of the ids this rank does not own changes nothing on a rank where the read
        works (the read is in a plain statement of the loop's body, evaluated whenever it runs,
        after plain statements only); ``None`` otherwise."""
        ast = _ast()
        loop = self.binder.get(var)
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or self.conditional or loop.orelse or self.current not in loop.body:
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

    def guarded_before(self, var: str, read) -> bool:
        """Whether code from what binds ``var`` up to ``read`` names a test of what this rank owns
        (code after the read cannot keep it from raising on the first id another rank owns)."""
        at, lines = self.binder.get(var), self.lines.lines
        tail = lines[read.lineno - 1].encode()[:read.col_offset].decode(errors="ignore")
        return at is not None and bool(_mentions_guard("".join(lines[at.lineno - 1:read.lineno - 1]) + tail))

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
                saved = dict(self.binder)
                self.binder.update({k: st for k in inner if inner[k] is not env.get(k)})
                self.stmts(st.body, inner)
                self.binder = saved
                self.stmts(st.orelse, env)
                continue
            if isinstance(st, (ast.While, ast.With, ast.AsyncWith)):
                for c in (c for c in ast.iter_child_nodes(st) if isinstance(c, ast.expr)):
                    self.expr(c, env)
                self.stmts(st.body, env)
                self.stmts(getattr(st, "orelse", []), env)
                continue
            self.current = st
            for c in (c for c in ast.iter_child_nodes(st) if isinstance(c, ast.expr)):
                self.expr(c, env)
            self.current = None
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                env.pop(name, None)  # bound again
                if self.parsed and _PARSED_ID.fullmatch(ast.unparse(st.value)):
                    env[name], self.binder[name] = ast.unparse(st.value), self.fn

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
            if base and base[0] == "self" and (len(base) > 2 or len(base) == 2 and base[1] in self.lists) \
                    and isinstance(sub.slice, ast.Name) and sub.slice.id in env \
                    and not self.guarded_before(sub.slice.id, node):
                self.out.append((base, sub.slice.id, env[sub.slice.id], node.attr, node.lineno,
                                 self.lines.col(node.lineno, node.col_offset), node.end_lineno,
                                 self.lines.col(node.end_lineno, node.end_col_offset), self.fix_at(sub.slice.id)))
        for k, child in enumerate(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)):
            later = isinstance(node, ast.BoolOp) and k > 0
            self.conditional += later
            self.expr(child, env)
            self.conditional -= later


def _collect(tree, lines) -> list:
    """``[[class, method, def line, list chain, name, id source, attr, line, col, end_line,
    end_col, fix]]`` (``fix``: :meth:`_Reads.fix_at`); a chain of more than two names is a list of
    another object, told at check time."""
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
        for m in methods:
            body = source(m)
            if not any(f"self.{a}[" in body for a in lists) and not _LONG.search(body.encode()):
                continue
            if "config" not in body and not ("load_weights" in m.name and ".split(" in body):
                continue
            r = _Reads(frozenset(lists), lines, source, m)
            r.stmts(m.body, {})
            out += [[cls.name, m.name, m.lineno, *rec] for rec in r.out]
    return out


class ConfigLayerIdIndex(Rule):
    def prefilter(self, data: bytes) -> bool:
        return (b"make_layers" in data or _LONG.search(data) is not None) \
            and (_CONFIG_LAYERS.search(data) is not None or b".split(" in data)

    def collect(self, tree, lines):
        if not self.prefilter(lines.source.encode()):
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic.model import RankFacts

        rf, out, fixed = RankFacts.of(ctx), [], set()  # fixed: one skip per loop fixes its other reads
        for cls, method, fline, chain, var, src, attr, line, col, end_line, end_col, at in facts:
            recv, lst, how = ".".join(chain[:-1]), chain[-1], f"`self.{chain[-1]}` is assigned from `make_layers` in `{cls}`"
            if len(chain) > 2:  # a list of another object: the semantic model tells whose
                owners, how = rf.list_owners(tuple(chain), cls, fline)
                if not owners:
                    out += [n for n in [read_not_judged(self.code, ctx, rf.owner_failure, chain, (line, col))] if n]
                    continue
                if not how.startswith("`") or rf.conditional_list_note(owners, lst) is not None:
                    at = None  # the range attributes of the owner are not established: help text only
            fix, rng = None, f"{recv}.start_layer <= {var} < {recv}.end_layer"
            if at is not None and (at[0], at[1]) not in fixed:
                fixed.add((at[0], at[1]))
                unit = "\t" if "\t" in at[2] else "    "
                fix = self.make_fix("safe", f"Skip the ids this rank does not own (`{var}` outside "
                                            f"`[{recv}.start_layer, {recv}.end_layer)`)",
                                    [self.replace((at[0], at[1], at[0], at[1]), f"if not {rng}:\n{at[2]}{unit}"
                                                  f"continue  # another pipeline-parallel rank owns this layer\n{at[2]}")])
            parsed = src.startswith("int(")
            what = f"is `{src}`, a global layer id read from a checkpoint weight's name" if parsed else \
                f"walks `{src}`, global layer ids"
            ids = "that layer" if parsed else "one of those layers"
            message = (f"`{recv}.{lst}[{var}].{attr}` in `{cls}.{method}`: `{var}` {what}, but "
                       f"`{recv}.{lst}` comes from `make_layers`, whose slots outside `[start_layer, end_layer)` hold "
                       f"`PPMissingLayer`: AttributeError `{attr}` on every pipeline-parallel rank that lacks {ids}.")
            explanation = [f"{how}: this rank's layers only", f"`{var}` takes every id of `{src}`"
                           + (" (every rank reads every checkpoint weight)" if parsed else "") + ", with no test of "
                           "`start_layer` / `end_layer` or `isinstance(..., PPMissingLayer)` on the way to the read",
                           "fails on any rank of a pipeline of size >= 2 that does not own " + (ids if parsed else
                           "one of the listed layers (rank 0 for a late one, the last rank for an early one)")]
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation, fix=fix,
                help=f"Skip the ids this rank does not own: `if not {rng}: continue`"
                     + ("" if parsed else f" (or filter `{src}` to that range)"),
                witness={"ranks": f"every pipeline-parallel rank that does not own a layer of `{src}`",
                         "config": {}})])
        return out


RULE = ConfigLayerIdIndex(
    code="PPA405",
    name="config-layer-id-index",
    summary="a global layer id from a config list indexes a make_layers list",
    fix_applicability="safe",
    version=3,
    uses_facts=((FACTS_KEY, collect_facts, 1),),
)

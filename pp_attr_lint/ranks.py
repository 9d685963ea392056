"""What a value is on each pipeline-parallel rank: placeholders, ``make_layers`` lists and the
guards that decide which rank runs a line.  Shared by the placeholder rules (PPA101-PPA103).

Guards are boolean formulas over *atoms*: ``@first`` (``...is_first_rank``), ``@last``
(``...is_last_rank``) and any other test, named by its last dotted component
(``self.config.tie_word_embeddings`` and ``config.tie_word_embeddings`` are the same atom
``tie_word_embeddings``) or by its source text.  A formula is plain data::

    ("T",) | ("F",) | ("a", name) | ("not", f) | ("and", (f, ...)) | ("or", (f, ...))

A use fails on some rank when ``guard(use) and placeholder(value)`` is satisfiable with at most
one of ``@first``/``@last`` true (``pipeline_parallel_size >= 2``); other atoms are free.

The collector (:func:`collect`) records, per module, with positions (1-based rows, 0-based
character columns):

* ``assigns``: ``(class, method, attr, line, callee or None, guard)`` for ``self.attr = value``
  (one per branch of a conditional expression); ``callee`` is the dotted name of a called class;
* ``lists``: ``(class, attr, line, guard)`` for ``self.a, self.b, self.attr = make_layers(...)``;
* ``uses``: one record per read that a placeholder could break, see :func:`collect`.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from . import facts as F
from .index.summary import child_nodes, dotted_name, ref_chain
from .index.summary import walk as _fast_walk
from .resolve import EXTERNAL as EXTERNAL_KEY
from .resolve import Unresolved, adds_no_attribute

TRUE = ("T",)
FIRST = ("a", "@first")
LAST = ("a", "@last")

# attribute names that vLLM and SGLang models assign a placeholder to on ranks that do not own
# them (llama.py, qwen2.py, ...: `embed_tokens`, `norm`, `lm_head`; gpt2/bloom: `wte`, `ln_f`)
PLACEHOLDER_NAMES = frozenset({"embed_tokens", "norm", "lm_head", "final_layernorm", "wte", "ln_f",
                               "embed_in", "final_layer_norm", "word_embeddings"})
# `lm_head` is used on the last rank: compute_logits passes it to LogitsProcessor, which reads
# its `weight` / `quant_method` (vllm/model_executor/layers/logits_processor.py)
LAST_RANK_ATTRS = frozenset({"lm_head"})
# methods that read attributes of their argument: ParallelLMHead.tie_weights(embed_tokens) reads
# `embed_tokens.weight` (vllm/model_executor/layers/vocab_parallel_embedding.py)
ARG_READERS = {"tie_weights": "weight"}
# the reasons a receiver's class was not found that say the run lacks code, not that the code
# cannot be told (a plugin checked without vLLM installed): a read then is listed as not judged
MISSING_CODE = frozenset({"module-not-found", "unknown-base", "syntax-error"})
# the most files holding a method's name that RankFacts.caller_rank reads to follow its callers
MAX_CALLER_FILES = 200


# -- formulas ----------------------------------------------------------------------------------
def f_and(*fs) -> tuple:
    fs = tuple(f for f in fs if f != TRUE)
    if not fs:
        return TRUE
    return fs[0] if len(fs) == 1 else ("and", fs)


def f_or(*fs) -> tuple:
    if any(f == TRUE for f in fs):
        return TRUE
    fs = tuple(f for f in fs if f != ("F",))
    if not fs:
        return ("F",)
    return fs[0] if len(fs) == 1 else ("or", fs)


def f_not(f) -> tuple:
    if f == TRUE:
        return ("F",)
    if f == ("F",):
        return TRUE
    return f[1] if f[0] == "not" else ("not", f)


def _atoms(f, out: set) -> set:
    if f[0] == "a":
        out.add(f[1])
    elif f[0] == "not":
        _atoms(f[1], out)
    elif f[0] in ("and", "or"):
        for g in f[1]:
            _atoms(g, out)
    return out


def _eval(f, env: dict) -> bool:
    k = f[0]
    if k == "T":
        return True
    if k == "F":
        return False
    if k == "a":
        return env[f[1]]
    if k == "not":
        return not _eval(f[1], env)
    if k == "and":
        return all(_eval(g, env) for g in f[1])
    return any(_eval(g, env) for g in f[1])


def satisfying(f) -> dict | None:
    """An assignment of the atoms that makes ``f`` true on a pipeline-parallel rank (never both
    ``@first`` and ``@last``), or ``None``.  At most 16 atoms are enumerated; a formula with more
    counts as unsatisfiable (silence over a guess)."""
    names = sorted(_atoms(f, set()) - {"@first", "@last"})
    if len(names) > 16:
        return None
    # the first and the last rank before a middle one (which needs pipeline_parallel_size >= 3)
    for first, last in ((True, False), (False, True), (False, False)):
        for values in itertools.product((False, True), repeat=len(names)):
            env = dict(zip(names, values), **{"@first": first, "@last": last})
            if _eval(f, env):
                return env
    return None


def rank_atoms(f) -> set:
    """The rank atoms (``@first``, ``@last``) a formula mentions."""
    return _atoms(f, set()) & {"@first", "@last"}


def rank_words(env: dict) -> str:
    """Which pipeline-parallel rank an assignment of :func:`satisfying` describes."""
    if env.get("@first"):
        return "the first pipeline-parallel rank"
    if env.get("@last"):
        return "the last pipeline-parallel rank (rank > 0)"
    return "a middle pipeline-parallel rank (pipeline_parallel_size >= 3)"


def describe(f) -> str:
    """A guard formula in words (``not is_first_rank and tie_word_embeddings``)."""
    k = f[0]
    if k == "T":
        return "always"
    if k == "F":
        return "never"
    if k == "a":
        return {"@first": "is_first_rank", "@last": "is_last_rank"}.get(f[1], f[1])
    if k == "not":
        return f"not {describe(f[1])}" if f[1][0] == "a" else f"not ({describe(f[1])})"
    joiner = " and " if k == "and" else " or "
    return joiner.join(describe(g) if g[0] in ("a", "not") else f"({describe(g)})" for g in f[1])


def when(f) -> str:
    """When a guard formula holds, as words that follow a verb: ``when not is_first_rank``, ``on
    every rank`` (always), ``on no rank`` (never)."""
    if f == TRUE:
        return "on every rank"
    if f == ("F",):
        return "on no rank"
    return f"when {describe(f)}"


def runs_when(guard) -> str:
    """``this line runs when ...`` / ``this line runs on every rank`` for a line's guard."""
    return f"this line runs {when(guard)}"


def witness(env: dict, rank: str) -> dict:
    """A finding's witness: the ranks it fails on (``rank``, words) and the values of the other
    tests of ``env`` (a :func:`satisfying` assignment: ``{"tie_word_embeddings": True}``), the
    configuration under which the failing line runs."""
    return {"ranks": rank, "config": {k: v for k, v in sorted(env.items()) if not k.startswith("@")}}


def describe_env(env: dict) -> str:
    other = [f"{k}={v}" for k, v in sorted(env.items()) if not k.startswith("@")]
    return f" with {', '.join(other)}" if other else ""



# -- collection --------------------------------------------------------------------------------
def _atom(node: ast.AST, names: dict | None = None) -> tuple:
    if names and isinstance(node, ast.Name) and node.id in names:
        return names[node.id]  # a local flag: `keep = pp.is_first_rank or tie` ... `if keep:`
    chain = ref_chain(node.func) if isinstance(node, ast.Call) else ref_chain(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return ("a", node.args[1].value)
    last = chain[-1] if chain else (node.attr if isinstance(node, ast.Attribute) else None)
    if last == F.FIRST_RANK_PREDICATE:
        return FIRST
    if last == F.LAST_RANK_PREDICATE:
        return LAST
    if chain is not None and not isinstance(node, ast.Call):
        return ("a", chain[-1])
    return ("a", ast.unparse(node))


def _pp_size_test(node: ast.AST) -> tuple | None:
    """``pp_group.world_size == 1`` is false and ``> 1`` / ``!= 1`` true under pipeline
    parallelism (the only setting the rules judge); ``None`` for other tests."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value == 1):
        return None
    left = ast.unparse(node.left)
    if not (left.endswith("pipeline_parallel_size") or (left.endswith("world_size") and "pp" in left)):
        return None
    op = node.ops[0]
    if isinstance(op, (ast.Eq, ast.LtE)):
        return ("F",)
    if isinstance(op, (ast.NotEq, ast.Gt)):
        return TRUE
    return None


def formula(node: ast.AST, names: dict | None = None) -> tuple:
    """The guard formula of an ``if`` test (see the module docstring); ``names`` maps local
    variables to the formulas they were assigned (``keep = pp.is_first_rank or tie``)."""
    pp = _pp_size_test(node)
    if pp is not None:
        return pp
    if isinstance(node, ast.BoolOp):
        parts = [formula(v, names) for v in node.values]
        return f_and(*parts) if isinstance(node.op, ast.And) else f_or(*parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f_not(formula(node.operand, names))
    if isinstance(node, ast.Constant):
        return TRUE if node.value else ("F",)
    return _atom(node, names)


def _exits(body: list) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _guards_chain(test: ast.AST, chains: set) -> None:
    """What a test checks: ``(chain, None)`` for ``isinstance(x, ...)`` or ``x is None`` (any read
    through ``x`` may be on another class than assumed), ``(chain, "a")`` for ``hasattr(x, "a")``
    and ``getattr(x, "a", default)`` (only ``x.a`` is safe); and ``(("#index", *chain, slot), "a")``
    for a read ``chain[slot].a`` that the test surely evaluated before what it guards runs (that
    read succeeded, so the same read after it cannot fail)."""
    for sub in _surely_evaluated(test):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Subscript):
            c = ref_chain(sub.value.value)
            if c is not None:
                chains.add((("#index", *c, ast.dump(sub.value.slice)), sub.attr))
    for sub in _fast_walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("isinstance", "hasattr", "getattr") and sub.args:
            c = ref_chain(sub.args[0])
            if c is None and isinstance(sub.args[0], ast.Subscript):  # `isinstance(x.layers[i], ...)`
                base = ref_chain(sub.args[0].value)
                c = None if base is None else ("#index", *base, ast.dump(sub.args[0].slice))
            if c is None:
                continue
            if sub.func.id == "isinstance":
                chains.add((c, None))
            elif len(sub.args) >= 2 and isinstance(sub.args[1], ast.Constant) and isinstance(sub.args[1].value, str):
                chains.add((c, sub.args[1].value))
            else:
                chains.add((c, None))
        elif isinstance(sub, ast.Compare):
            for side in [sub.left, *sub.comparators]:
                c = ref_chain(side)
                if c is not None:
                    chains.add((c, None))


def _surely_evaluated(node: ast.AST) -> list:
    """The nodes of expression ``node`` that every evaluation of it reaching a truthy result
    evaluates: all operands of ``and``, the first of ``or``, the test of a conditional expression,
    nothing inside a lambda, the first iterable of a comprehension."""
    out = []
    todo = [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if isinstance(n, ast.BoolOp):
            todo.extend(n.values if isinstance(n.op, ast.And) else n.values[:1])
        elif isinstance(n, ast.IfExp):
            todo.append(n.test)
        elif isinstance(n, ast.Lambda):
            continue
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            todo.append(n.generators[0].iter)
        else:
            todo.extend(child_nodes(n))
    return out


def _catches_attribute_error(handlers) -> bool:
    for h in handlers:
        t = h.type
        names = [t] if not isinstance(t, ast.Tuple) else list(t.elts)
        if t is None or any((dotted_name(n) or "").rsplit(".", 1)[-1] in ("AttributeError", "Exception", "BaseException")
                            for n in names):
            return True
    return False


def _index_kind(node: ast.AST, consts: dict | None = None) -> str | None:
    """``first`` for ``0``, ``last`` for ``-1`` / ``n - 1`` (n a layer count), ``const`` for another
    constant; ``None`` for an index that depends on the rank's range or a variable.  ``consts``
    maps the parameters of a nested function that every call binds to one constant to its node."""
    if consts and isinstance(node, ast.Name) and node.id in consts:
        return _index_kind(consts[node.id])
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return "first" if node.value == 0 else ("last" if node.value == -1 else "const")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int):
        return "last" if node.operand.value == 1 else "const"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.Constant) \
            and node.right.value == 1:
        left = node.left
        name = (ref_chain(left) or (None,))[-1]
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len":
            return "last"
        if name in ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_layer"):
            return "last"
    return None


class _Walker:
    """Walks one function body with the guard of each statement (see :func:`collect`)."""

    def __init__(self, lines, out: dict, cls: str | None, fn: ast.FunctionDef, names: frozenset):
        self.lines = lines
        self.out = out
        self.cls = cls
        self.fn = fn
        self.names = names
        args = fn.args.posonlyargs + fn.args.args
        self.self_name = args[0].arg if (cls is not None and args) else None
        self.flags: dict[str, tuple] = {}  # local variables assigned a test once: name -> formula
        # locals assigned a chain once, unconditionally (`layers = self.model.layers`): name -> chain
        self.aliases: dict[str, tuple | None] = {}
        # nested functions of the body: name -> [def node, guard at the def, call sites
        # (guard, guarded, protected)]; judged after the body (see walk_nested)
        self.nested: dict[str, list] = {}
        self.inner: tuple | None = None  # while walking a nested function: (its node, its constant params)

    def formula(self, node) -> tuple:
        return formula(node, self.flags)

    def split(self, test, guard, guarded) -> tuple:
        """The guards of the two branches of ``test`` and the receivers it checks."""
        chains = set(guarded)
        _guards_chain(test, chains)
        t = self.formula(test)
        return f_and(guard, t), f_and(guard, f_not(t)), frozenset(chains)

    def pos(self, node) -> tuple:
        return (node.lineno, self.lines.col(node.lineno, node.col_offset),
                node.end_lineno, self.lines.col(node.end_lineno, node.end_col_offset))

    def use(self, kind: str, chain, attr, node, guard, guarded: bool, extra=None) -> None:
        if self.inner is not None and (chain[0] != self.self_name or chain[0] in self.inner[2]):
            return  # in a nested function, only reads through the enclosing method's `self`
        self.out["uses"].append((kind, self.cls, self.fn.lineno, chain, attr, self.pos(node), guard, guarded, extra))

    # statements ------------------------------------------------------------------------------
    def block(self, body: list, guard: tuple, guarded: frozenset, protected: bool, loops: dict) -> None:
        for stmt in body:
            self.stmt(stmt, guard, guarded, protected, loops)
            if isinstance(stmt, ast.If) and _exits(stmt.body) and not stmt.orelse:
                # `if test: return` guards every statement after it with `not test`
                guard = f_and(guard, f_not(self.formula(stmt.test)))
                chains = set(guarded)
                _guards_chain(stmt.test, chains)
                guarded = frozenset(chains)

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        if isinstance(stmt, ast.If):
            self.exprs([stmt.test], guard, guarded, protected, loops)
            yes, no, chains = self.split(stmt.test, guard, guarded)
            self.block(stmt.body, yes, chains, protected, loops)
            self.block(stmt.orelse, no, chains, protected, loops)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.exprs([stmt.iter], guard, guarded, protected, loops)
            inner = dict(loops)
            src = self._loop_of(stmt.iter)
            if src is not None and isinstance(stmt.target, (ast.Name, ast.Tuple)):
                var = _loop_var(stmt.target, src[1])
                if var is not None:
                    inner[var] = (src[0], self._iter_info(stmt.iter, src[1], not src[2]))
            rng = self._range_len(stmt.iter)
            if rng is not None and isinstance(stmt.target, ast.Name):  # `for i in range(len(x.layers))`
                inner["#range:" + stmt.target.id] = (rng, self._iter_info(stmt.iter, False, False))
            self.block(stmt.body, guard, guarded, protected, inner)
            self.block(stmt.orelse, guard, guarded, protected, loops)
            return
        if isinstance(stmt, (ast.While,)):
            self.exprs([stmt.test], guard, guarded, protected, loops)
            self.block(stmt.body, guard, guarded, protected, loops)
            self.block(stmt.orelse, guard, guarded, protected, loops)
            return
        if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
            self.block(stmt.body, guard, guarded, protected or _catches_attribute_error(stmt.handlers), loops)
            for h in stmt.handlers:
                self.block(h.body, guard, guarded, protected, loops)
            self.block(stmt.orelse, guard, guarded, protected, loops)
            self.block(stmt.finalbody, guard, guarded, protected, loops)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            suppress = any(isinstance(i.context_expr, ast.Call)
                           and (dotted_name(i.context_expr.func) or "").endswith("suppress") for i in stmt.items)
            self.exprs([i.context_expr for i in stmt.items], guard, guarded, protected, loops)
            self.block(stmt.body, guard, guarded, protected or suppress, loops)
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # judged where it is called (walk_nested); a second binding of the name: never
            self.nested[stmt.name] = [stmt, guard, []] if stmt.name not in self.nested else None
            return
        if isinstance(stmt, ast.ClassDef):
            return  # nested classes run elsewhere (or never)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if self.inner is None:  # what a nested function assigns is not recorded
                self.assign(targets, stmt.value, guard)
            self._unpacked_call(targets, stmt.value, guard, guarded, protected, loops)
            for t in targets:
                if isinstance(t, ast.Name):
                    c = ref_chain(stmt.value) if len(targets) == 1 else None
                    seen = t.id in self.aliases
                    self.aliases[t.id] = c if not seen and guard == TRUE and c is not None and len(c) >= 2 else None
                    if t.id in self.flags or guard != TRUE:
                        self.flags[t.id] = ("a", f"{t.id}@{stmt.lineno}")  # set twice or conditionally: opaque
                    else:
                        self.flags[t.id] = self.formula(stmt.value)
        self.exprs([stmt], guard, guarded, protected, loops)

    def assign(self, targets, value, guard) -> None:
        for t in targets:
            if isinstance(t, ast.Tuple) and isinstance(value, ast.Call) and \
                    (dotted_name(value.func) or "").rsplit(".", 1)[-1] == F.MAKE_LAYERS:
                attrs = [e.attr for e in t.elts if isinstance(e, ast.Attribute)
                         and isinstance(e.value, ast.Name) and e.value.id == self.self_name]
                rest = [a for a in attrs if a not in F.RANGE_ATTRIBUTES]
                if len(attrs) == len(t.elts) == 3 and len(rest) == 1:
                    self.out["lists"].append((self.cls, rest[0], t.lineno, guard))
            if not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == self.self_name):
                continue
            for g, v in _branches(value, guard, self.flags):
                callee = dotted_name(v.func) if isinstance(v, ast.Call) else None
                if t.attr in self.names:  # only these are ever asked about (placeholder_condition)
                    self.out["assigns"].append((self.cls, self.fn.name, t.attr, t.lineno, callee, g))
                if t.attr in LAST_RANK_ATTRS:
                    c = ref_chain(v)
                    if c is not None and len(c) >= 2 and c[-1] in self.names:
                        self.use("alias", c, t.attr, v, g, False)

    def _iter_info(self, it: ast.AST, enumerated: bool, rewritable: bool = True) -> tuple:
        """(position of the loop's iterable, enumerated, whether a fix can rewrite it)."""
        simple = rewritable and (not enumerated or (isinstance(it, ast.Call) and len(it.args) == 1
                                                    and not it.keywords))
        return (self.pos(it), enumerated, simple)

    def _loop_of(self, it: ast.AST) -> tuple | None:
        """``(chain, enumerated, aliased)`` of a loop over every slot: :func:`_loop_source`, or a
        local that aliases a chain (``layers = self.model.layers; for layer in layers``)."""
        src = _loop_source(it)
        if src is not None:
            return (src[0], src[1], False)
        enum = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args
        inner = it.args[0] if enum else it
        if isinstance(inner, ast.Name) and self.aliases.get(inner.id):
            return (self.aliases[inner.id], bool(enum), True)
        return None

    def _range_len(self, it: ast.AST) -> tuple | None:
        """The chain of ``range(len(chain))`` (or of a local aliasing it), else ``None``."""
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) == 1 and not it.keywords):
            return None
        n = it.args[0]
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1):
            return None
        a = n.args[0]
        c = self.aliases.get(a.id) if isinstance(a, ast.Name) else ref_chain(a)
        return c if c is not None and len(c) >= 2 else None

    def _slot(self, node: ast.AST, loops: dict) -> tuple | None:
        """``(list chain, loop variable text, iter info, guard chains)`` when ``node`` is a slot of
        a loop over every slot: the loop variable ``v`` or ``x.layers[i]`` in ``range(len(...))``
        (a test of the slot or of ``i`` itself, ``if i < self.start_layer: continue``, guards it)."""
        if isinstance(node, ast.Name) and node.id in loops:
            src, info = loops[node.id]
            return (src, node.id, info, ((node.id,),))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
                and "#range:" + node.slice.id in loops:
            base = ref_chain(node.value)
            src, info = loops["#range:" + node.slice.id]
            if base == src:
                return (src, f"{'.'.join(base)}[{node.slice.id}]", info,
                        (("#index", *base, ast.dump(node.slice)), (node.slice.id,)))
        return None

    @staticmethod
    def _slot_guarded(gchains, attr, guarded) -> bool:
        return any(_is_guarded(c, attr if len(c) > 1 else None, guarded) for c in gchains)

    def _unpacked_call(self, targets, value, guard, guarded, protected, loops) -> None:
        """``h, r = layer(...)`` in a loop over every slot: a placeholder returns its first
        argument, so the unpacking fails on it (recorded as a ``loop`` use of ``()``)."""
        if not (len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)) and isinstance(value, ast.Call)):
            return
        slot = self._slot(value.func, loops)
        if slot is not None:
            src, var, info, gchains = slot
            self.use("loop", src, "()", value, guard, protected or self._slot_guarded(gchains, None, guarded),
                     (var, *info))

    # expressions -----------------------------------------------------------------------------
    def exprs(self, nodes, guard, guarded, protected, loops) -> None:
        for node in nodes:
            self.expr(node, guard, guarded, protected, loops)

    def expr(self, node, guard, guarded, protected, loops) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, guard, guarded, protected, loops)
            yes, no, chains = self.split(node.test, guard, guarded)
            self.expr(node.body, yes, chains, protected, loops)
            self.expr(node.orelse, no, chains, protected, loops)
            return
        if isinstance(node, ast.BoolOp):
            # an operand runs only when the ones before it were true (`and`) or false (`or`):
            # `isinstance(layer, PPMissingLayer) or not isinstance(layer.self_attn, X)`
            chains = set(guarded)
            g = guard
            for v in node.values:
                self.expr(v, g, frozenset(chains), protected, loops)
                _guards_chain(v, chains)
                t = self.formula(v)
                g = f_and(g, t if isinstance(node.op, ast.And) else f_not(t))
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(loops)
            chains = set(guarded)
            for gen in node.generators:
                self.expr(gen.iter, guard, frozenset(chains), protected, inner)
                src = _loop_source(gen.iter)
                if src is not None:
                    var = _loop_var(gen.target, src[1])
                    if var is not None:
                        inner[var] = (src[0], self._iter_info(gen.iter, src[1]))
            for gen in node.generators:
                for cond in gen.ifs:
                    self.expr(cond, guard, frozenset(chains), protected, inner)
                    _guards_chain(cond, chains)
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for e in elts:
                self.expr(e, guard, frozenset(chains), protected, inner)
            return
        if isinstance(node, ast.Lambda):
            self.expr(node.body, guard, guarded, protected, loops)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self.attribute(node, guard, guarded, protected, loops)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and self.nested.get(node.func.id):
            self.nested[node.func.id][2].append((guard, guarded, protected, node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ARG_READERS:
            for a in node.args[:1]:
                c = ref_chain(a)
                if c is not None and len(c) >= 2 and c[-1] in self.names:
                    self.use("arg", c, ARG_READERS[node.func.attr], a, guard,
                             protected or _is_guarded(c, ARG_READERS[node.func.attr], guarded), node.func.attr)
        for child in child_nodes(node):
            self.expr(child, guard, guarded, protected, loops)

    def attribute(self, node: ast.Attribute, guard, guarded, protected, loops) -> None:
        recv = node.value
        chain = ref_chain(recv)
        if chain is not None and len(chain) >= 2 and chain[-1] in self.names:
            self.use("read", chain, node.attr, node, guard, protected or _is_guarded(chain, node.attr, guarded))
        elif chain is not None and len(chain) == 1 and chain[0] in loops:
            src, info = loops[chain[0]]
            self.use("loop", src, node.attr, node, guard, protected or _is_guarded(chain, node.attr, guarded), (chain[0], *info))
        elif isinstance(recv, ast.Subscript) and self._slot(recv, loops) is not None:
            src, var, info, gchains = self._slot(recv, loops)
            self.use("loop", src, node.attr, node, guard,
                     protected or self._slot_guarded(gchains, node.attr, guarded), (var, *info))
        elif isinstance(recv, ast.Subscript):
            base = ref_chain(recv.value)
            consts = self.inner[1] if self.inner is not None else None
            kind = _index_kind(recv.slice, consts)
            if base is not None and len(base) >= 2 and kind is not None:
                via = (recv.slice.id, ast.unparse(consts[recv.slice.id])) \
                    if consts and isinstance(recv.slice, ast.Name) and recv.slice.id in consts else None
                seen = (("#index", *base, ast.dump(recv.slice)), node.attr) in guarded
                self.use("index", base, node.attr, node, guard,
                         protected or seen or _is_guarded(base, None, guarded), (kind, self.pos(recv.slice), via))

    # nested functions ------------------------------------------------------------------------
    def walk_nested(self) -> None:
        """Judge the body of each nested function (a ``def`` in the method, at any depth) like the
        method's own lines when it closes over the method's ``self``: once per set of calls that
        bind its parameters to the same integer constants, under the guards of those calls, each
        such parameter replaced by its constant (``def f(layer_id=0): self.layers[layer_id].mlp``
        ... ``f(layer_id=0)``).  Only nested functions that are called by name and never used
        otherwise (handed out, returned) are walked, and in them only reads through ``self``."""
        done: set[int] = set()
        while True:
            todo = [(name, v) for name, v in self.nested.items() if v and v[2] and id(v[0]) not in done]
            if not todo:
                return
            for name, (fn, _def_guard, calls) in todo:
                done.add(id(fn))
                own = _bound_in(fn)
                if self.self_name is None or self.self_name in own or not _only_called(self.fn, name):
                    continue
                groups: dict[tuple, list] = {}
                for call in calls:
                    consts = _call_constants(fn, call[3])
                    groups.setdefault(tuple(sorted((k, ast.dump(v)) for k, v in consts.items())), [consts]).append(call)
                merged: dict[tuple, list] = {}
                for consts, *group in groups.values():
                    saved_flags, saved_inner, saved_uses = self.flags, self.inner, self.out["uses"]
                    self.flags = {k: v for k, v in saved_flags.items() if k not in own}
                    self.inner = (fn.name, consts, own)
                    self.out["uses"] = []
                    try:
                        self.block(fn.body, f_or(*[c[0] for c in group]),
                                   frozenset.intersection(*[frozenset(c[1]) for c in group]),
                                   all(c[2] for c in group), {})
                        uses = self.out["uses"]
                    finally:
                        self.flags, self.inner, self.out["uses"] = saved_flags, saved_inner, saved_uses
                    for u in uses:  # one use per line read, under any of the groups' guards
                        key = (u[0], u[3], u[4], u[5])
                        if key not in merged:
                            merged[key] = list(u)
                        elif merged[key][8] == u[8]:
                            merged[key][6] = f_or(merged[key][6], u[6])
                            merged[key][7] = merged[key][7] and u[7]
                self.out["uses"].extend(tuple(u) for u in merged.values())

def _bound_in(fn) -> frozenset[str]:
    """The names a nested function binds itself (parameters, assignments, ``nonlocal``/``global``
    names, nested definitions): they are not the enclosing method's."""
    a = fn.args
    out = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x}
    for sub in _fast_walk(fn):
        if sub is fn:
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            out.add(sub.id)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            out.update(sub.names)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(sub.name)
        elif isinstance(sub, ast.arg):
            out.add(sub.arg)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            out.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            out.update((n.asname or n.name).split(".")[0] for n in sub.names)
    return frozenset(out)


def _only_called(outer, name: str) -> bool:
    """Whether every use of ``name`` in function ``outer`` calls it (``name(...)``): it is not
    handed out, returned, rebound or deleted, so its calls are all its runs."""
    calls = loads = 0
    for sub in _fast_walk(outer):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
            calls += 1
        elif isinstance(sub, ast.Name) and sub.id == name:
            if not isinstance(sub.ctx, ast.Load):
                return False
            loads += 1
        elif isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return False
    return calls > 0 and loads == calls


def _int_const(node) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _int_const(node.operand))


def _call_constants(fn, call: ast.Call) -> dict:
    """The parameters of nested function ``fn`` that ``call`` binds to an integer constant
    (passed by position or keyword, or left to an integer default) and that its body never
    rebinds: name -> the constant's node."""
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return {}
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    rebound = {sub.id for sub in _fast_walk(fn) if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load)}
    rebound |= {n for sub in _fast_walk(fn) if isinstance(sub, (ast.Global, ast.Nonlocal)) for n in sub.names}
    bound = dict(zip([p.arg for p in positional], call.args))
    bound.update({k.arg: k.value for k in call.keywords})
    out = {}
    for p in positional + a.kwonlyargs:
        v = bound.get(p.arg, defaults.get(p.arg))
        if p.arg not in rebound and v is not None and _int_const(v):
            out[p.arg] = v
    return out


def _is_guarded(chain: tuple, attr: str | None, guarded: frozenset) -> bool:
    for g, a in guarded:
        if a is None and (chain[:len(g)] == g or g[:len(chain)] == chain):
            return True
        if a is not None and chain == g and attr == a:
            return True
    return False


def _branches(value, guard, names: dict | None = None) -> list:
    if isinstance(value, ast.IfExp):
        t = formula(value.test, names)
        return _branches(value.body, f_and(guard, t), names) + _branches(value.orelse, f_and(guard, f_not(t)), names)
    return [(guard, value)]


def _loop_source(it: ast.AST):
    """``(chain, enumerated)`` when a loop walks every slot of ``chain`` (``for x in a.layers``,
    ``enumerate(a.layers)``, ``zip(...)`` is not followed); ``None`` otherwise (slices,
    ``islice``, ``range(start_layer, end_layer)``)."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        c = ref_chain(it.args[0])
        return (c, True) if c is not None and len(c) >= 2 else None
    c = ref_chain(it)
    return (c, False) if c is not None and len(c) >= 2 else None


def _loop_var(target: ast.AST, enumerated: bool) -> str | None:
    if enumerated:
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
            return target.elts[1].id
        return None
    return target.id if isinstance(target, ast.Name) else None


def _placeholder_targets(tree: ast.Module, lines) -> frozenset[str]:
    """The attributes this module assigns a value whose text names ``PPMissingLayer``
    (``x.attr = PPMissingLayer()``, ``self.norm = RMSNorm(...) if last else PPMissingLayer()``).
    Only the statements whose lines hold that name are visited (an assignment is always a
    statement), not every node of the module."""
    from .index.summary import statements_on_lines

    marked = [i for i, text in enumerate(lines.lines, 1) if F.PLACEHOLDER_CLASS in text]
    if not marked:
        return frozenset()
    out = set()
    for node in statements_on_lines(tree.body, marked):
        if isinstance(node, ast.Assign) \
                and F.PLACEHOLDER_CLASS in "".join(lines.lines[node.value.lineno - 1:node.value.end_lineno]):
            out.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return frozenset(out)


def collect(tree: ast.Module, lines) -> dict | None:
    """The placeholder facts of one module (see the module docstring).  ``uses`` holds
    ``(kind, class, function line, chain, attr, (row, col, end_row, end_col), guard, guarded,
    extra)``: ``read`` (``chain.attr`` where ``chain`` ends in a name a placeholder may be
    assigned to), ``alias`` (``self.lm_head = chain``), ``arg`` (``x.tie_weights(chain)``),
    ``index`` (``chain[k].attr``; extra = (index kind, index position)), ``loop``
    (``for v in chain: v.attr``; extra = the loop variable); ``guarded`` is true under an
    ``isinstance``/``hasattr`` test of the receiver or a handler of ``AttributeError``."""
    out: dict[str, Any] = {"assigns": [], "lists": [], "uses": []}
    names = PLACEHOLDER_NAMES | _placeholder_targets(tree, lines)
    # a function is walked only when its text can hold what this module records: a placeholder
    # assignment (and its real twin beside it), a make_layers list, a read through a name that may
    # hold a placeholder, an alias into lm_head, a tied weight, a fixed slot or a loop of a list
    triggers = tuple({f".{n}." for n in names} | {F.PLACEHOLDER_CLASS, F.MAKE_LAYERS, "tie_weights(", "lm_head =",
                                                   ".layers[", ".layers:", ".layers)", ".layers\n"})

    def worth(fn) -> bool:
        body = "".join(lines.lines[fn.lineno - 1:fn.end_lineno])
        return any(t in body for t in triggers)

    def visit(body, cls):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, node.name if cls is None else None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and worth(node) \
                    and node.name not in F.NOT_RUN_UNDER_PP_METHODS:
                w = _Walker(lines, out, cls, node, names)
                rank = F.RANK_OF_METHOD.get(node.name) if cls is not None else None
                start = FIRST if rank == "first" else LAST if rank == "last" else TRUE
                w.block(node.body, start, frozenset(), False, {})
                w.walk_nested()
            elif isinstance(node, (ast.If, ast.Try)):
                for b in (node.body, node.orelse, getattr(node, "finalbody", [])):
                    visit(b, cls)

    visit(tree.body, None)
    helpers = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.decorator_list \
                and "return False" in "".join(lines.lines[node.lineno - 1:node.end_lineno]):
            need = truthy_only_when(node, lines)
            if need is not None:
                helpers[node.name] = need
    if helpers:
        out["helpers"] = helpers
    if not (out["assigns"] or out["uses"] or out["lists"] or helpers):
        return None
    return out


class _ReturnWalker(_Walker):
    """A :class:`_Walker` that records the guard of every ``return`` of a function (with the
    returned value's formula) and of every ``raise``."""

    def __init__(self, lines, fn):
        super().__init__(lines, {"assigns": [], "lists": [], "uses": []}, None, fn, frozenset())
        self.returns: list = []
        self.raises: list = []

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        if isinstance(stmt, ast.Raise):
            self.raises.append(guard)
            return
        if isinstance(stmt, ast.Return):
            value = stmt.value
            if value is None or (isinstance(value, ast.Constant) and not value.value):
                self.returns.append((guard, None))
            else:  # the value's formula with the local flags as they are here
                self.returns.append((guard, self.formula(value)))
            return
        super().stmt(stmt, guard, guarded, protected, loops)


class _CallWalker(_Walker):
    """A :class:`_Walker` that records the guard of the calls ``targets`` (node ids) of a function."""

    def __init__(self, lines, fn, targets: set):
        super().__init__(lines, {"assigns": [], "lists": [], "uses": []}, None, fn, frozenset())
        self.targets = targets
        self.found: dict = {}

    def expr(self, node, guard, guarded, protected, loops) -> None:
        if id(node) in self.targets:
            self.found[id(node)] = guard
        super().expr(node, guard, guarded, protected, loops)


def _accepts(fn: ast.FunctionDef, call: ast.Call) -> bool:
    """Whether a call through an instance (``x.m(...)``) can bind to the method ``fn``'s
    parameters; ``True`` when it cannot be told (``*args``, ``**kwargs``)."""
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args][1:]  # after self
    keywords = set(positional) - {p.arg for p in a.posonlyargs} | {p.arg for p in a.kwonlyargs}
    if a.kwarg is None and any(k.arg is not None and k.arg not in keywords for k in call.keywords):
        return False  # a keyword the method does not have
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return True
    n = len(call.args)
    if n > len(positional) and a.vararg is None:
        return False
    names = set(positional[n:]) - {p.arg for p in a.posonlyargs} | {p.arg for p in a.kwonlyargs}
    bound = set(positional[:n])
    for k in call.keywords:
        if k.arg in bound or (k.arg not in names and a.kwarg is None):
            return False
        bound.add(k.arg)
    required = positional[:len(positional) - len(a.defaults)]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    return all(r in bound for r in required)


def _own_nodes(fn):
    """The nodes of ``fn``'s body outside nested functions, lambdas and classes."""
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node)
                    if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))


def truthy_only_when(fn: ast.FunctionDef, lines) -> tuple | None:
    """A condition that holds whenever a call of the plain function ``fn`` returns a truthy value
    (the disjunction, over its ``return`` statements, of the guard that reaches each one and of
    the returned value's formula; ``return False`` / ``return None`` and falling off the end give
    nothing), or ``None`` when it says nothing (``TRUE``) or cannot be told (a generator, a
    ``return`` the walk does not reach, such as one inside a ``match``).

    ``vllm``-style ``model_should_use_tied_lm_head(config, quant)`` (Aphrodite 0.24.1,
    model_executor/models/utils.py:193) begins with ``if not getattr(config,
    "tie_word_embeddings", False): return False``, so its result implies ``tie_word_embeddings``.
    Atoms keep the module's convention (an attribute test is named by the attribute, shared with
    the caller's guards: ``config.tie_word_embeddings``), except those that only mean something
    inside ``fn`` (its parameters and local names, tests named by their text), which are renamed
    ``fn@atom`` so that no guard of a caller can name them."""
    own = list(_own_nodes(fn))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own):
        return None
    w = _ReturnWalker(lines, fn)
    w.block(fn.body, TRUE, frozenset(), False, {})
    if len(w.returns) != sum(isinstance(n, ast.Return) for n in own):
        return None
    need = f_or(*(f_and(guard, value) for guard, value in w.returns if value is not None))
    if need == TRUE:
        return None
    bare = {n.id for n in own if isinstance(n, ast.Name)} | {a.arg for a in _fast_walk(fn.args) if isinstance(a, ast.arg)}
    shared = {n.attr for n in own if isinstance(n, ast.Attribute) and ref_chain(n) is not None} | {
        n.args[1].value for n in own if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
        and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)}
    keep = (shared - bare) | {"@first", "@last"}
    return _rename(need, lambda a: a if a in keep else f"{fn.name}@{a}")


def _rename(f, how) -> tuple:
    k = f[0]
    if k == "a":
        return ("a", how(f[1]))
    if k == "not":
        return ("not", _rename(f[1], how))
    if k in ("and", "or"):
        return (k, tuple(_rename(g, how) for g in f[1]))
    return f


# -- judging -----------------------------------------------------------------------------------
from .index.spec import RANK_FACTS_KEY as FACTS_KEY  # noqa: E402  (one key for collector and rules)



def _store_pattern(attr: str):
    """A regular expression for a store of ``.<attr>`` in source text: ``x.attr = ...``, an
    augmented ``x.attr += ...``, or ``setattr(x, "attr", ...)``."""
    import re

    return re.compile(r"\." + re.escape(attr) + r"\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)"
                      r"|setattr\([^,()]+,\s*[\"']" + re.escape(attr) + r"[\"']")

def _raise_guards(tree: ast.Module, lines, wanted):
    """For each function of ``tree`` whose text names ``pipeline_parallel_size`` and passes
    ``wanted`` (text -> bool), the guards of its ``raise`` statements (:class:`_ReturnWalker`):
    where the tree refuses something under pipeline parallelism."""
    for fn in _fast_walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = "".join(lines.lines[fn.lineno - 1:fn.end_lineno])
        if "pipeline_parallel_size" not in body or not wanted(body):
            continue
        w = _ReturnWalker(lines, fn)
        w.block(fn.body, TRUE, frozenset(), False, {})
        yield w.raises


def _pp_only_test(node: ast.AST) -> bool:
    """``pp_size > 1``, ``pipeline_parallel_size != 1``, ``pp_size >= 2`` (any receiver): true only
    under pipeline parallelism."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)):
        return False
    left, op, value = ast.unparse(node.left), node.ops[0], node.comparators[0].value
    if not (left.endswith("pp_size") or left.endswith("pipeline_parallel_size")):
        return False
    return (isinstance(op, (ast.Gt, ast.NotEq)) and value == 1) or (isinstance(op, ast.GtE) and value == 2)


def _signature_test(value: ast.AST) -> str | None:
    """``"p"`` for ``"p" in inspect.signature(self.model.forward).parameters``."""
    if not (isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.In)
            and isinstance(value.left, ast.Constant) and isinstance(value.left.value, str)):
        return None
    right = value.comparators[0]
    if not (isinstance(right, ast.Attribute) and right.attr == "parameters" and isinstance(right.value, ast.Call)
            and dotted_name(right.value.func) in ("inspect.signature", "signature") and len(right.value.args) == 1):
        return None
    return value.left.value if ref_chain(right.value.args[0]) == ("self", "model", "forward") else None


def _forward_requirement(fn, stores: dict) -> tuple | None:
    """``(parameter, exempt)`` of :meth:`RankFacts.pp_forward_requirement` for one function;
    ``stores``: how many times the module binds each target text (a flag bound again, in any
    function, may make the assert pass: exempt)."""
    bound = {}  # the target's text -> (parameter, line), bound in the function's own body
    for st in fn.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            p = _signature_test(st.value)
            if p is not None:
                bound[ast.unparse(st.targets[0])] = (p, st.lineno)
    if not bound:
        return None
    best = None
    # a `return` before the assert can skip it (one in a nested function is not told apart)
    returns = [n.lineno for n in _fast_walk(fn) if isinstance(n, ast.Return)]

    def visit(body, conds, plain):
        nonlocal best
        for st in body:
            if isinstance(st, ast.If):
                visit(st.body, conds + [(st.test, True)], plain)
                visit(st.orelse, conds + [(st.test, False)], plain)
            elif isinstance(st, ast.Assert) and plain:
                hit = bound.get(ast.unparse(st.test))
                if hit is None or hit[1] >= st.lineno:
                    continue
                atoms = [a for t, pos in conds for a in (t.values if pos and isinstance(t, ast.BoolOp)
                                                          and isinstance(t.op, ast.And) else [t])]
                gates = [a for a in atoms if _pp_only_test(a)]
                if not gates:
                    continue
                negated = [t for t, pos in conds if not pos and _pp_only_test(t)]
                if negated:
                    continue
                skipped = stores.get(ast.unparse(st.test), 0) > 1 or any(r < st.lineno for r in returns)
                found = (hit[0], skipped or len(atoms) > len(gates) or any(not pos for _t, pos in conds))
                if best is None or best[1] and not found[1]:
                    best = found
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            else:  # a loop, `with` or `try` around it: the assert may not run, or be caught
                for field in ("body", "orelse", "finalbody"):
                    sub = getattr(st, field, None)
                    if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                        visit(sub, conds, False)

    visit(fn.body, [], True)
    return best


def _registry_attribute(fn) -> str | None:
    """``"EntryClass"`` for a function that lists the modules of a package
    (``pkgutil.iter_modules(...)``) and reads ``hasattr(module, "EntryClass")`` of each."""
    lists = has = None
    for n in _fast_walk(fn):
        if isinstance(n, ast.Call):
            name = dotted_name(n.func) or ""
            if name.rsplit(".", 1)[-1] == "iter_modules":
                lists = True
            elif name == "hasattr" and len(n.args) == 2 and isinstance(n.args[1], ast.Constant) \
                    and isinstance(n.args[1].value, str) and isinstance(n.args[0], ast.Name):
                has = n.args[1].value if has in (None, n.args[1].value) else ""
    return has or None if lists else None


_NOT_ACCEPTED = object()  # a store the question cannot use (see RankFacts._attribute_stores)


class RankFacts:
    """Answers, across files, what an attribute holds on each rank (memoized per run)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.r = ctx.resolver
        self._memo: dict = {}
        self.owner_failure = None  # set by list_owners

    @classmethod
    def of(cls, ctx) -> "RankFacts":
        got = ctx.shared.get(FACTS_KEY)
        if got is None or got.ctx.project is not ctx.project:
            got = ctx.shared[FACTS_KEY] = cls(ctx)
        got.ctx = ctx
        return got

    def module_facts(self, module: str) -> dict | None:
        s = self.ctx.project.summary(module)
        return None if s is None else s.get("facts", {}).get(FACTS_KEY)

    def is_placeholder_call(self, module: str, callee: str | None) -> bool:
        if callee is None:
            return False
        if callee.rsplit(".", 1)[-1] != F.PLACEHOLDER_CLASS:
            return False
        sym = self.r.resolve_dotted(module, callee)
        if sym is None:
            return True  # named PPMissingLayer and imported from outside the project
        if sym[0] == "class":
            return sym[2] == F.PLACEHOLDER_CLASS
        return sym[0] == "external" and sym[1].endswith("." + F.PLACEHOLDER_CLASS)

    def placeholder_safe_attrs(self) -> frozenset | None:
        """Attributes a read of which does not raise on a placeholder: ``torch.nn.Module``'s and
        those the analysed tree's ``PPMissingLayer`` defines; ``None`` when its placeholder
        answers any attribute (``__getattr__``), so that no read can fail."""
        if "safe" in self._memo:
            return self._memo["safe"]
        names = set(F.MODULE_ATTRIBUTES)
        keys = set()
        for st in self.ctx.checked:  # defined in a checked file, or imported into one (vLLM's utils.py)
            if F.PLACEHOLDER_CLASS in st.summary["classes"]:
                keys.add((st.module, F.PLACEHOLDER_CLASS))
            elif F.PLACEHOLDER_CLASS in st.summary["imports"]:
                sym = self.r.lookup(st.module, F.PLACEHOLDER_CLASS)
                if sym is not None and sym[0] == "class":
                    keys.add((sym[1], sym[2]))
        for key in sorted(keys):
            try:
                mro = self.r.mro(key)
            except Exception:
                mro = [key]
            for entry in mro:
                if entry[0] == "<external>":
                    continue
                try:
                    crec = self.r.class_record(entry)
                except Exception:
                    continue
                if ("__getattr__" in crec["methods"] and not adds_no_attribute(crec, "__getattr__")) \
                        or "__getattribute__" in crec["methods"]:
                    self._memo["safe"] = None
                    return None
                names.update(crec["body_names"], crec["properties"], crec["methods"])
                for scope in crec["methods"].values():
                    names.update(scope["assigns"])
        self._memo["safe"] = frozenset(names)
        return self._memo["safe"]

    def placeholder_condition(self, key, attr: str):
        """``(formula, where)`` when ``attr`` of an instance of class ``key`` holds a placeholder
        under ``formula`` after ``__init__``; ``None`` when it never does or cannot be told."""
        mkey = ("pc", key, attr)
        if mkey in self._memo:
            return self._memo[mkey]
        self._memo[mkey] = None
        try:
            inits = self.r.executed_inits(key)
            if self.r.attribute_status(key, attr) != "present":
                return None
        except Exception:
            return None
        executed = {(owner, scope["line"]) for owner, scope in inits}
        records = []
        for entry in self.r.mro(key):
            if entry[0] == "<external>":
                continue
            mf = self.module_facts(entry[0]) or {}
            for cls, method, a, line, callee, guard in mf.get("assigns", ()):
                if cls != entry[1] or a != attr:
                    continue
                if method != "__init__":
                    return None  # set again later by another method: cannot tell what it holds
                if callee is not None and callee.startswith(f"self.{attr}."):
                    continue  # `self.lm_head = self.lm_head.tie_weights(...)`: derived from the value itself
                records.append((line, self.is_placeholder_call(entry[0], callee), guard, entry))
        if not any(p for _, p, _, _ in records):
            return None
        if not all((e, _init_line(self.r, e)) in executed for _, _, _, e in records):
            return None
        conds = []
        where = None
        for line, is_ph, guard, entry in records:
            if not is_ph:
                continue
            later = [g for ln, p, g, e in records if not p and e == entry and ln > line]
            conds.append(f_and(guard, f_not(f_or(*later))) if later else guard)
            where = where or (entry, line)
        result = (f_or(*conds), where)
        self._memo[mkey] = result
        return result

    def satisfying(self, f, local, cls: str | None, fline: int):
        """:func:`satisfying` of ``f`` (which holds the guard ``local`` of a line of this file, in
        the function at ``fline`` of class ``cls``), knowing what the boolean helpers of ``local``
        imply (:meth:`atom_implies`); the assignment keeps only the atoms of ``f``."""
        extra = []
        for a in sorted(_atoms(local, set()) - {"@first", "@last"}):
            need = self.atom_implies(a, cls, fline)
            if need is not None:
                extra.append(f_or(f_not(("a", a)), need))
        env = satisfying(f_and(f, *extra))
        if env is None or not extra:
            return env
        keep = _atoms(f, set()) | {"@first", "@last"}
        return {k: v for k, v in env.items() if k in keep}

    def atom_implies(self, atom: str, cls: str | None, fline: int):
        """What a guard atom of this file implies, from the ``return``s of the helper that makes
        it (:func:`truthy_only_when`, recorded as the module's ``helpers``): a call of a plain
        function (``model_should_use_tied_lm_head(config, quant_config)``, the text of the atom,
        also through a local flag), or an attribute that the analysed tree assigns exactly once,
        from such a call (``self.use_tied_lm_head = model_should_use_tied_lm_head(...)``, Aphrodite
        0.24.1 llama.py:477).  ``None`` when it implies nothing known."""
        memo = self._memo.setdefault("implies", {})
        key = (self.ctx.module, atom, cls, fline)
        if key not in memo:
            try:
                memo[key] = self._atom_implies(atom, cls, fline)
            except Exception:
                memo[key] = None
        return memo[key]

    def _helper(self, module: str, callee: str):
        sym = self.r.resolve_dotted(module, callee)
        if sym is None or sym[0] != "function":
            return None
        return (self.module_facts(sym[1]) or {}).get("helpers", {}).get(sym[2])

    def _atom_implies(self, atom: str, cls: str | None, fline: int):
        if not atom.isidentifier():
            try:
                node = ast.parse(atom, mode="eval").body
            except SyntaxError:
                return None
            callee = dotted_name(node.func) if isinstance(node, ast.Call) else None
            return self._helper(self.ctx.module, callee) if callee else None
        # an attribute: never a parameter, local or module-level name of the line's code
        from .index.summary import scopes_by_line

        summary = self.ctx.summary
        scope = scopes_by_line(summary).get((cls, fline))
        if scope is None or atom in scope["params"] or atom in scope["locals"]:
            return None
        if any(atom in summary.get(k, ()) for k in ("imports", "aliases", "classes", "functions", "tables")):
            return None
        return self._unique_attribute_helper(atom)

    def _unique_attribute_helper(self, attr: str):
        """What ``x.<attr>`` implies when every store of it in the ``.py`` files under the checked
        root is ``self.<attr> = helper(...)``, ``helper`` a plain function with a known condition
        (the disjunction of those conditions), and no class there defines the name in its body or
        as a method (``setattr`` naming it, a tuple target, an augmented store: nothing known)."""
        memo = self._memo.setdefault("unique-attr", {})
        if attr in memo:
            return memo[attr]
        memo[attr] = None

        def judge(module, node, target):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                callee = dotted_name(node.value.func) if isinstance(node.value, ast.Call) else None
                need = self._helper(module, callee) if callee else None
                if need is not None:
                    return need
            return _NOT_ACCEPTED

        needs = self._attribute_stores(attr, judge)
        if not needs:
            return None
        memo[attr] = f_or(*dict.fromkeys(needs))
        return memo[attr]

    def caller_rank(self, cls: str, fname: str) -> tuple | None:
        """``LAST`` (or ``FIRST``) when every call of method ``fname`` of class ``cls`` (of this
        file) that the checked tree holds runs only on that rank, from the call chain: each
        ``x.fname(...)`` of any ``.py`` file under the checked root either cannot be a call of it
        (``self.fname(...)`` in a class unrelated to ``cls``, arguments the method cannot take) or
        is guarded by the rank there (``if not self.is_last_pp_rank: return``; an attribute that
        the tree only ever assigns a rank test counts as that test), or sits in a method whose
        own callers are (up to 3 calls deep).  vLLM 0.33.0: ``compute_logits_local`` is called
        only from ``GPUModelRunner.sample``, called only after ``sample_tokens`` returned on every
        rank but the last.  ``None`` when not every use of the name is such a call, or not known."""
        memo = self._memo.setdefault("caller-rank", {})
        key = (self.ctx.module, cls, fname)
        if key not in memo:
            memo[key] = None
            try:
                for rank in (LAST, FIRST):
                    if self._only_on(rank, (self.ctx.module, cls), fname, 0):
                        memo[key] = rank
                        break
            except Exception:
                memo[key] = None
        return memo[key]

    def _scan_dirs(self) -> tuple | None:
        """Where callers of this file's methods can be: ``(folder, module prefix)`` of the checked
        root, and of the package of every top-level package this module imports from outside it
        (the engine a plugin runs in: vLLM from the environment or ``--src``); the standard library
        and the packages the facts keep external (torch) are left out, and so are packages found
        nowhere (the run cannot read them; a plugin's engine is found in the environment or
        ``--src``).  ``None`` when a package is found but not as a folder with an ``__init__.py``."""
        import os
        import sys

        memo = self._memo.setdefault("scan-dirs", {})
        if self.ctx.module in memo:
            return memo[self.ctx.module]
        summary = self.ctx.summary
        imports = [v for v in summary["imports"].values()] + [(t, None, lv) for t, lv in summary.get("star_imports", ())]
        scopes = [*summary["functions"].values(), *(m for c in summary["classes"].values() for m in c["methods"].values())]
        imports += [(d[1], d[2], d[3]) for sc in scopes for ds in sc["locals"].values() for d in ds if d[0] == "import"]
        own = self.ctx.module.split(".", 1)[0]
        external = set(getattr(self.ctx.project, "external", ()))
        dirs = [(self.ctx.file.root, "")]
        answer: tuple | None = None
        for top in sorted({t.split(".", 1)[0] for t, _n, level in imports if level == 0 and t} - {own}):
            if top in sys.stdlib_module_names or top in external or top == "__future__":
                continue
            if self.ctx.project.in_checked_root(top):
                continue
            if self.ctx.project.summary(top) is None:
                continue  # installed nowhere the run can see (transformers, safetensors): not read
            path = self.ctx.project.path(top)
            if not path or os.path.basename(path) != "__init__.py":
                break
            dirs.append((os.path.dirname(path), top))
        else:
            answer = tuple(dirs)
        memo[self.ctx.module] = answer
        return answer

    def _scan_paths(self, dirs: tuple) -> list:
        """``(path, module)`` of every ``.py`` file of ``dirs`` (see :meth:`_scan_dirs`); each
        folder's stat is recorded, so that a file added or removed there changes what a cached
        run depended on."""
        import os

        memo = self._memo.setdefault("scan-paths", {})
        touched = self.ctx.project.touched
        out = []
        for folder, prefix in dirs:
            if (folder, prefix) not in memo:
                got = []
                for d, subdirs, files in os.walk(folder):
                    try:
                        st = os.stat(d)
                        touched.setdefault(d, (st.st_mtime_ns, st.st_size))
                    except OSError:
                        touched.setdefault(d, None)
                    subdirs[:] = sorted(x for x in subdirs if not x.startswith(".") and x != "__pycache__")
                    for n in sorted(files):
                        if n.endswith(".py"):
                            path = os.path.join(d, n)
                            rel = os.path.relpath(path, folder)[:-3].replace(os.sep, ".")
                            rel = rel[:-len("__init__")].rstrip(".") if rel.endswith("__init__") else rel
                            got.append((path, ".".join(x for x in (prefix, rel) if x)))
                memo[(folder, prefix)] = got
            out += memo[(folder, prefix)]
        return out

    def _module_parsed(self, module: str) -> tuple | None:
        """:meth:`_parsed` of the file of ``module`` in the project (read once per run);
        ``None`` when it has none or it cannot be read or parsed."""
        path = self.ctx.project.path(module)
        return self._parsed(path, module) if path and self._bytes(path) is not None else None

    def _package_trees(self, top: str, *needles: bytes):
        """``(module, tree, lines)`` of the files of package ``top`` among :meth:`_tree_files`
        ``(*needles)`` that parse (another package's code says nothing of this engine)."""
        for path, module in self._tree_files(*needles) or ():
            if module == top or module.startswith(top + "."):
                got = self._parsed(path, module)
                if got is not None:
                    yield module, got[2], got[3]

    def tree_files(self, *needles: bytes) -> list | None:
        """``(path, module, tree, lines)`` of the ``.py`` files of the analysed tree (the checked
        root and the packages this file imports from outside it) whose bytes hold one of
        ``needles``, parsed and memoized per run, their stats recorded for the cache; ``None`` when
        one cannot be read or parsed, or a folder is not found.  For rules that look for the
        callers or constructions of a name across the tree."""
        files = self._tree_files(*needles)
        if files is None:
            return None
        out = []
        for path, module in files:
            got = self._parsed(path, module)
            if got is None:
                return None
            out.append(got)
        return out

    def _tree_files(self, *needles: bytes) -> list | None:
        """``(path, module)`` of the ``.py`` files where callers can be (:meth:`_scan_dirs`) whose
        bytes hold one of ``needles``; ``None`` when one cannot be read or a folder is not found.
        Each file is read once per run (:meth:`_bytes`); parse one with :meth:`_parsed`."""
        got = list(self._tree_files_lazily(*needles))
        return None if got and got[-1] is None else got

    def _tree_files_lazily(self, *needles: bytes):
        """:meth:`_tree_files` listed as the files are read: a scan that stops at a file reads
        (and records as a dependency) no file after it; ``None`` is yielded (and nothing after)
        where :meth:`_tree_files` answers ``None``.  Memoized once listed to the end."""
        import re

        dirs = self._scan_dirs()
        if dirs is None:
            yield None
            return
        by_needle = self._memo.setdefault("needle-files", {})
        key = (dirs, needles)
        if key in by_needle:
            got = by_needle[key]
            yield from (None,) if got is None else got
            return
        by_needle[key] = None  # while it is being listed
        # every needle holds the shortest one's longest word (the name asked about): one search
        # of that word turns most files down
        core = max(re.findall(rb"\w+", min(needles, key=len)) or [b""], key=len)
        if not all(core in n for n in needles):
            core = b""
        done = False
        try:
            out = []
            for path, module in self._with_checked(dirs):
                data = self._bytes(path)
                if data is None:
                    done = True  # unreadable: the answer stays None
                    yield None
                    return
                if core in data and any(n in data for n in needles):
                    out.append((path, module))
                    yield path, module
            by_needle[key] = out
            done = True
        finally:
            if not done:
                del by_needle[key]  # left before the end: nothing known of the rest

    def _with_checked(self, dirs: tuple) -> list:
        """:meth:`_scan_paths` of ``dirs`` with each checked file in place of the file of its
        module (a copy checked ``--as-module``, whose module's file in the tree is another), and
        the checked files it lacks added (a lone file outside the scanned folders)."""
        memo = self._memo.setdefault("with-checked", {})
        if dirs not in memo:
            listing = self._scan_paths(dirs)
            checked = {st.module: st.path for st in self.ctx.checked if st.module}
            out = [(checked.get(module, path), module) for path, module in listing]
            listed = {module for _path, module in listing}
            memo[dirs] = out + [(path, module) for module, path in sorted(checked.items()) if module not in listed]
        return memo[dirs]

    def _bytes(self, path: str) -> bytes | None:
        """The content of a file under the scanned folders, read once per run (its stat recorded,
        so that the cache knows the run depended on it); ``None`` when it cannot be read."""
        import os

        contents = self._memo.setdefault("bytes", {})
        if path not in contents:
            try:
                stat = os.stat(path)
                self.ctx.project.touched.setdefault(path, (stat.st_mtime_ns, stat.st_size))
                with open(path, "rb") as fh:
                    contents[path] = fh.read()
            except OSError:
                contents[path] = None
        return contents[path]

    def _parsed(self, path: str, module: str) -> tuple | None:
        """``(path, module, tree, lines)`` of a file :meth:`_tree_files` listed (parsed once per
        run); ``None`` when it does not decode or parse."""
        from .index.spec import LineIndex

        parsed = self._memo.setdefault("parsed", {})
        if path not in parsed:
            try:
                text = self._memo["bytes"][path].decode("utf-8")
                parsed[path] = (path, module, ast.parse(text), LineIndex(text))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                parsed[path] = None
        return parsed[path]

    def _unrelated(self, module: str, fn, owner, attr_node: ast.Attribute, key, related: set) -> bool:
        """Whether the receiver of ``attr_node`` (``self.fname``, ``self.sampler.fname``,
        ``super().fname`` in the method ``fn`` of ``owner``, a top-level class of ``module``) is
        known to hold only classes that are neither ``key``, its bases nor its subclasses, nor
        share a subclass with it among the checked classes."""
        from .index.summary import scopes_by_line

        recv = attr_node.value
        chain = ref_chain(recv)
        if not isinstance(owner, ast.ClassDef) or not fn.args.args:
            return False
        summary = self.ctx.project.summary(module)
        if summary is None or owner.name not in summary["classes"]:
            return False
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" and not recv.args:
            chain = (fn.args.args[0].arg,)  # `super().fname`: a class on the owner's MRO
        if chain is None:
            return False
        scope = scopes_by_line(summary).get((owner.name, fn.lineno))
        if scope is None or chain[0] != fn.args.args[0].arg:
            return False
        try:
            cands = self.r.chain_candidates(tuple(chain), module, (module, owner.name), scope)
            if not cands or any(c[0] == "<external>" or c[1] is None for c in cands):
                return False
            for c in cands:
                if c == ("builtins", "None"):
                    continue  # `None.fname` raises before any call
                if c == tuple(key) or c in related or tuple(key) in set(self.r.mro(c)):
                    return False
                if self._share_subclass(c[1], key[1]):
                    return False  # some class of the tree may have both on its MRO (a mixin)
        except Exception:
            return False
        return True

    def _share_subclass(self, a: str, b: str) -> bool:
        """Whether some class under the checked root may have both the classes named ``a`` and
        ``b`` on its MRO, by name (``class X(A, ...)`` headers read from the files' text, every
        name that subclasses one of them counted): ``True`` when the files cannot be read."""
        graph = self._class_graph()
        if graph is None:
            return True

        def down(name):
            seen, todo = {name}, [name]
            while todo:
                for sub in graph.get(todo.pop(), ()):
                    if sub not in seen:
                        seen.add(sub)
                        todo.append(sub)
            return seen

        a, b = a.rsplit(".", 1)[-1], b.rsplit(".", 1)[-1]
        return bool(down(a) & down(b))

    def _class_graph(self) -> dict | None:
        """Base name -> the names of the classes that list it, over every ``.py`` file where
        callers can be (:meth:`_scan_dirs`; memoized)."""
        import re

        dirs = self._scan_dirs()
        if dirs is None:
            return None
        memo = self._memo.setdefault("class-graph", {})
        if dirs in memo:
            return memo[dirs]
        memo[dirs] = None
        header = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)
        per_file = self._memo.setdefault("class-headers", {})  # path -> [(base, class)]
        graph: dict = {}
        for path, _module in self._with_checked(dirs):
            if path not in per_file:
                data = self._bytes(path)
                if data is None:
                    return None
                per_file[path] = [(base.decode(), m.group(1).decode()) for m in header.finditer(data)
                                  for base in re.findall(rb"(\w+)\s*(?:\[[^\]]*\])?\s*(?:,|$)", m.group(2))
                                  ] if b"class" in data else []
            for base, name in per_file[path]:
                graph.setdefault(base, set()).add(name)
        memo[dirs] = graph
        return graph

    def _index(self, path: str, tree) -> tuple:
        """One walk of a parsed file: ``(strings, defs, attrs)``, each a name -> list:
        ``(constant, parent)`` of its string constants, ``(function, parent)`` of its function
        definitions, ``(attribute, parent, enclosing function, under a lambda)`` of its attribute
        nodes (memoized per file)."""
        from .index.summary import child_nodes

        memo = self._memo.setdefault("file-index", {})
        if path in memo:
            return memo[path]
        strings: dict = {}
        defs: dict = {}
        attrs: dict = {}
        stack = [(tree, None, None, False)]
        while stack:
            node, parent, fn, lam = stack.pop()
            if isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    strings.setdefault(node.value, []).append((node, parent))
                continue
            if isinstance(node, ast.Attribute):
                attrs.setdefault(node.attr, []).append((node, parent, fn, lam))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, []).append((node, parent))
                fn, lam = node, False
            elif isinstance(node, ast.Lambda):
                lam = True
            for c in child_nodes(node):
                stack.append((c, node, fn, lam))
        memo[path] = (strings, defs, attrs)
        return memo[path]

    def _attribute_stores(self, attr: str, judge) -> list | None:
        """``[judge(module, store, target)]`` for every store of ``.<attr>`` (an ``Assign`` or
        ``AnnAssign`` whose ``target`` is that attribute) in the ``.py`` files under the checked
        root, file by file; ``None`` when there is none, when ``judge`` returns
        :data:`_NOT_ACCEPTED` (the scan stops there), when another kind of store exists (augmented,
        a tuple target, ``del``, ``setattr``), when a function or a class body defines the name,
        or when a file cannot be read or parsed."""
        pat = _store_pattern(attr)
        out = []
        found = False
        for item in self._tree_files_lazily(attr.encode()):
            if item is None:
                return None
            found = True
            path, module = item
            got = self._parsed(path, module)
            if got is None:
                return None
            _path, module, tree, lines = got
            every = stores = 0
            for node in _fast_walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                    return None
                if isinstance(node, ast.ClassDef) and any(attr in _target_names_of(st) for st in node.body):
                    return None
                if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, (ast.Store, ast.Del)):
                    every += 1
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        if isinstance(t, ast.Attribute) and t.attr == attr:
                            stores += 1
                            got = judge(module, node, t)
                            if got is _NOT_ACCEPTED:
                                return None
                            out.append(got)
            if every != stores or len(pat.findall("".join(lines.lines))) != stores:
                return None  # another kind of store (augmented, a tuple target, setattr)
        return out if found else None

    def rank_alias(self, attr: str) -> tuple | None:
        """``LAST`` / ``FIRST`` when every store of ``.<attr>`` under the checked root is
        ``self.<attr> = <rank test>`` (``self.is_last_pp_rank = get_pp_group().is_last_rank``,
        vLLM's GPU model runner) and nothing else there defines that name (a method, a class
        attribute); ``None`` otherwise."""
        memo = self._memo.setdefault("rank-alias", {})
        if attr in memo:
            return memo[attr]
        memo[attr] = None
        values = set(self._attribute_stores(attr, lambda module, node, target: formula(node.value)) or ())
        if len(values) == 1 and next(iter(values)) in (LAST, FIRST):
            memo[attr] = next(iter(values))
        return memo[attr]

    def _only_on(self, rank, key, fname: str, depth: int, active: frozenset = frozenset()) -> bool:
        """Whether every call of method ``fname`` of class ``key`` runs only on ``rank`` (see
        :meth:`caller_rank`).  A call from a method already being asked about (a wrapper's
        ``compute_logits_local`` delegating to its language model's) adds no way in: the chain
        enters through the other callers, which are asked."""
        if (tuple(key), fname) in active:
            return True
        memo = self._memo.setdefault("only-on", {})
        mkey = (rank, tuple(key), fname)
        if mkey in memo:
            return memo[mkey]
        active = active | {(tuple(key), fname)}
        if depth > 3:
            return False
        got = self._only_on_uncached(rank, key, fname, depth, active)
        if len(active) == 1:
            memo[mkey] = got  # an answer that assumed no other question open
        return got

    def _only_on_uncached(self, rank, key, fname: str, depth: int, active: frozenset) -> bool:
        if fname in F.ENGINE_METHODS and fname not in F.RANK_OF_METHOD:
            return False  # the engine calls it on every rank
        try:
            mro = self.r.mro(key)
            crec = self.r.class_record(key)
        except Exception:
            return False
        if fname not in crec["methods"]:
            return False
        name = fname.encode()
        # a call or read `x.fname`, a name in a string (`getattr(x, "fname")`), the method itself
        files = self._tree_files(b"." + name, b'"' + name + b'"', b"'" + name + b"'", b"def " + name)
        if files is None or len(files) > MAX_CALLER_FILES:
            return False  # not readable, or a name too common to follow: not established
        related = {e for e in mro if e[0] != "<external>"}
        target = None
        sites = []  # (module, lines, call, function, owner class or None)
        for path, module in files:
            got = self._parsed(path, module)
            if got is None:
                return False
            path, module, tree, lines = got
            strings, defs, attrs = self._index(path, tree)
            for _node, parent in strings.get(fname, ()):
                if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "hasattr"):
                    return False  # getattr(x, "name"), a table of names: a call not seen
            owners = {}
            for fn_node, parent in (d for ds in defs.values() for d in ds):
                if isinstance(parent, ast.ClassDef) and parent in tree.body:
                    owners[fn_node] = parent
            for fn_node, parent in defs.get(fname, ()):
                if module == key[0] and isinstance(parent, ast.ClassDef) and parent.name == key[1] and parent in tree.body:
                    target = fn_node
            for node, parent, fn, lam in attrs.get(fname, ()):
                if not isinstance(node.ctx, ast.Load):
                    return False  # the method is replaced somewhere
                owner = owners.get(fn)
                is_call = isinstance(parent, ast.Call) and parent.func is node
                if (fn is not None and self._unrelated(module, fn, owner, node, key, related)):
                    continue  # `self.x.fname` of a class unrelated to `key`
                if not is_call:
                    return False  # the method is read, not called: it may be called elsewhere
                sites.append((module, lines, parent, fn, owner, lam))
        if target is None:
            return False
        sites = [site for site in sites if _accepts(target, site[2])]  # others cannot be calls of it
        by_fn: dict = {}
        for module, lines, call, fn, owner, lam in sites:
            if lam:
                return False  # a lambda runs where it is called, not where it is written
            if fn is None:
                return False  # a call at module level
            by_fn.setdefault(fn, (module, lines, owner, []))[3].append(call)
        for fn, (module, lines, owner, calls) in by_fn.items():
            w = _CallWalker(lines, fn, {id(c) for c in calls})
            w.block(fn.body, TRUE, frozenset(), False, {})
            if len(w.found) != len(calls):
                return False
            for guard in w.found.values():
                g = guard
                for a in sorted(_atoms(guard, set()) - {"@first", "@last"}):
                    alias = self.rank_alias(a)
                    if alias is not None:
                        g = _substitute(g, a, alias)
                if satisfying(f_and(g, f_not(rank))) is None:
                    continue
                # a method of the same name forwarding the call (a wrapper's compute_logits_local)
                # is not a step further away from the engine
                deeper = depth if fn.name == fname else depth + 1
                if owner is None or not self._only_on(rank, (module, owner.name), fn.name, deeper, active):
                    return False
        return bool(sites)

    def feature_refuses_pp(self, flag: str):
        """Whether the analysed tree refuses pipeline parallelism whenever the config flag ``flag``
        is on: some function of its parallel configuration module (the first of
        :data:`~pp_attr_lint.facts.PARALLEL_CONFIG_MODULES` it holds, for this file's top-level
        package) that tests ``pipeline_parallel_size`` raises on every path where ``flag`` holds
        under PP (``pipeline_parallel_size > 1`` is true there; the guards of its ``raise``
        statements cover ``flag``).  A plugin, whose package has no such module, is asked about
        the one engine it imports from outside the checked tree (a package with a model registry,
        :meth:`_scan_dirs`).  ``None`` when no such module is found: it cannot be told."""
        answer = self._refuses_in(self.ctx.module.split(".", 1)[0], flag)
        if answer is None:
            engines = [prefix for _folder, prefix in self._scan_dirs() or () if prefix and self.r.model_registry(prefix)]
            if len(engines) == 1:
                answer = self._refuses_in(engines[0], flag)
        return answer

    def _refuses_in(self, top: str, flag: str):
        memo = self._memo.setdefault("refuses", {})
        if (top, flag) in memo:
            return memo[(top, flag)]
        from .index.spec import LineIndex
        from .textio import read_source

        answer = None
        for pattern in F.PARALLEL_CONFIG_MODULES:
            module = pattern.replace("{top}", top)
            path = self.ctx.project.path(module) if self.ctx.project.summary(module) is not None else None
            if not path:
                continue
            try:
                import os

                stat = os.stat(path)
                self.ctx.project.touched.setdefault(path, (stat.st_mtime_ns, stat.st_size))
                text = read_source(path).text
                tree = ast.parse(text)
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                break  # found but unreadable: cannot be told
            answer = False
            lines = LineIndex(text)
            for all_raises in _raise_guards(tree, lines, lambda body: flag in body):
                # the raises under the flag; leaving the others out only makes a refusal harder to show
                raises = [g for g in all_raises if flag in _atoms(g, set())]
                uncovered = f_and(("a", flag), f_not(f_or(*raises)))
                if not raises:
                    continue
                if len(_atoms(uncovered, set()) - {"@first", "@last"}) > 16:
                    answer = None  # too many tests to enumerate: cannot be told
                    continue
                if satisfying(uncovered) is None:
                    answer = True
                    break
            break
        memo[(top, flag)] = answer
        return answer

    def module_runs_under_pp(self, module: str) -> bool:
        """False when the model registry lists classes of ``module`` and none of them has
        ``SupportsPP`` on its MRO: the engine refuses ``pipeline_parallel_size > 1`` for such a
        model (vllm/config/model.py verifies ``supports_pp``; Aphrodite 0.24.1's
        aphrodite/config/model.py:1366 too), so its code never runs on a rank > 0.  The registry is
        the one of ``module``'s top-level package (:meth:`Resolver.model_registry`, found by its
        place in the tree), plus the ``register_model`` calls of the checked files (a plugin's
        classes are checked the same way).  True when no registry lists the module (SGLang, RL
        frameworks, the rule cases; for SGLang see :meth:`refused_under_pp`) or a registered class
        cannot be resolved.  Raises :class:`~pp_attr_lint.resolve.Unresolved`
        (``engine-fact-unknown``) when whether the engine runs the module's models under PP
        cannot be established; every rule that asks gets the same answer."""
        memo = self._memo.setdefault("pp-modules", {})
        if module in memo:
            if isinstance(memo[module], Unresolved):
                raise memo[module]  # every rule that asks gets the same answer
            return memo[module]
        memo[module] = True  # while it is being answered
        registered = []
        engines = set()  # the top-level packages of the registries that list the module
        for _tname, _arch, full, cls in self.r.model_registry(module.split(".", 1)[0]) or ():
            if full == module:
                engines.add(module.split(".", 1)[0])
                registered.append((module, cls))
            elif module.startswith(full + "."):
                # an entry naming the package (vLLM 0.33.0 `vllm.models.glm5next`) whose
                # `__init__` re-exports the class of this submodule
                try:
                    key = self.r.resolve_class(full, cls)
                except Exception:
                    key = None
                if key is not None and key[0] == module:
                    engines.add(module.split(".", 1)[0])
                    registered.append(key)
        for _arch, top, key, _name, _m, _line in self.registrations():
            if key and key[0] == module:
                registered.append(key)
                engines.add(top)
        ok = True
        if registered:
            ok = False
            for key in dict.fromkeys(registered):
                try:
                    if any(e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL for e in self.r.mro(key)):
                        ok = True
                        break
                except Exception:
                    ok = True  # cannot tell: judge it
                    break
        if not ok and not all(top and self.refuses_unsupported_models(top) for top in sorted(engines, key=str)):
            # the registered model lacks the protocol, but that the engine then refuses it is not
            # in the tree: neither judged as a PP model nor passed as one that never runs under PP
            memo[module] = Unresolved("engine-fact-unknown", f"`{module}`'s registered classes do not list "
                                      f"`{F.PP_PROTOCOL}`, and no check in the analysed code refuses pipeline "
                                      "parallelism for such a model")
            raise memo[module]
        memo[module] = ok
        return ok

    def refuses_unsupported_models(self, top: str) -> bool:
        """Whether the engine whose top-level package is ``top`` refuses ``pipeline_parallel_size
        > 1`` for a model that does not support it: some function of a module of ``top`` under the
        scanned folders (:meth:`_scan_dirs`: the checked root and the packages it imports, the
        engine a plugin runs in included) raises on every path
        where ``pipeline_parallel_size > 1`` holds and a call named for PP support (``...
        is_pp_supported_model(...)``, ``supports_pp(...)``) returns false.  vLLM 0.10.0 has it in
        vllm/config.py, 0.21.0 to 0.33.0 and Aphrodite 0.24.1 in ``<pkg>/config/model.py``
        (``raise NotImplementedError("Pipeline parallelism is not supported for this model. ...")``);
        SGLang 0.5.23 has none.  False when none is found or a file cannot be read."""
        memo = self._memo.setdefault("refuses-unsupported", {})
        dirs = self._scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        memo[(dirs, top)] = answer = False
        for _module, tree, lines in self._package_trees(top, b"pp_supported", b"supports_pp"):
            for raises in _raise_guards(tree, lines, lambda body: "pp_supported" in body or "supports_pp" in body):
                if not raises:
                    continue
                raised = f_or(*raises)
                for atom in sorted(_atoms(raised, set()) - {"@first", "@last"}):
                    name = atom.split("(", 1)[0].rsplit(".", 1)[-1]
                    if "(" in atom and ("pp_supported" in name or "supports_pp" in name) \
                            and satisfying(f_and(f_not(("a", atom)), f_not(raised))) is None:
                        answer = True  # the model not supported under PP: a raise on every path
                        break
                if answer:
                    break
            if answer:
                break
        memo[(dirs, top)] = answer
        return answer

    def pp_forward_requirement(self, top: str) -> tuple | None:
        """``(parameter, exempt)`` when the engine whose top-level package is ``top`` asserts, with
        pipeline parallelism on, that the model's ``forward`` accepts ``parameter``: a function of
        a module of ``top`` under the scanned folders (:meth:`_scan_dirs`) binds ``X = "parameter"
        in inspect.signature(self.model.forward).parameters`` in its own body and then ``assert
        X`` under an ``if`` that holds only under PP (``pp_size > 1``), in a method of a class that
        some code of the tree builds (or a function it calls).  SGLang's model runner has it
        (sglang/srt/model_executor/model_runner.py, ``support_pp``, 0.5.15 and 0.5.23; built in
        managers/tp_worker.py).
        ``exempt``: something can skip the assert or make it pass: another test around it (SGLang
        0.5.23 lifts it for a draft worker under ``SGLANG_ENABLE_PP_SPEC``), a ``return`` before
        it, or ``X`` bound again in the module.  ``None`` when no such check is found (or a file
        that may hold one cannot be read)."""
        memo = self._memo.setdefault("pp-forward", {})
        dirs = self._scan_dirs()
        if (dirs, top) in memo:
            return memo[(dirs, top)]
        memo[(dirs, top)] = answer = None
        for _module, tree, _lines in self._package_trees(top, b".forward).parameters"):
            stores: dict = {}
            for n in _fast_walk(tree):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                    n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) else []
                for t in targets:
                    stores[ast.unparse(t)] = stores.get(ast.unparse(t), 0) + 1
            owners = {id(m): c.name for c in _fast_walk(tree) if isinstance(c, ast.ClassDef)
                      for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for fn in _fast_walk(tree):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found = _forward_requirement(fn, stores)
                    if found is not None and not self._called(owners.get(id(fn), fn.name)):
                        found = None  # a runner (or function) no code of the tree builds: dead code
                    if found is not None and (answer is None or answer[1] and not found[1]):
                        answer = found
        memo[(dirs, top)] = answer
        return answer

    def refused_under_pp(self, module: str, cls: str | None) -> bool:
        """Whether the engine never runs class ``cls`` of ``module`` under PP: ``cls`` is an entry
        class of its module (:meth:`entry_classes`), the engine asserts under PP that the model's
        ``forward`` takes a parameter (:meth:`pp_forward_requirement`), ``cls``'s ``forward``
        does not (:meth:`forward_accepts`), and no other code names ``cls`` (a subclass, a wrapper
        that builds it, in any file of the tree or outside ``cls``'s own body in its module).
        False when any of it does not hold or cannot be told (the class is judged).  Raises
        :class:`~pp_attr_lint.resolve.Unresolved` (``pp-refusal-unsure``) when the check can be
        skipped (a test around the assert, an early ``return``, the flag bound twice) or other
        code names the class: that it never runs under PP is not established."""
        if cls is None or "." in cls:
            return False
        entries = self.entry_classes(module)
        if not entries or (module, cls) not in entries:
            return False
        req = self.pp_forward_requirement(module.split(".", 1)[0])
        if req is None or self.forward_accepts((module, cls), req[0]) is not False:
            return False
        why = None
        if req[1]:
            why = "a test around the engine's check can skip it (for a speculative draft model)"
        elif self._named_elsewhere(module, cls):
            why = f"other code of the analysed tree names `{cls}` (a subclass, or a model that builds it)"
        if why is not None:
            raise Unresolved("pp-refusal-unsure", f"the engine refuses pipeline parallelism for `{cls}` (its "
                             f"`forward` takes no `{req[0]}`), but {why}: that it never runs under PP is not "
                             f"established")
        return True

    def _called(self, name: str) -> bool:
        """Whether a file of the tree calls ``name(...)`` (builds the class, calls the function)
        other than where it is defined."""
        import re

        call = re.compile(rb"(?<!class )(?<!def )\b" + re.escape(name.encode()) + rb"\s*\(")
        return any(call.search(self._bytes(path) or b"") for path, _m in self._tree_files(name.encode()) or ())

    def unless_refused(self, code: str, cls: str | None, findings: list) -> list:
        """``findings`` of rule ``code`` on lines of class ``cls`` in this file: none when the
        engine never runs the class under PP (:meth:`refused_under_pp`), a
        :class:`~pp_attr_lint.model.NotJudged` record at each one's place when that cannot be
        established, the findings themselves otherwise."""
        if not findings:
            return findings
        try:
            return [] if self.refused_under_pp(self.ctx.module, cls) else findings
        except Unresolved as e:
            from .model import NotJudged

            return [NotJudged(code=code, reason=e.reason, path=self.ctx.file.path, row=f.row, column=f.column,
                              detail=e.detail) for f in findings]

    def _named_elsewhere(self, module: str, cls: str) -> bool:
        """Whether a file of the tree other than ``module``'s names ``cls`` as a word, or
        ``module`` does outside ``cls``'s own class body and the entry attribute's binding."""
        import re

        word = re.compile(rb"\b" + re.escape(cls.encode()) + rb"\b")
        own = self.ctx.project.path(module)
        for path, _mod in self._tree_files(cls.encode()) or ():
            if path != own and word.search(self._bytes(path) or b""):
                return True
        got = self._module_parsed(module)
        if got is None:
            return True
        tree, lines = got[2], got[3]
        attr = self._entry_attribute(module)
        allowed = set()
        for st in tree.body:
            if isinstance(st, ast.ClassDef) and st.name == cls or isinstance(st, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == attr for t in st.targets):
                allowed.update(range(st.lineno, st.end_lineno + 1))
        return any(word.search(text.encode()) for k, text in enumerate(lines.lines, 1) if k not in allowed)

    def _entry_attribute(self, module: str) -> str | None:
        """The module attribute the registry of ``module``'s package reads from each of its
        modules (``"EntryClass"``, :func:`_registry_attribute`), when ``module`` is a sibling of
        that registry's module; ``None`` otherwise."""
        top = module.split(".", 1)[0]
        memo = self._memo.setdefault("entry-attr", {})
        if top not in memo:
            found = set()
            for mod, tree, _lines in self._package_trees(top, b"iter_modules("):
                for fn in _fast_walk(tree):
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        attr = _registry_attribute(fn)
                        if attr is not None:  # the models are the registry module's siblings
                            found.add((attr, mod.rsplit(".", 1)[0]))
            memo[top] = found
        return next((a for a, package in sorted(memo[top]) if module.rsplit(".", 1)[0] == package), None)

    def entry_classes(self, module: str) -> list | None:
        """The model classes the engine loads from ``module`` when its registry reads a module
        attribute of every module of its own package (SGLang's ``import_model_classes`` in
        sglang/srt/models/registry.py: ``pkgutil.iter_modules`` over the package,
        ``hasattr(module, "EntryClass")``): the class keys that attribute names (one name, or a
        list or tuple of names) in ``module``, a sibling of the registry module; ``None`` when the
        tree reads no such attribute, ``module`` is not such a sibling or does not bind it, or a
        name cannot be resolved to a class of the analysed code."""
        attr = self._entry_attribute(module)
        path = self.ctx.project.path(module) if attr is not None else None
        if not path or attr.encode() not in (self._bytes(path) or b""):
            return None  # (before any parse)
        got = self._module_parsed(module)
        if got is None:
            return None
        import re

        names, binding = None, None
        for st in got[2].body:
            if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in st.targets):
                if names is not None:
                    return None  # bound twice: which binding the registry reads depends on the run
                v = st.value
                elts = v.elts if isinstance(v, (ast.List, ast.Tuple)) else [v]
                names, binding = [dotted_name(e) for e in elts], st
                if None in names:
                    return None
        if not names:
            return None
        # the attribute named anywhere else (bound in a branch, appended to, extended): not read
        text = "".join(got[3].lines[binding.lineno - 1:binding.end_lineno]).encode()
        word = re.compile(rb"\b" + re.escape(attr.encode()) + rb"\b")
        if len(word.findall(self._bytes(path))) != len(word.findall(text)):
            return None
        out = []
        for name in names:
            try:
                out.append(self.r.resolve_class(module, name))
            except Exception:  # noqa: BLE001  (cannot tell)
                return None
        return out if all(k is not None for k in out) else None

    def forward_accepts(self, key, parameter: str) -> bool | None:
        """Whether the ``forward`` that instances of class ``key`` have (the first class on the MRO
        that defines it; ``torch.nn.Module``'s, :data:`~pp_attr_lint.facts.MODULE_FORWARD_PARAMETERS`,
        when none before it does) takes a parameter named ``parameter`` (``**kwargs`` does not
        count: it is no parameter of that name to ``inspect.signature``); ``None`` when it cannot
        be told (the MRO is not known, ``forward`` is bound another way, or comes from another
        class outside the analysed code)."""
        try:
            mro = self.r.mro(key)
        except Exception:  # noqa: BLE001
            return None
        for k in mro:
            if k[0] == EXTERNAL_KEY:
                if k[1] in F.MODULE_CLASSES:
                    return parameter in F.MODULE_FORWARD_PARAMETERS
                continue  # an attribute-less base (object, Protocol, ...): no forward of its own
            got = self._module_parsed(k[0])
            node = next((n for n in got[2].body if isinstance(n, ast.ClassDef) and n.name == k[1]), None) if got else None
            if node is None:
                return None  # a nested class, or a file that does not parse
            for n in _fast_walk(node):
                if isinstance(n, ast.Attribute) and n.attr == "forward" and isinstance(n.ctx, (ast.Store, ast.Del)):
                    return None  # `self.forward = ...`: an instance's own
            own = [n for n in node.body if getattr(n, "name", None) == "forward" or isinstance(n, (ast.Assign, ast.AnnAssign))
                   and "forward" in {getattr(t, "id", None) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}]
            if not own:
                continue  # (a `__getattr__` is never asked for it: torch's Module.forward comes first)
            fwd = own[-1]
            if not isinstance(fwd, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(own) > 1 or any(
                    not (isinstance(d, ast.Call) and dotted_name(d.func) in F.SIGNATURE_KEEPING_DECORATORS
                         and not d.args and not d.keywords) for d in fwd.decorator_list):
                return None  # bound another way, defined twice, or wrapped by what may change its signature
            a = fwd.args
            return parameter in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        return None

    def registrations(self) -> list:
        """:meth:`Resolver.registrations` of the checked files and of every other file of the
        checked file's top-level package that calls ``.register_model(`` (a plugin registers its
        classes in its ``__init__.py``: the verdict on a class must not depend on whether that file
        is checked too); memoized for the run."""
        import os

        top = self.ctx.module.split(".", 1)[0]
        key = ("registrations", id(self.ctx.checked), self.ctx.file.root, top)
        got = self.ctx.shared.get(key)
        if got is None:
            sources = {st.module: st.summary for st in self.ctx.checked}
            folder = os.path.join(self.ctx.file.root, top)
            for d, dirs, files in os.walk(folder):
                dirs[:] = sorted(x for x in dirs if x != "__pycache__")
                for name in sorted(files):
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(d, name)
                    try:
                        st = os.stat(path)
                        self.ctx.project.touched.setdefault(path, (st.st_mtime_ns, st.st_size))
                        with open(path, "rb") as fh:
                            if b".register_model(" not in fh.read():
                                continue
                    except OSError:
                        continue
                    rel = os.path.relpath(path, self.ctx.file.root)[:-3].split(os.sep)
                    module = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
                    if module not in sources:
                        sources[module] = self.ctx.project.summary(module)
            got = self.r.registrations(sorted(sources.items(), key=lambda kv: kv[0]))
            self.ctx.shared[key] = got
        return got

    def is_layer_list(self, key, attr: str) -> bool:
        """Whether ``attr`` of class ``key`` (or a base) comes from a ``make_layers`` tuple."""
        return self._list_builder(key, attr) is not None

    def _list_builder(self, key, attr: str):
        """``(class, guard)``: the first class on ``key``'s MRO that assigns ``attr`` from
        ``make_layers``, and the guard of those assignments; ``None`` when none does."""
        try:
            mro = self.r.mro(key)
        except Exception:
            return None
        try:  # the __init__s that run for `key`: a base's that is skipped builds nothing
            ran = {(owner, scope["line"]) for owner, scope in self.r.executed_inits(key)}
        except Exception:
            ran = None
        for entry in mro:
            if entry[0] == "<external>":
                continue
            mf = self.module_facts(entry[0]) or {}
            built = [(line, g) for c, a, line, g in mf.get("lists", ()) if c == entry[1] and a == attr]
            if built and ran is not None:
                methods = self.r.class_record(entry)["methods"]
                init = methods.get("__init__")
                if init is not None and (entry, init["line"]) not in ran:
                    # `nn.Module.__init__(self)` in a subclass: the base's `make_layers` never runs
                    def method_of(line):
                        return max(((sc["line"], n) for n, sc in methods.items() if sc["line"] <= line),
                                   default=(0, None))[1]
                    built = [(line, g) for line, g in built if method_of(line) != "__init__"]
            if built:
                return entry, f_or(*(g for _, g in built))
        return None

    def list_guard(self, key, attr: str) -> tuple:
        """The guard under which ``attr`` of class ``key`` (or of the first base that builds it)
        is assigned from ``make_layers`` (``TRUE`` when unconditional or not known)."""
        got = self._list_builder(key, attr)
        return TRUE if got is None else got[1]

    def conditional_list_note(self, owners, attr: str) -> str | None:
        """When ``attr`` of the classes ``owners`` comes from ``make_layers`` only under a guard:
        the explanation line saying so (the fixes of PPA102 / PPA103 read ``start_layer``, which
        exists only then, so they offer none); ``None`` when it always does."""
        built_when = f_or(*(self.list_guard(k, attr) for k in owners))
        if built_when == TRUE:
            return None
        return (f"`{attr}` comes from `make_layers` only {when(built_when)} "
                f"(`start_layer` / `end_layer` exist only then): no automatic fix")

    def list_flag_off(self, key, attr: str) -> bool:
        """Whether ``attr`` of class ``key`` is a ``make_layers`` list only under ``__init__``
        flags (``if enable_pp: ... = make_layers(...) else: ... = nn.ModuleList(...)``, vLLM's
        ``WhisperEncoder``) that every construction of ``key`` found turns off with a constant
        keyword (``UltravoxWhisperEncoder(..., enable_pp=False)``): then no slot is ever a
        placeholder.  Constructions are looked for in ``key``'s module and the checked files; with
        none found, a flag not passed as a keyword constant, or a rank test in the guard: ``False``."""
        memo = self._memo.setdefault("flag-off", {})
        if (key, attr) not in memo:
            memo[(key, attr)] = self._list_flag_off(key, attr)
        return memo[(key, attr)]

    def _list_flag_off(self, key, attr: str) -> bool:
        got = self._list_builder(key, attr)
        if got is None:
            return False
        entry, cond = got
        flags = _atoms(cond, set())
        init = self.r.class_record(entry)["methods"].get("__init__") or {}
        if cond == TRUE or rank_atoms(cond) or not flags <= set(init.get("params", ())):
            return False
        sites = self._constructions(key)
        if not sites:
            return False
        params = list(init["params"])[1:]  # after `self`, positional ones first
        for consts in sites:
            if consts is None or not flags <= set(consts):
                return False  # `**kwargs`, or the flag left at its default
            if any(params.index(f) < consts.get("*", 0) for f in flags):
                return False  # a positional argument may be the flag too
            if _eval(cond, {f: bool(consts[f]) for f in flags}):
                return False
        return True

    def _constructions(self, key) -> list:
        """The constant keywords (``{keyword: value, "*": positional arguments}``; ``None`` when a
        call passes ``*args`` or ``**kwargs``) of every call of class ``key`` that a summary of ``key``'s
        module or of a checked file records (assignments and locals of functions and methods)."""
        modules = dict.fromkeys([key[0], *(st.module for st in self.ctx.checked)])
        out = []
        for mod in modules:
            summary = self.ctx.project.summary(mod)
            if not summary:
                continue
            scopes = [*summary["functions"].values(),
                      *(m for c in summary["classes"].values() for m in c["methods"].values())]
            for scope in scopes:
                descs = [d for lst in scope["assigns"].values() for _, ds in lst for d in ds]
                descs += [d for ds in scope["locals"].values() for d in ds]
                for d in descs:
                    if d[0] != "call" or d[1].rsplit(".", 1)[-1] != key[1].rsplit(".", 1)[-1]:
                        continue
                    try:
                        sym = self.r.resolve_dotted(mod, d[1])
                    except Exception:
                        sym = None
                    if sym is not None and sym[0] == "class" and (sym[1], sym[2]) == tuple(key):
                        out.append(d[3] if len(d) > 3 else {})
        return out

    def receiver_classes(self, chain: tuple, cls: str | None, fline: int):
        """Classes ``chain`` may be in the function at ``fline`` of class ``cls`` of this file."""
        from .index.summary import scopes_by_line

        skey = ("scopes", self.ctx.file.path)
        scopes = self.ctx.shared.get(skey)
        if scopes is None:
            scopes = self.ctx.shared[skey] = scopes_by_line(self.ctx.summary)
        scope = scopes.get((cls, fline))
        if scope is None:
            return None
        clskey = (self.ctx.module, cls) if cls else None
        try:
            return self.r.chain_candidates(tuple(chain), self.ctx.module, clskey, scope)
        except Exception:
            return None

    def list_owners(self, chain: tuple, cls: str | None, fline: int):
        """The classes that hold ``chain[-1]`` as a ``make_layers`` list, with a sentence that says
        how that was found; ``([], "")`` when not every candidate does.  When the receiver's class is
        not known (a parameter annotated ``nn.Module``), the checked files decide: every class of
        theirs that reaches the same attribute path must build it with ``make_layers``.

        ``([], "")`` leaves :attr:`owner_failure` set to ``(reason, detail, path)`` when what stopped
        it is code the run does not have (:data:`MISSING_CODE`: the receiver's class, or a
        candidate's bases, lead into a module that is not found or does not parse), else ``None``."""
        self.owner_failure = None
        owners = self.receiver_classes(chain[:-1], cls, fline)
        why = self.r.why if owners is None else None
        lst = chain[-1]
        if owners:
            if all(self.is_layer_list(k, lst) and not self.list_flag_off(k, lst) for k in owners):
                names = " | ".join(k[1] for k in sorted(owners))
                return sorted(owners), f"`{'.'.join(chain[:-1])}` is a `{names}`, whose `{lst}` comes from `make_layers`"
            from .resolve import NONE_KEY, Unresolved

            for k in sorted(owners):  # a candidate whose bases cannot be read: not told either way
                if k == NONE_KEY:
                    continue
                try:
                    self.r.mro(k)
                except Unresolved as e:
                    if e.reason in MISSING_CODE:
                        self.owner_failure = (e.reason, f"{k[1]}: {e.detail}", e.path)
                        break
            return [], ""
        # structural: the longest suffix of attribute steps that some class of the checked files or
        # of this file's package (the modules beside it that build make_layers lists) has
        modules = [st.module for st in self.ctx.checked] + self._sibling_list_modules()
        for start in range(1, len(chain) - 1):
            steps = chain[start:-1]
            fits, misfits = [], []
            for mod in dict.fromkeys(modules):
                summary = self.ctx.project.summary(mod)
                for cname in (summary or {}).get("classes", ()):
                    key = (mod, cname)
                    holders = self._follow(key, steps)
                    if holders is None:
                        continue
                    # a class without the attribute at all cannot be what the code reads
                    having = [h for h in holders if self._status(h, lst) != "absent"]
                    if having:
                        (fits if all(self.is_layer_list(h, lst) for h in having) else misfits).append(key)
            if fits and not misfits:
                names = ", ".join(sorted(k[1] for k in fits))
                return fits, (f"the class of `{'.'.join(chain[:start])}` is not known; every class of the checked files "
                              f"that has `.{'.'.join(steps)}.{lst}` ({names}) builds `{lst}` with `make_layers`")
            if fits or misfits:
                return [], ""
        if why and why[0] in MISSING_CODE:
            self.owner_failure = tuple(why)
        return [], ""

    def _sibling_list_modules(self) -> list:
        """Modules of this file's package folder whose text calls ``make_layers``."""
        import os

        st = self.ctx.file
        if "." not in st.module:
            return []
        package = st.module.rsplit(".", 1)[0]
        folder = os.path.dirname(st.path)
        out = []
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        for name in names:
            if not name.endswith(".py") or name == "__init__.py":
                continue
            path = os.path.join(folder, name)
            try:
                stat = os.stat(path)
                self.ctx.project.touched.setdefault(path, (stat.st_mtime_ns, stat.st_size))  # the result depends on it
                with open(path, "rb") as f:
                    if F.MAKE_LAYERS.encode() not in f.read():
                        continue
            except OSError:
                continue
            out.append(f"{package}.{name[:-3]}")
        return out

    def _status(self, key, attr: str) -> str:
        try:
            return self.r.attribute_status(key, attr)
        except Exception:
            return "unknown"

    def _follow(self, key, steps):
        current = {key}
        for step in steps:
            nxt = set()
            for ck in current:
                got = self.r.attr_candidates(ck, step)
                if got is None:
                    return None
                nxt |= got[0]
            current = nxt
        return current or None

    def where(self, entry_line) -> str:
        from .textio import display_path

        (module, _cls), line = entry_line
        path = self.ctx.project.path(module)
        return f"{display_path(path) if path else module}:{line}"


def _substitute(f, atom: str, by) -> tuple:
    """``f`` with the atom ``atom`` replaced by the formula ``by``."""
    k = f[0]
    if k == "a":
        return by if f[1] == atom else f
    if k == "not":
        return f_not(_substitute(f[1], atom, by))
    if k == "and":
        return f_and(*(_substitute(g, atom, by) for g in f[1]))
    if k == "or":
        return f_or(*(_substitute(g, atom, by) for g in f[1]))
    return f


def _target_names_of(stmt) -> set:
    """The plain names a class-body statement binds (``x = ...``, ``x: T = ...``, ``def x``)."""
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {stmt.name}
    return set()


def _init_line(r, entry) -> int | None:
    scope = r.class_record(entry)["methods"].get("__init__")
    return None if scope is None else scope["line"]

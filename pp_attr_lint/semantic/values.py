"""What an attribute holds on each pipeline-parallel rank: the placeholders (``PPMissingLayer``)
a model assigns on the ranks that do not own a layer, the ``make_layers`` lists whose slots
outside a rank's range are placeholders, and the classes a receiver may hold.

The collector (:func:`collect`) records, per module, with positions (1-based rows, 0-based
character columns):

* ``assigns``: ``(class, method, attr, line, callee or None, guard)`` for ``self.attr = value``
  (one per branch of a conditional expression); ``callee`` is the dotted name of a called class;
* ``lists``: ``(class, attr, line, guard)`` for ``self.a, self.b, self.attr = make_layers(...)``;
* ``uses``: one record per read that a placeholder could break, see :func:`collect`;
* ``helpers``: plain functions of the module whose truthy result implies a condition
  (:func:`~.flow.truthy_only_when`).

:class:`Values` answers, across files, what an instance's attribute holds after the
``__init__`` that runs.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import facts as F
from ..index.astutil import dotted_name, ref_chain
from ..index.spec import RANK_FACTS_KEY as FACTS_KEY
from ..resolve import answers_held_names_only
from ..textio import read_regular
from ..unjudged import MISSING_CODE
from .flow import (FlowWalker, bound_in, branches, call_constants, definition_stores, is_guarded, only_called,
                   truthy_only_when)
from .guards import FIRST, LAST, LAYER_COUNT_NAMES, TRUE, atoms, evaluate, f_and, f_not, f_or, rank_atoms, when
from .layer_builders import NEEDLES as LIST_NEEDLES
from .layer_builders import is_builder, list_site
from .service import Service

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


def index_kind(node: ast.AST, consts: dict | None = None) -> str | None:
    """``first`` for ``0``, ``last`` for ``-1`` / ``n - 1`` (n a layer count), ``const`` for another
    constant; ``None`` for an index that depends on the rank's range or a variable.  ``consts``
    maps the parameters of a nested function that every call binds to one constant to its node."""
    if consts and isinstance(node, ast.Name) and node.id in consts:
        return index_kind(consts[node.id])
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
        if name in LAYER_COUNT_NAMES:
            return "last"
    return None


def _layer_count(node: ast.AST) -> bool:
    """Whether ``node`` reads a model config's layer count (``self.config.num_hidden_layers``)."""
    c = ref_chain(node)
    return bool(c) and len(c) >= 2 and c[-1] in LAYER_COUNT_NAMES \
        and any(p == "config" or p.endswith("_config") for p in c[:-1])


def loop_source(it: ast.AST):
    """``(chain, enumerated)`` when a loop walks every slot of ``chain`` (``for x in a.layers``,
    ``enumerate(a.layers)``, ``zip(...)`` is not followed); ``None`` otherwise (slices,
    ``islice``, ``range(start_layer, end_layer)``)."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        c = ref_chain(it.args[0])
        return (c, True) if c is not None and len(c) >= 2 else None
    c = ref_chain(it)
    return (c, False) if c is not None and len(c) >= 2 else None


def loop_var(target: ast.AST, enumerated: bool) -> str | None:
    """The name a loop binds to each slot (the second of ``i, x`` when enumerated)."""
    if enumerated:
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
            return target.elts[1].id
        return None
    return target.id if isinstance(target, ast.Name) else None


class PlaceholderCollector(FlowWalker):
    """A :class:`~.flow.FlowWalker` that records into ``out`` (see :func:`collect`) the
    placeholder assignments, ``make_layers`` lists and reads of one method; ``names`` are the
    attribute names a placeholder may be assigned to."""

    named_lambdas = True

    def __init__(self, lines, out: dict, cls: str | None, fn: ast.FunctionDef, names: frozenset):
        super().__init__(lines, fn, cls)
        self.out = out
        self.names = names
        # locals assigned a chain once, unconditionally (`layers = self.model.layers`): name -> chain
        self.aliases: dict[str, tuple | None] = {}
        # lambdas stored as `self.attr = LazyValue(lambda: ...)`: id(lambda) -> attr
        self.lazy: dict[int, str] = {}
        # locals that may hold a config's layer count: name -> the condition (range_count)
        self.counts: dict[str, tuple | None] = {}

    def use(self, kind: str, chain, attr, node, guard, guarded: bool, extra=None) -> None:
        if self.inner is not None and (chain[0] != self.self_name or chain[0] in self.inner[2]):
            return  # in a nested function, only reads through the enclosing method's `self`
        self.out["uses"].append((kind, self.cls, self.fn.lineno, chain, attr, self.pos(node), guard, guarded, extra,
                                 self.deferral()))

    def deferral(self) -> tuple | None:
        """``(row, what, lazy attr)`` of the lambda (``what`` is ``"lambda"``) or nested function
        (its name) whose body holds what is walked now and runs only when it is called later
        (:meth:`~.flow.FlowWalker.deferred`); ``lazy attr`` names ``self.attr`` for a lambda stored
        as ``self.attr = LazyValue(lambda: ...)``, else ``None``.  ``None`` for a line the method
        itself runs."""
        node = self.deferred()
        if node is None:
            return None
        if isinstance(node, ast.Lambda):
            return (node.lineno, "lambda", self.lazy.get(id(node)))
        return (node.lineno, node.name, None)

    def loop_binding(self, target, it):
        src = self.loop_of(it)
        if src is not None:
            var = loop_var(target, src[1])
            return None if var is None else (var, (src[0], self.iter_info(it, src[1], not src[2])))
        rng = self.range_len(it)
        if rng is not None and isinstance(target, ast.Name):  # `for i in range(len(x.layers))`
            return ("#range:" + target.id, (rng, self.iter_info(it, False, False)))
        counted = self.range_count(it)
        if counted is not None and isinstance(target, ast.Name):  # `for i in range(config.num_hidden_layers)`
            return ("#range:" + target.id, (None, self.iter_info(it, False, False), counted))
        return None

    def range_count(self, it: ast.AST) -> tuple | None:
        """The condition under which ``range(n)`` walks every global layer id: ``n`` reads a
        config's layer count (``self.config.num_hidden_layers``, :data:`LAYER_COUNT_NAMES`), or
        is a local assigned once such a count in some branches of a conditional expression and
        integer constants in the others (``1 if is_nextn else self.config.num_hidden_layers``:
        when ``not is_nextn``); ``None`` otherwise."""
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) == 1 and not it.keywords):
            return None
        n = it.args[0]
        if isinstance(n, ast.Name):
            return self.counts.get(n.id)
        return TRUE if _layer_count(n) else None

    def iter_info(self, it: ast.AST, enumerated: bool, rewritable: bool = True) -> tuple:
        """(position of the loop's iterable, enumerated, whether a fix can rewrite it)."""
        simple = rewritable and (not enumerated or (isinstance(it, ast.Call) and len(it.args) == 1
                                                    and not it.keywords))
        return (self.pos(it), enumerated, simple)

    def loop_of(self, it: ast.AST) -> tuple | None:
        """``(chain, enumerated, aliased)`` of a loop over every slot: :func:`loop_source`, or a
        local that aliases a chain (``layers = self.model.layers; for layer in layers``)."""
        src = loop_source(it)
        if src is not None:
            return (src[0], src[1], False)
        enum = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args
        inner = it.args[0] if enum else it
        if isinstance(inner, ast.Name) and self.aliases.get(inner.id):
            return (self.aliases[inner.id], bool(enum), True)
        return None

    def range_len(self, it: ast.AST) -> tuple | None:
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

    def slot(self, node: ast.AST, loops: dict) -> tuple | None:
        """``(list chain, loop variable text, iter info, guard chains)`` when ``node`` is a slot of
        a loop over every slot: the loop variable ``v`` or ``x.layers[i]`` in ``range(len(...))``
        (a test of the slot or of ``i`` itself, ``if i < self.start_layer: continue``, guards it)."""
        if isinstance(node, ast.Name) and node.id in loops:
            src, info = loops[node.id]
            return (src, node.id, info, ((node.id,),))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
                and "#range:" + node.slice.id in loops:
            base = ref_chain(node.value)
            src, info, *_cond = loops["#range:" + node.slice.id]
            # a range over a config's layer count walks every slot of any list of the layers
            if base == src or (src is None and base is not None and len(base) >= 2):
                return (base, f"{'.'.join(base)}[{node.slice.id}]", info,
                        (("#index", *base, ast.dump(node.slice)), (node.slice.id,)))
        return None

    @staticmethod
    def slot_condition(node: ast.AST, loops: dict) -> tuple:
        """The condition under which the loop of the slot ``node`` (:meth:`slot`) walks every
        slot (a local layer count's branch, :meth:`range_count`); ``TRUE`` for any other loop."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
            got = loops.get("#range:" + node.slice.id)
            if got is not None and len(got) > 2:
                return got[2]
        return TRUE

    @staticmethod
    def slot_guarded(gchains, attr, guarded) -> bool:
        return any(is_guarded(c, attr if len(c) > 1 else None, guarded) for c in gchains)

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            v = stmt.value
            if len(targets) == 1 and isinstance(targets[0], ast.Attribute) and isinstance(targets[0].value, ast.Name) \
                    and targets[0].value.id == self.self_name and isinstance(v, ast.Call) and len(v.args) == 1 \
                    and isinstance(v.args[0], ast.Lambda) and not v.keywords \
                    and (dotted_name(v.func) or "").rsplit(".", 1)[-1] == F.LAZY_VALUE_CLASS:
                self.lazy[id(v.args[0])] = targets[0].attr
            self.unpacked_call(targets, stmt.value, guard, guarded, protected, loops)
            for t in targets:
                if isinstance(t, ast.Name):
                    c = ref_chain(stmt.value) if len(targets) == 1 else None
                    seen = t.id in self.aliases
                    self.aliases[t.id] = c if not seen and guard == TRUE and c is not None and len(c) >= 2 else None
                    self.count_local(t.id, stmt.value if len(targets) == 1 else None, guard, seen)
        super().stmt(stmt, guard, guarded, protected, loops)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    loops.pop("#slot:" + t.id, None)  # bound again: no longer the slot
            slot = self.slot(stmt.value, loops) if isinstance(stmt, ast.Assign) and len(targets) == 1 \
                and isinstance(targets[0], ast.Name) else None
            if slot is not None and not protected and not self.slot_guarded(slot[3], None, guarded):
                # `layer = self.layers[i]`: a later `layer.attr` reads the slot where this ran
                # (not behind a test of the slot or of `i`, which `layer.attr` no longer sees)
                loops["#slot:" + targets[0].id] = (*slot, f_and(guard, self.slot_condition(stmt.value, loops)))

    def count_local(self, name: str, value, guard, seen: bool) -> None:
        """Record in ``counts`` the condition under which local ``name`` holds a config's layer
        count (see :meth:`range_count`); a name bound more than once holds none."""
        if seen or name in self.counts or value is None:
            self.counts[name] = None
            return
        conds = []
        for g, v in branches(value, guard, self.flags):
            if _layer_count(v):
                conds.append(g)
            elif not (isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool)):
                self.counts[name] = None
                return
        self.counts[name] = f_or(*conds) if conds else None

    def unpacked_call(self, targets, value, guard, guarded, protected, loops) -> None:
        """``h, r = layer(...)`` in a loop over every slot: a placeholder returns its first
        argument, so the unpacking fails on it (recorded as a ``loop`` use of ``()``)."""
        if not (len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)) and isinstance(value, ast.Call)):
            return
        slot = self.slot(value.func, loops)
        if slot is not None:
            src, var, info, gchains = slot
            self.use("loop", src, "()", value, f_and(guard, self.slot_condition(value.func, loops)),
                     protected or self.slot_guarded(gchains, None, guarded), (var, *info))

    def assign(self, targets, value, guard) -> None:
        for t in targets:
            site = list_site(t, value, self.self_name)
            if site is not None:  # whether the callee builds the list is asked at check time
                self.out["lists"].append((self.cls, site[0], t.lineno, guard, site[1]))
            if not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == self.self_name):
                continue
            for g, v in branches(value, guard, self.flags):
                callee = dotted_name(v.func) if isinstance(v, ast.Call) else None
                if t.attr in self.names:  # only these are ever asked about (placeholder_condition)
                    self.out["assigns"].append((self.cls, self.fn.name, t.attr, t.lineno, callee, g))
                if t.attr in LAST_RANK_ATTRS:
                    c = ref_chain(v)
                    if c is not None and len(c) >= 2 and c[-1] in self.names:
                        self.use("alias", c, t.attr, v, g, False)

    def call(self, node, guard, guarded, protected, loops) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr in ARG_READERS:
            for a in node.args[:1]:
                c = ref_chain(a)
                if c is not None and len(c) >= 2 and c[-1] in self.names:
                    self.use("arg", c, ARG_READERS[node.func.attr], a, guard,
                             protected or is_guarded(c, ARG_READERS[node.func.attr], guarded), node.func.attr)

    def attribute(self, node: ast.Attribute, guard, guarded, protected, loops) -> None:
        recv = node.value
        chain = ref_chain(recv)
        if chain is not None and len(chain) >= 2 and chain[-1] in self.names:
            self.use("read", chain, node.attr, node, guard, protected or is_guarded(chain, node.attr, guarded))
        elif chain is not None and len(chain) == 1 and chain[0] in loops:
            src, info = loops[chain[0]]
            self.use("loop", src, node.attr, node, guard, protected or is_guarded(chain, node.attr, guarded), (chain[0], *info))
        elif chain is not None and len(chain) == 1 and "#slot:" + chain[0] in loops:
            src, _var, info, gchains, where = loops["#slot:" + chain[0]]
            self.use("loop", src, node.attr, node, f_and(guard, where),
                     protected or self.slot_guarded((*gchains, chain), node.attr, guarded), (chain[0], *info))
        elif isinstance(recv, ast.Subscript) and self.slot(recv, loops) is not None:
            src, var, info, gchains = self.slot(recv, loops)
            self.use("loop", src, node.attr, node, f_and(guard, self.slot_condition(recv, loops)),
                     protected or self.slot_guarded(gchains, node.attr, guarded), (var, *info))
        elif isinstance(recv, ast.Subscript):
            base = ref_chain(recv.value)
            consts = self.inner[1] if self.inner is not None else None
            kind = index_kind(recv.slice, consts)
            if base is not None and len(base) >= 2 and kind is not None:
                via = (recv.slice.id, ast.unparse(consts[recv.slice.id])) \
                    if consts and isinstance(recv.slice, ast.Name) and recv.slice.id in consts else None
                seen = (("#index", *base, ast.dump(recv.slice)), node.attr) in guarded
                self.use("index", base, node.attr, node, guard,
                         protected or seen or is_guarded(base, None, guarded), (kind, self.pos(recv.slice), via))

    def walk_nested(self) -> None:
        """Judge the body of each nested function (a ``def`` in the method, at any depth) like the
        method's own lines when it closes over the method's ``self``: once per set of calls that
        bind its parameters to the same integer constants, under the guards of those calls, each
        such parameter replaced by its constant (``def f(layer_id=0): self.layers[layer_id].mlp``
        ... ``f(layer_id=0)``).  Only nested functions that are called by name and never used
        otherwise (handed out, returned) are walked so, and in them only reads through ``self``;
        one that is stored or handed out, or called only inside a lambda, is walked once as a
        deferred body (:meth:`walk_inner`): its reads carry :meth:`deferral`."""
        done: set[int] = set()
        while True:
            todo = [(name, v) for name, v in self.nested.items() if v and id(v[0]) not in done]
            if not todo:
                return
            for name, (fn, def_guard, calls) in todo:
                done.add(id(fn))
                own = bound_in(fn)
                if self.self_name is None or self.self_name in own:
                    continue
                direct = [c for c in calls if c[4] is None]
                called = only_called(self.fn, name, definition_stores(fn))
                if not direct or not called:
                    # stored, handed out, or called only inside a lambda: its body runs when
                    # something calls it later, which is not read (its reads carry that)
                    later = calls[0][4] if calls and called else getattr(fn, "lambda_node", fn)
                    self.walk_inner(fn, own, {}, f_or(*[c[0] for c in calls]) if calls and called else def_guard,
                                    frozenset(), False, later)
                    continue
                calls = direct
                groups: dict[tuple, list] = {}
                for call in calls:
                    consts = call_constants(fn, call[3])
                    groups.setdefault(tuple(sorted((k, ast.dump(v)) for k, v in consts.items())), [consts]).append(call)
                merged: dict[tuple, list] = {}
                for consts, *group in groups.values():
                    uses = self.walk_inner(fn, own, consts, f_or(*[c[0] for c in group]),
                                           frozenset.intersection(*[frozenset(c[1]) for c in group]),
                                           all(c[2] for c in group), None)
                    for u in uses:  # one use per line read, under any of the groups' guards
                        key = (u[0], u[3], u[4], u[5])
                        if key not in merged:
                            merged[key] = list(u)
                        elif merged[key][8] == u[8]:
                            merged[key][6] = f_or(merged[key][6], u[6])
                            merged[key][7] = merged[key][7] and u[7]
                self.out["uses"].extend(tuple(u) for u in merged.values())

    def walk_inner(self, fn, own, consts, guard, guarded, protected, later) -> list:
        """Walk the body of nested function ``fn`` (``own``: the names it binds itself) with its
        parameters in ``consts`` bound to constants, under ``guard``; ``later``: the lambda or
        function whose call runs the body (:meth:`~.flow.FlowWalker.walk_deferred`), ``None``
        for a body the method runs.  Out: the uses recorded in it (those of a deferred body are
        added to ``out`` at once)."""
        saved_flags, saved_inner, saved_uses = self.flags, self.inner, self.out["uses"]
        self.flags = {k: v for k, v in saved_flags.items() if k not in own}
        self.inner = (fn.name, consts, own)
        self.out["uses"] = []
        try:
            if later is None:
                self.block(fn.body, guard, guarded, protected, {})
            else:
                self.walk_deferred(later, fn.body, guard, guarded, protected, {})
            uses = self.out["uses"]
        finally:
            self.flags, self.inner, self.out["uses"] = saved_flags, saved_inner, saved_uses
        if later is not None:
            self.out["uses"].extend(uses)
        return uses


def placeholder_targets(tree: ast.Module, lines) -> frozenset[str]:
    """The attributes this module assigns a value whose text names ``PPMissingLayer``
    (``x.attr = PPMissingLayer()``, ``self.norm = RMSNorm(...) if last else PPMissingLayer()``).
    Only the statements whose lines hold that name are visited (an assignment is always a
    statement), not every node of the module."""
    from ..index.astutil import statements_on_lines

    marked = [i for i, text in enumerate(lines.lines, 1) if F.PLACEHOLDER_CLASS in text]
    if not marked:
        return frozenset()
    out = set()
    for node in statements_on_lines(tree.body, marked):
        if isinstance(node, ast.Assign) \
                and F.PLACEHOLDER_CLASS in lines.span(node.value):
            out.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return frozenset(out)


def lazy_reads(cls: ast.ClassDef, attr: str) -> dict:
    """Each method of class ``cls`` (name -> whether it reads ``self.attr.value``, the read of a
    ``LazyValue`` that runs its stored lambda, :data:`~pp_attr_lint.facts.LAZY_VALUE_CLASS`)."""
    out = {}
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        me = fn.args.args[0].arg if fn.args.args else None
        out[fn.name] = me is not None and any(
            isinstance(n, ast.Attribute) and n.attr == F.LAZY_VALUE_READ and isinstance(n.value, ast.Attribute)
            and n.value.attr == attr and isinstance(n.value.value, ast.Name) and n.value.value.id == me
            for n in ast.walk(fn))
    return out


def collect(tree: ast.Module, lines) -> dict | None:
    """The placeholder facts of one module (see the module docstring).  ``uses`` holds
    ``(kind, class, function line, chain, attr, (row, col, end_row, end_col), guard, guarded,
    extra)``: ``read`` (``chain.attr`` where ``chain`` ends in a name a placeholder may be
    assigned to), ``alias`` (``self.lm_head = chain``), ``arg`` (``x.tie_weights(chain)``),
    ``index`` (``chain[k].attr``; extra = (index kind, index position)), ``loop``
    (``for v in chain: v.attr``; extra = the loop variable); ``guarded`` is true under an
    ``isinstance``/``hasattr`` test of the receiver or a handler of ``AttributeError``; a tenth
    field, ``deferred``, is ``(row, "lambda" or a nested function's name, lazy attr)`` for a read
    in a body that runs only when a stored lambda or nested function is called
    (:meth:`PlaceholderCollector.deferral`; ``lazy attr`` names ``self.attr`` for a lambda stored
    as ``self.attr = LazyValue(lambda: ...)``), else ``None``."""
    out: dict[str, Any] = {"assigns": [], "lists": [], "uses": []}
    names = PLACEHOLDER_NAMES | placeholder_targets(tree, lines)
    # a function is walked only when its text can hold what this module records: a placeholder
    # assignment (and its real twin beside it), a make_layers list, a read through a name that may
    # hold a placeholder, an alias into lm_head, a tied weight, a fixed slot or a loop of a list
    triggers = tuple({f".{n}." for n in names} | {F.PLACEHOLDER_CLASS, F.MAKE_LAYERS, "tie_weights(", "lm_head =",
                                                   # a range unpacked beside a list (layer_builders.list_site)
                                                   "end_layer =", "end_layer, self.", "end_layer,\n",
                                                   ".layers[", ".layers:", ".layers)", ".layers\n"})

    def worth(fn) -> bool:
        body = lines.span(fn)
        return any(t in body for t in triggers)

    def visit(body, cls):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, node.name if cls is None else None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and worth(node) \
                    and node.name not in F.NOT_RUN_UNDER_PP_METHODS:
                w = PlaceholderCollector(lines, out, cls, node, names)
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
                and "return False" in lines.span(node):
            need = truthy_only_when(node, lines)
            if need is not None:
                helpers[node.name] = need
    if helpers:
        out["helpers"] = helpers
    if not (out["assigns"] or out["uses"] or out["lists"] or helpers):
        return None
    return out


def _init_line(r, entry) -> int | None:
    scope = r.class_record(entry)["methods"].get("__init__")
    return None if scope is None else scope["line"]


class Values(Service):
    """What an attribute holds on each rank, for a :class:`~.model.RankFacts` ``model``
    (memoized per run)."""

    def __init__(self, model):
        super().__init__(model)
        self.owner_failure = None  # set by list_owners
        self.pc_failure = None  # set by placeholder_condition

    def module_facts(self, module: str) -> dict | None:
        """The facts :func:`collect` takes from ``module``: from its summary (collected now if the
        gate skipped the file), or, in a run whose spec has no such collector (no selected rule
        uses them: a loader rule asked only to mask), read from the file now, as a gated summary
        would (memoized per run); ``None`` when the module has none."""
        got = self.ctx.project.facts(module, FACTS_KEY)
        if got is None and all(k != FACTS_KEY for k, _ in self.ctx.project.spec.collectors):
            memo = self._memo.setdefault("unspecified-facts", {})
            if module not in memo:
                memo[module] = self._read_facts(module)
            got = memo[module]
        return got

    def _read_facts(self, module: str) -> dict | None:
        from ..index.summary import complete_facts
        from ..textio import decode_source

        path = self.ctx.project.path(module)
        data = self.m.reader.read_bytes(path) if path else None
        if data is None:
            return None
        try:
            return complete_facts(decode_source(data), collect)
        except Exception:  # noqa: BLE001  (a file that does not decode or parse: no facts)
            return None

    def lazy_readers(self, key, attr: str) -> list:
        """``Class.method`` for each method that an instance of class ``key`` runs (the first
        definition of its name on the MRO) and that reads ``self.attr.value``: where the lambda
        stored as ``self.attr = LazyValue(lambda: ...)`` runs (SGLang's sglang/srt/utils/common.py
        ``LazyValue.value`` calls it on the first read).  Empty when none is found or the MRO
        cannot be read (a class of code the run does not have is passed over)."""
        try:
            mro = self.r.mro(key)
        except Exception:  # noqa: BLE001  (no reader established)
            return []
        seen: set = set()
        out = []
        for entry in mro:
            node = None if entry[0] == "<external>" else self.m.reader.class_node(entry)
            if node is None:
                continue
            for name, reads in lazy_reads(node, attr).items():
                if name not in seen:
                    seen.add(name)
                    if reads:
                        out.append(f"{entry[1]}.{name}")
        return out

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
                if ("__getattr__" in crec["methods"] and not answers_held_names_only(crec)) \
                        or "__getattribute__" in crec["methods"]:
                    special = "__getattribute__" if "__getattribute__" in crec["methods"] else "__getattr__"
                    self._memo.setdefault("dynamic", f"`{entry[1]}` on the MRO of the placeholder defines "
                                                     f"`{special}`, which may answer it")
                names.update(crec["body_names"], crec["properties"], crec["methods"])
                for scope in crec["methods"].values():
                    names.update(scope["assigns"])
        self._memo["named"] = frozenset(names)
        self._memo["safe"] = None if "dynamic" in self._memo else self._memo["named"]
        return self._memo["safe"]

    def placeholder_dynamic(self) -> tuple[frozenset, str] | None:
        """When :meth:`placeholder_safe_attrs` is ``None`` (the placeholder may answer any
        attribute): ``(the attributes its classes define, why any other may be answered too)``,
        so that a read that fails unless that ``__getattr__`` answers it is listed as not
        judged, not passed; ``None`` otherwise."""
        if self.placeholder_safe_attrs() is not None:
            return None
        return self._memo["named"], self._memo["dynamic"]

    def placeholder_condition(self, key, attr: str):
        """``(formula, where)`` when ``attr`` of an instance of class ``key`` holds a placeholder
        under ``formula`` after ``__init__``; ``None`` when it never does or cannot be told.

        ``None`` leaves :attr:`pc_failure` set to ``(reason, detail, path)`` when the class's MRO
        or ``__init__`` chain could not be read (:data:`MISSING_CODE`: a base of ``key``, or a
        class whose ``__init__`` it calls, is in a module not found or beyond a relative import;
        or a name bound twice, a class that sets attributes dynamically), else ``None`` (it never
        holds a placeholder there)."""
        from ..resolve import NONE_KEY, Unresolved

        mkey = ("pc", key, attr)
        if tuple(key) == NONE_KEY:  # the value may be None: holds no placeholder, no class to read
            self.pc_failure = None
            return None
        if mkey not in self._memo:
            self._memo[mkey] = (None, None)  # a question asked while it is answered: no answer
            try:
                got = (self._placeholder_condition(key, attr), None)
            except Unresolved as e:
                # whatever stopped it (code the run lacks, a name bound twice, a dynamic class) is
                # said: a read it leaves is listed as not judged, never taken as "no placeholder"
                got = (None, (e.reason, f"{key[1]}.{attr}: {e.detail}", e.path))
            self._memo[mkey] = got
        result, self.pc_failure = self._memo[mkey]
        return result

    def _placeholder_condition(self, key, attr: str):
        """:meth:`placeholder_condition`; raises :class:`~pp_attr_lint.resolve.Unresolved` when the
        class's MRO or ``__init__`` chain cannot be read."""
        from ..resolve import Unresolved

        try:
            inits = self.r.executed_inits(key)
            if self.r.attribute_status(key, attr) != "present":
                return None
        except Unresolved:
            raise
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
        return (f_or(*conds), where)

    def is_layer_list(self, key, attr: str) -> bool:
        """Whether ``attr`` of class ``key`` (or a base) comes from a ``make_layers`` tuple."""
        return self.list_builder(key, attr) is not None

    def list_guard(self, key, attr: str) -> tuple:
        """The guard under which ``attr`` of class ``key`` (or of the first base that builds it)
        is assigned from ``make_layers`` (``TRUE`` when unconditional or not known)."""
        got = self.list_builder(key, attr)
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
        got = self.list_builder(key, attr)
        if got is None:
            return False
        entry, cond = got
        flags = atoms(cond, set())
        init = self.r.class_record(entry)["methods"].get("__init__") or {}
        if cond == TRUE or rank_atoms(cond) or not flags <= set(init.get("params", ())):
            return False
        sites = self.constructions(key)
        if not sites:
            return False
        params = list(init["params"])[1:]  # after `self`, positional ones first
        for consts in sites:
            if consts is None or not flags <= set(consts):
                return False  # `**kwargs`, or the flag left at its default
            if any(params.index(f) < consts.get("*", 0) for f in flags):
                return False  # a positional argument may be the flag too
            if evaluate(cond, {f: bool(consts[f]) for f in flags}):
                return False
        return True

    def receiver_classes(self, chain: tuple, cls: str | None, fline: int):
        """Classes ``chain`` may be in the function at ``fline`` of class ``cls`` of this file."""
        from ..index.summary import scopes_by_line

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
            from ..resolve import NONE_KEY, Unresolved

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
        """Modules of this file's package folder whose text may build a ``make_layers`` list
        (:data:`~.layer_builders.NEEDLES`)."""
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
                data = read_regular(path)
                if not any(n in data for n in LIST_NEEDLES):
                    continue
            except OSError:
                continue
            out.append(f"{package}.{name[:-3]}")
        return out

    def has_attribute(self, chain: tuple, attr: str, cls: str | None, fline: int) -> tuple:
        """Whether ``hasattr(<chain>, attr)`` holds in the function at ``fline`` of class ``cls``
        of this file: ``(True, what)`` when every class ``chain`` may be sets or declares ``attr``
        (:meth:`Resolver.attribute_status <pp_attr_lint.resolve.Resolver.attribute_status>`
        ``"present"``), ``(False, what)`` when none can have it (``"absent"``), ``(None, why)``
        when that cannot be told (the receiver's class is not known, or a candidate's bases or
        attribute writes cannot be read).  ``what``/``why`` is a clause for a message.  Nothing is
        raised."""
        from ..resolve import NONE_KEY

        text = ".".join(chain)
        owners = self.receiver_classes(tuple(chain), cls, fline)
        if not owners or NONE_KEY in owners:
            return None, f"the class of `{text}` is not known"
        status = {k: self._status(k, attr) for k in sorted(owners)}
        names = " | ".join(k[1] for k in status)
        if all(v == "present" for v in status.values()):
            return True, f"`{text}` is a `{names}`, which has `{attr}`"
        if all(v == "absent" for v in status.values()):
            return False, (f"`{text}` is a `{names}`, which has no attribute `{attr}` (no class on its MRO "
                           f"sets or declares it)")
        return None, f"whether `{text}` (a `{names}`) has `{attr}` cannot be told"

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
        from ..textio import display_path

        (module, _cls), line = entry_line
        path = self.ctx.project.path(module)
        return f"{display_path(path) if path else module}:{line}"

    def is_layer_builder(self, module: str, callee: str | None) -> bool:
        """Whether ``callee`` (a dotted name called in ``module``) builds a ``make_layers`` list
        (:func:`~.layer_builders.is_builder`; memoized per run)."""
        memo = self._memo.setdefault("builder", {})
        if (module, callee) not in memo:
            memo[(module, callee)] = is_builder(self.r, self.m.reader, module, callee)
        return memo[(module, callee)]

    def list_builder(self, key, attr: str):
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
            built = [(line, g) for c, a, line, g, callee in mf.get("lists", ())
                     if c == entry[1] and a == attr and self.is_layer_builder(entry[0], callee)]
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

    def constructions(self, key) -> list:
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

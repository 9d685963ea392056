"""The layer-id contract of a KV pool (or any object) that holds only its pipeline stage's layers:
an *accessor* indexes ``self.<buffer>[layer_id - self.start_layer]``, so it takes a global layer
id and reads the stage's own slot.  SGLang's ``MHATokenToKVPool._get_key_buffer`` /
``_get_value_buffer`` (``sglang/srt/mem_cache/memory_pool.py``, 0.5.23: ``local_layer_id =
layer_id - self.start_layer``) are such accessors, and ``get_key_buffer`` / ``get_value_buffer``
lead to them; the pools are built with ``start_layer=self.layer_info.start_layer``
(``sglang/srt/mem_cache/kv_cache_configurator.py``), so a constant layer id is out of the stage's
range on every stage that does not hold that layer.

* :func:`accessors`: the accessors a module defines (a rule's ``collect``);
* :func:`accessor_of`: which accessor a call runs for the classes its receiver may hold, and
  whether each class is built with a stage's ``start_layer`` (:func:`stage_built`);
* :func:`layer_id_constant`: a literal layer id;
* :func:`config_id_reads`: the reads ``self.layers[i].attr`` of a ``make_layers`` list with ``i``
  a global layer id of a config list or parsed from a checkpoint weight's name (PPA405).
"""

from __future__ import annotations

import ast
import re

from ..index.astutil import module_classes, ref_chain
from ..index.astutil import walk as fast_walk
from ..semantic.callsites import argument, name_uses, positional, rebound, self_attr
from ..semantic.constructions import NotEstablished, dotted
from ..semantic.flow import FlowWalker
from ..semantic.guards import (FALSE, RANK_ATOMS, RANK_STATES, STAGE_POSITION_NAMES, atoms, f_and,
                               rank_predicate, rank_words, satisfying)
from ..semantic.layer_builders import builder_sites
from ..semantic.loader import SKIP_CALL, decides_on_rank

# an accessor's index: the global layer id minus the stage's first layer
INDEX = re.compile(rb"-\s*self\.start_layer\b")
INDEX_TEXT = re.compile(INDEX.pattern.decode())


def may_hold_accessor(text: str) -> bool:
    """Whether a file's text can hold an accessor: it subtracts ``self.start_layer``."""
    return "self.start_layer" in text and INDEX_TEXT.search(text) is not None


def accessors(tree: ast.Module, lines) -> list:
    """The accessors of ``tree``: ``[[class, method, param, position, buffer, row, col, end_row,
    end_col, via, index]]``, one per method of a top-level class that indexes
    ``self.<buffer>[<param> - self.start_layer]`` with one of its parameters, or with a local whose
    one store is that difference (``via`` ``None``), or that passes a parameter unchanged to such a
    method of the same class (``via`` that method's name; the index's position and text,
    ``index``, are those it leads to).  A class whose every store of ``self.start_layer`` is a
    constant (never a stage's range) has none."""
    out = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        stores = [n.value for m in methods.values() for n in ast.walk(m)
                  if isinstance(n, ast.Assign) and any(self_attr(t, "self") == "start_layer" for t in n.targets)]
        if stores and all(isinstance(v, ast.Constant) for v in stores):
            continue
        found: dict[str, list] = {}
        for name, m in methods.items():
            params = positional(m)
            if not params:
                continue
            me = m.args.args[0].arg

            def local_of(e):
                """The parameter ``e`` (``p - self.start_layer``) makes stage-local, else ``None``."""
                if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and isinstance(e.left, ast.Name) \
                        and e.left.id in params and self_attr(e.right, me) == "start_layer" \
                        and not rebound(m, e.left.id):
                    return e.left.id
                return None

            # `local = p - self.start_layer`, the only store of `local`
            stores: dict[str, list] = {}
            for n in ast.walk(m):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    stores.setdefault(n.id, []).append(n)
            aliases = {}
            for n in ast.walk(m):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and len(stores.get(n.targets[0].id, ())) == 1 and local_of(n.value):
                    aliases[n.targets[0].id] = local_of(n.value)
            for n in ast.walk(m):
                if not (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)):
                    continue
                buf = self_attr(n.value, me)
                s = n.slice
                param = local_of(s) or (aliases.get(s.id) if isinstance(s, ast.Name) else None)
                if buf is None or param is None:
                    continue
                index = ast.unparse(n)
                if isinstance(s, ast.Name):
                    index += f"` with `{s.id} = {param} - self.start_layer"
                found[name] = [cls.name, name, param, params.index(param), buf, n.lineno,
                               lines.col(n.lineno, n.col_offset), n.end_lineno,
                               lines.col(n.end_lineno, n.end_col_offset), None, index]
                break
        changed = True
        while changed:  # a method that hands its parameter on unchanged to one of them
            changed = False
            for name, m in methods.items():
                if name in found or not positional(m):
                    continue
                params = positional(m)
                for n in ast.walk(m):
                    if not (isinstance(n, ast.Call) and self_attr(n.func, m.args.args[0].arg) in found):
                        continue
                    target = found[n.func.attr]
                    arg = argument(n, target[3], target[2])
                    if isinstance(arg, ast.Name) and arg.id in params and not rebound(m, arg.id):
                        found[name] = [cls.name, name, arg.id, params.index(arg.id), *target[4:9], n.func.attr,
                                       target[10]]
                        changed = True
                        break
        out += found.values()
    return out


def layer_id_constant(node) -> bool:
    """A literal layer id: a non-negative ``int`` constant."""
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0


def stage_built(receivers, key) -> str | None:
    """Where class ``key`` is built with a ``start_layer`` that is not a constant (the stage's
    range: ``MHATokenToKVPool(..., start_layer=self.start_layer)``), as a why line; ``None``
    when no construction in the tree shows one (a pool built without it starts at layer 0 on
    every stage, as SGLang's sub-pools of a hybrid pool are, and takes stage-local ids)."""
    from ..textio import display_path

    memo = ("stage-built", tuple(key))
    if memo in receivers.memo:
        return receivers.memo[memo]
    receivers.memo[memo] = None
    files = receivers.rf.tree_files(key[1].encode()) or ()
    position = None
    for _path, module, tree, _lines in files:
        if module == key[0]:
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name == key[1]:
                    init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
                                None)
                    if init is not None and "start_layer" in positional(init):
                        position = positional(init).index("start_layer")
    for path, module, tree, _lines in files:
        for node, parent, cls, fn, skip in name_uses(tree, key[1]):
            if skip or not (isinstance(parent, ast.Call) and parent.func is node):
                continue
            arg = argument(parent, position if position is not None else 1 << 30, "start_layer")
            if arg is None or arg is ... or isinstance(arg, ast.Constant):
                continue
            if not receivers.names(node, key, module, cls, fn):
                continue
            got = (f"`{key[1]}` is built with `start_layer={ast.unparse(arg)}` at "
                   f"{display_path(path)}:{node.lineno}: the stage's first layer")
            receivers.memo[memo] = got
            return got
    return None


def accessor_of(receivers, classes, m: str, own: dict, facts_of):
    """The accessor of the checked file that ``x.m(...)`` runs for receiver classes ``classes``
    (:meth:`Receivers.classes <pp_attr_lint.semantic.constructions.Receivers.classes>`), with the
    receiver's class names and where each is built with a stage's ``start_layer``, when every
    class (``None`` aside) runs a stage-local accessor for ``m``, is built so somewhere
    (:func:`stage_built`) and one of them is the file's (the first of the file's, in source
    order, where several are); else ``None``.  ``own`` maps
    ``(module, class, method)`` to the file's accessors, ``facts_of(module)`` gives a module's
    accessors (:func:`accessors`).  Raises
    :class:`~pp_attr_lint.semantic.constructions.NotEstablished` when an MRO cannot be read or
    the method found is abstract."""
    from ..resolve import EXTERNAL, NONE_KEY, Unresolved

    r = receivers.r
    hit, holders, stages, plain = None, [], [], []
    real = [k for k in classes if k != NONE_KEY]
    if not real:
        return None
    for k in sorted(real):
        if k[0] == EXTERNAL:
            return None
        got = _stage_local(receivers, k, m, own, facts_of)
        if got is None:
            plain.append(k[1])  # its `m` is not stage-local, or it is built with no stage range
            continue
        acc, built = got
        if acc is not None and (hit is None or (acc[5], acc[6]) < (hit[5], hit[6])):
            hit = acc  # the first in the file: the base class's, which its subclasses share
        holders.append(k[1])
        stages.append(built)
    if hit is None:
        return None
    if plain:
        # the receiver may be a class whose accessor is stage-local, or one whose is not: which one
        # the engine builds depends on the model's configuration (SGLang's SWAKVPool for a sliding-
        # window model, MHATokenToKVPool otherwise)
        raise NotEstablished("config-condition",
                             f"the receiver may be a `{'`, `'.join(holders)}`, whose `{m}` addresses this stage's "
                             f"layers by a global id, or a `{'`, `'.join(plain)}`, whose `{m}` does not: which "
                             f"one is built depends on the model's configuration")
    return hit, holders, stages


def _stage_local(receivers, k, m: str, own: dict, facts_of):
    """For :func:`accessor_of`: ``(the file's accessor or None, where k is built with a stage's
    range)`` when class ``k``'s ``m`` is a stage-local accessor and ``k`` is built with a
    stage range somewhere; ``None`` when it is not (then ``x.m(0)`` reads layer 0 of every
    stage).  Raises :class:`~pp_attr_lint.semantic.constructions.NotEstablished` as
    :func:`accessor_of`."""
    from ..resolve import EXTERNAL, Unresolved

    r = receivers.r
    entry = None
    try:
        for e in r.mro(k):
            if e[0] == EXTERNAL:
                continue
            rec = r.class_record(e)
            if m in rec["methods"] or m in rec["body_names"] or m in rec["properties"]:
                entry = e
                break
    except Unresolved as e:
        raise NotEstablished(e.reason, e.detail)
    if entry is None:
        return None
    acc = next((a for a in facts_of(entry[0]) or () if a[0] == entry[1] and a[1] == m), None)
    if acc is None:
        if is_abstract(receivers.rf, entry, m):
            raise NotEstablished("receiver-unresolved",
                                 f"the receiver is declared a `{entry[1]}`, whose `{m}` is abstract: which "
                                 f"subclass it holds at run time cannot be told")
        return None  # this class's `m` is not a stage-local accessor
    built = stage_built(receivers, k)
    if built is None:
        return None  # built with no stage range anywhere: its start_layer is 0 on every stage
    return own.get((entry[0], entry[1], m)), built


def is_abstract(rf, key, m: str) -> bool:
    """Whether method ``m`` of class ``key`` is abstract (``@abstractmethod``, or a body that only
    raises ``NotImplementedError`` / is ``...``), read from the tree through ``rf``
    (:meth:`RankFacts.tree_files <pp_attr_lint.semantic.model.RankFacts.tree_files>`); ``True``
    when its source cannot be read."""
    for _path, module, tree, _lines in rf.tree_files(b"def " + m.encode()) or ():
        if module != key[0]:
            continue
        for node in tree.body:
            if not (isinstance(node, ast.ClassDef) and node.name == key[1]):
                continue
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == m:
                    if any((dotted(d) or "").endswith("abstractmethod") for d in fn.decorator_list):
                        return True
                    return all(stub_statement(st) for st in fn.body)
            return False
    return True


def stub_statement(st) -> bool:
    """A statement of an abstract method's body: a docstring, ``...``, ``pass`` or
    ``raise NotImplementedError(...)``."""
    if isinstance(st, ast.Pass):
        return True
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
        return isinstance(st.value.value, str) or st.value.value is Ellipsis
    return isinstance(st, ast.Raise) and "NotImplementedError" in ast.unparse(st)


# -- reads indexed by a config's (or a checkpoint name's) global layer ids ----------------------
# PPA405: ``self.layers[i].attr`` where ``self.layers`` comes from vLLM's ``make_layers``
# (``vllm/model_executor/models/utils.py``: ``PPMissingLayer`` outside ``[start_layer, end_layer)``)
# and ``i`` walks a config list of global ids or is parsed from a checkpoint weight's name.

# calls that keep the elements of their (first) iterable
_PASS_THROUGH = frozenset({"sorted", "list", "set", "tuple", "reversed", "frozenset"})


# a config attribute that names layers (`config.engram_layer_ids`, `hf_config.moe_layers`), not a
# count (`num_hidden_layers`, `n_layer`) or a norm's epsilon (`layer_norm_eps`): what the prefilter
# and the loop sources agree on
CONFIG_LAYERS = re.compile(rb"config\.(?!num_|n_|layer_norm)[A-Za-z_]*layer")
LONG_CHAIN = re.compile(rb"self(?:\.\w+){2,}\[")  # `self.model.layers[`: a list of another object


def _config_list(node) -> str | None:
    """The text of ``node`` when it is an attribute of a model config naming layers
    (``config.engram_layer_ids``, ``self.config.moe_layer_ids``); ``None`` otherwise."""
    c = ref_chain(node)
    if c is None or len(c) < 2 or not CONFIG_LAYERS.search(f"config.{c[-1]}".encode()):
        return None
    if not any(p == "config" or p.endswith("_config") for p in c[:-1]):
        return None
    return ".".join(c)


def _bind(target, it, env: dict) -> None:
    """Record in ``env`` the loop names of ``target`` that take the config list's elements from
    iterable ``it`` (through ``zip``, ``enumerate`` and :data:`_PASS_THROUGH` calls)."""
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


# names of calls whose test decides on what a layer slot holds (a placeholder has none of a
# decoder layer's attributes, so a test of the slot's type or attributes tells the ranks apart)
_SLOT_TESTS = frozenset({"isinstance", "hasattr", "getattr"})
OWNS = "@owns"  # the prefix of the atom of a test of what this rank owns (:func:`owns_atom`)
HELPER = "@helper"  # the prefix of the atom of a call of a method that may test it (ConfigIdReads)


def owns_test(node) -> bool:
    """Whether test ``node`` decides on what this rank owns: it reads a name of
    :data:`~pp_attr_lint.semantic.guards.STAGE_WORDS` (``start_layer``, ``end_layer``,
    ``PPMissingLayer``, the pipeline group and its rank predicates) or of
    :data:`~pp_attr_lint.semantic.guards.STAGE_POSITION_NAMES` (``pp_rank``), a ``pp_missing...``
    name (:func:`~pp_attr_lint.semantic.loader.decides_on_rank`), vLLM's
    ``is_pp_missing_parameter`` (``vllm/model_executor/models/utils.py``), or calls ``isinstance``
    / ``hasattr`` / ``getattr``.  Reads names, not text: a comment or a string says nothing."""
    for sub in fast_walk(node):
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is not None and (decides_on_rank(name) or name == SKIP_CALL or name in STAGE_POSITION_NAMES
                                 or name in _SLOT_TESTS):
            return True
    return False


def owns_atom(node) -> tuple | None:
    """An ``atom_of`` for :class:`~pp_attr_lint.semantic.flow.FlowWalker`: the atom
    ``@owns <text>`` for a test of :func:`owns_test` that is not a rank predicate (those keep
    their ``@first`` / ``@last`` atoms), ``None`` for other tests (named as usual)."""
    if rank_predicate(node) is None and owns_test(node):
        return ("a", f"{OWNS} {ast.unparse(node)}")
    return None


def decides_on_owner(guard: tuple) -> bool:
    """Whether guard formula ``guard`` (of a walk with :func:`owns_atom`) tests what this rank
    owns: it names a rank atom or an ``@owns`` atom."""
    return any(a in RANK_ATOMS or a.startswith(OWNS) for a in atoms(guard))


# the places of :data:`~pp_attr_lint.semantic.guards.RANK_STATES` by name, in that order, and the
# layers of a ``make_layers`` list each lacks at pipeline_parallel_size >= 2 (vLLM's
# ``get_pp_indices``: the first stage starts at layer 0, the last ends at the last layer)
PLACES = ("first", "last", "middle")
_LACKS = {"first": "[end_layer, num_hidden_layers)", "last": "[0, start_layer)",
          "middle": "[0, start_layer) and [end_layer, num_hidden_layers)"}


def position_places(guard: tuple) -> tuple:
    """The places of :data:`PLACES` where ``guard`` (a formula whose rank atoms are position
    tests) can hold for some value of its other atoms, in that order; ``()`` for none (also for
    a formula of more than 16 free atoms: :func:`~pp_attr_lint.semantic.guards.satisfying`)."""
    return tuple(p for p, state in zip(PLACES, RANK_STATES) if satisfying(f_and(guard, state)) is not None)


def position_gap(places: tuple) -> str:
    """Why-line for a read reached only on ``places`` (of :func:`position_places`): which ranks
    the position test on the way leaves, and which layers of a ``make_layers`` list each lacks
    (``only the last pipeline-parallel rank (rank > 0) reaches the read; it lacks layers
    [0, start_layer)``)."""
    envs = {"first": {"@first": True, "@last": False}, "last": {"@first": False, "@last": True},
            "middle": {"@first": False, "@last": False}}
    if len(places) == len(PLACES):
        return ("the test of the pipeline position on the way lets every rank reach the read (for some value of "
                "its other tests), and every rank lacks some layers")
    head = "a test of the pipeline position, not of the layers a rank owns, is on the way: only "
    if len(places) == 1:
        return f"{head}{rank_words(envs[places[0]])} reaches the read; it lacks layers {_LACKS[places[0]]}"
    who = " and ".join(rank_words(envs[p]) for p in places)
    return f"{head}{who} reach the read; " + "; ".join(f"{rank_words(envs[p])} lacks layers {_LACKS[p]}"
                                                       for p in places)


class ConfigIdReads(FlowWalker):
    """Finds, in method ``fn`` of a class whose ``make_layers`` lists are ``lists``, the reads
    ``self.<list>[v].attr`` (or ``self.a.<list>[v].attr``) with ``v`` a loop name over a config list
    of layer ids, or in ``load_weights`` a name assigned a layer id parsed from a checkpoint name.
    A read is left alone where the flow walker's guard tests what this rank owns
    (:meth:`owner_guard`: an enclosing test, an earlier ``if ...: continue``, a comprehension
    filter, an ``and`` operand, a local flag assigned such a test), where a handler of
    ``AttributeError`` protects it, where it never runs, and in a lambda (it runs where it is
    called).  A read whose guard calls a method of ``self`` that ``methods`` (the class's own,
    name -> node) lacks or whose body names such a test (:meth:`test_atom`) cannot be told:
    its record says so.  A guard that tests only the pipeline position (``if not
    pp.is_last_rank: return``) is no test of what a rank owns: the read is kept with the places
    the guard leaves (:meth:`position`).  Call :meth:`walk`; ``out`` then holds ``(chain, name,
    id source, attr, row, col, end_row, end_col, fix, unread, places)`` per read (``fix``:
    :meth:`fix_at`; ``unread``: the text of such a call, else ``None``; ``places``: ``None``
    with no position test on the way, else :meth:`position`)."""

    def __init__(self, lists: frozenset, lines, fn, methods: dict | None = None):
        super().__init__(lines, fn, atom_of=owns_atom)
        self.atom_of = self.test_atom
        self.methods = methods or {}
        self.me = fn.args.args[0].arg if fn.args.args else None
        self.lists, self.out = lists, []
        self.parsed = "load_weights" in fn.name
        self.current = None  # the simple statement whose expressions are walked
        self.loop = None  # the `for` statement whose target is being bound
        self.body_guard: dict = {}  # id(for statement) -> the guard of its body
        self.owner_flags: set = set()  # locals assigned a test of what this rank owns, somewhere
        self.owns_flags: set = set()  # those of them assigned more than a position test, somewhere

    def loop_bindings(self, target, it) -> dict:
        """The names of ``target`` that take a config list's elements -> ``(source, loop)``
        (``loop`` the ``for`` statement, ``None`` in a comprehension); its other names -> ``None``
        (bound again: no longer an id)."""
        ids: dict = {}
        _bind(target, it, ids)
        loop = self.loop if self.loop is not None and self.loop.target is target else None
        out: dict = {n.id: None for n in fast_walk(target) if isinstance(n, ast.Name)}
        out.update({k: (v, loop) for k, v in ids.items()})
        return out

    def stmt(self, stmt, guard, guarded, protected, loops) -> None:
        simple = isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Delete,
                                   ast.Raise, ast.Assert))
        saved, self.current = (self.current, self.loop), (stmt if simple else None)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.body_guard[id(stmt)], self.loop = guard, stmt
        super().stmt(stmt, guard, guarded, protected, loops)
        self.current, self.loop = saved
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            loops.pop(name, None)  # bound again (`loops` is the block's own: its later statements see it)
            if self.parsed and _PARSED_ID.fullmatch(ast.unparse(stmt.value)):
                loops[name] = (ast.unparse(stmt.value), self.fn)

    def test_atom(self, node) -> tuple | None:
        """The ``atom_of`` of the walk: :func:`owns_atom`, else the atom ``@helper <text>`` for a
        call ``self.m(...)`` whose method the class does not define itself or whose body names a
        test of :func:`owns_test` (``self.is_local(layer_id)``: which ids it passes cannot be told
        here), else ``None``."""
        got = owns_atom(node)
        if got is not None or not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                                   and isinstance(node.func.value, ast.Name) and node.func.value.id == self.me):
            return got
        helper = self.methods.get(node.func.attr)
        if helper is None or owns_test(helper):
            return ("a", f"{HELPER} {ast.unparse(node)}")
        return None

    def assign(self, targets, value, guard) -> None:
        """Note the local names assigned a test of what this rank owns: the walker reads a flag
        set twice or under a test as an opaque atom (``owned@12``), which then still tells."""
        f = self.formula(value)
        if decides_on_owner(f):
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            self.owner_flags.update(names)
            if self.position(f) is None:
                self.owns_flags.update(names)

    def owner_guard(self, guard: tuple) -> bool:
        """Whether ``guard`` tests what this rank owns (:func:`decides_on_owner`), also through
        an opaque atom of a local flag that was assigned such a test."""
        return decides_on_owner(guard) or any(
            a.rsplit("@", 1)[0] in self.owner_flags for a in atoms(guard) if "@" in a[1:])

    def position(self, guard: tuple):
        """For a guard of :meth:`owner_guard`: ``None`` when it tests what this rank owns (an
        ``@owns`` atom, a flag once assigned one); else it tests only the pipeline position
        (``is_first_rank`` / ``is_last_rank``, negated or not), which does not say what a rank
        owns (the last rank lacks the early layers): the places it leaves
        (:func:`position_places`), or ``"?"`` when a flag assigned a position test is opaque
        (set twice or under a test: which ranks it leaves cannot be said)."""
        names = atoms(guard)
        if any(a.startswith(OWNS) for a in names):
            return None
        flags = {a.rsplit("@", 1)[0] for a in names if "@" in a[1:]} & self.owner_flags
        if flags & self.owns_flags:
            return None
        return "?" if flags else position_places(guard)

    def expr(self, node, guard, guarded, protected, loops) -> None:
        if not isinstance(node, ast.Lambda):  # a lambda's body runs where it is called, if at all
            super().expr(node, guard, guarded, protected, loops)

    def attribute(self, node, guard, guarded, protected, loops) -> None:
        if not loops or not isinstance(node.value, ast.Subscript):
            return
        sub = node.value
        base = ref_chain(sub.value)
        if not (base and base[0] == "self" and (len(base) > 2 or len(base) == 2 and base[1] in self.lists)
                and isinstance(sub.slice, ast.Name) and loops.get(sub.slice.id) is not None):
            return
        if protected or guard == FALSE:
            return
        places = self.position(guard) if self.owner_guard(guard) else None
        if places == () or (places is None and self.owner_guard(guard)):
            return  # on no rank, or behind a test of what this rank owns
        src, binder = loops[sub.slice.id]
        unread = next((a[len(HELPER) + 1:] for a in sorted(atoms(guard)) if a.startswith(HELPER)), None)
        self.out.append((list(base), sub.slice.id, src, node.attr, *self.pos(node), self.fix_at(binder, guard), unread,
                         places))

    def fix_at(self, loop, guard):
        """``[row, col, indent]`` of the first statement of ``loop``, the ``for`` loop that binds
        the read's id, where a skip of the ids this rank does not own changes nothing on a rank
        where the read works: the read is in a plain statement of the loop's own body, under the
        body's guard (evaluated whenever that statement runs), after plain statements only;
        ``None`` otherwise."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or loop.orelse or self.current not in loop.body \
                or guard != self.body_guard.get(id(loop)):
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


def config_id_reads(tree, lines) -> list:
    """``[[class, method, def line, list chain, name, id source, attr, line, col, end_line,
    end_col, fix, unread, places, builder]]`` (``fix``: :meth:`ConfigIdReads.fix_at`; ``unread``:
    the call of a helper on the way that may test the rank's range; ``places``: what a test of the
    pipeline position on the way leaves, :meth:`ConfigIdReads.position`; ``builder``: the callee
    that assigns a list of ``self``, which must build a ``make_layers`` list:
    :func:`~pp_attr_lint.semantic.layer_builders.is_builder`); a chain of more than two names is a
    list of another object, told at check time."""
    out = []

    def source(node):
        return lines.span(node)

    for cls in module_classes(tree):
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        lists: dict = {}  # attr -> the callee that would build it (asked at check time)
        for m in methods:
            if "end_layer" in source(m):
                for _st, attr, callee in builder_sites(m):
                    lists.setdefault(attr, callee)
        for m in methods:
            body = source(m)
            if not any(f"self.{a}[" in body for a in lists) and not LONG_CHAIN.search(body.encode()):
                continue
            if "config" not in body and not ("load_weights" in m.name and ".split(" in body):
                continue
            r = ConfigIdReads(frozenset(lists), lines, m, {f.name: f for f in methods})
            r.walk()
            out += [[cls.name, m.name, m.lineno, *rec, lists.get(rec[0][1]) if len(rec[0]) == 2 else None]
                    for rec in r.out]
    return out

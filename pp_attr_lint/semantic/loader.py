"""The weight loader: which checkpoint-name lookups in this rank's parameters a model's
``load_weights`` makes without a skip of the names another pipeline-parallel rank owns.

vLLM's ``make_layers`` (``vllm/model_executor/models/utils.py``) builds only this rank's slice of
the layers (``PPMissingLayer`` elsewhere), so ``dict(self.named_parameters())`` holds only this
rank's weights while ``load_weights`` reads every weight of the checkpoint; vLLM's models skip the
others with ``is_pp_missing_parameter(name, self)`` (same module) or a membership test
``name in params_dict``.  :func:`parameter_lookups` reads one file: the classes that build or
hold such a slice, and each ``params_dict[key]`` reached from their ``load_weights`` (nested
functions and helpers handed the dict included) that no skip covers on every path.  A function
that decides on the rank in a way not read here (a name of :data:`.guards.STAGE_WORDS`,
``pp_missing...``) is left alone.
"""

from __future__ import annotations

import ast
import re

from ..index.astutil import child_nodes, dotted_name, ref_chain, statements_on_lines
from ..index.astutil import walk as fast_walk
from .guards import STAGE_WORDS, layer_range_skip
from .layer_builders import list_site, named_builder

# calls and names that skip, or decide on, what another rank owns: a lookup in a function that
# uses one of them in a way not read here is left alone (precision over recall)
SKIP_CALL = "is_pp_missing_parameter"
MAX_CALL_DEPTH = 3  # callers followed from a helper back towards load_weights


def decides_on_rank(name: str) -> bool:
    """A name that decides on what this rank owns (``self.start_layer``, ``pp_missing_layer_names``)."""
    return name in STAGE_WORDS or (name != SKIP_CALL and ("pp_missing" in name or "missing_layer" in name))


def _scopes():
    return (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_nodes(fn, scopes: list | None = None):
    """The nodes of ``fn``'s own body: nested functions, lambdas and classes left out (and the
    context and operator leaves, as :func:`fast_walk`); ``scopes`` gets those left out, in the
    order met."""
    _SCOPES = _scopes()
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            if scopes is not None:
                scopes.append(node)
            continue
        yield node
        stack.extend(child_nodes(node))


def _tests_around(fn, line: int) -> dict[str, bool]:
    """``{test text: value}`` of the ``if``s of ``fn``'s own body whose branch holds ``line``
    (``True`` in the body, ``False`` in the ``else:``): what must hold for a call there to run."""
    out = {}
    for n in sorted((n for n in _own_nodes(fn) if isinstance(n, ast.If)), key=lambda n: n.lineno):
        if n.body[0].lineno <= line <= n.body[-1].end_lineno:
            out[ast.unparse(n.test)] = True
        elif n.orelse and n.orelse[0].lineno <= line <= n.orelse[-1].end_lineno:
            test = n.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED:
                # `else:` of `x != "a"` reads as `x == "a"`
                out[ast.unparse(ast.Compare(test.left, [_NEGATED[type(test.ops[0])]()], test.comparators))] = True
            else:
                out[ast.unparse(test)] = False
    return out


_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
            ast.IsNot: ast.Is}


def _substring_picks(test) -> list:
    """``[(literal, name)]`` when ``test`` holds only for a name that contains one of the string
    literals: ``"x" in name``, an ``or`` of such tests (or of ``and`` tests), or an ``and`` with one
    among its operands; ``[]`` otherwise."""
    def one(t):
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.In) \
                and isinstance(t.left, ast.Constant) and isinstance(t.left.value, str) \
                and isinstance(t.comparators[0], ast.Name):
            return [(t.left.value, t.comparators[0].id)]
        return []

    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [_substring_picks(v) for v in test.values]
        return [p for ps in parts for p in ps] if all(parts) else []
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((got for v in test.values for got in [_substring_picks(v)] if got), [])
    return one(test)


def _names_own(literal: str, own_attrs) -> bool:
    """Whether a checkpoint-name literal names a module the class assigns itself: its first dotted
    part (``"tts"`` of ``"tts.model.layers"``) is part of the name of one of ``own_attrs``."""
    head = literal.strip(".").split(".")[0]
    return bool(head) and any(head in attr for attr in own_attrs)


def _skips_item(body) -> bool:
    """A block that only skips the item: ``continue``, or a bare ``return`` (a helper per name)."""
    return len(body) == 1 and (isinstance(body[0], ast.Continue)
                               or (isinstance(body[0], ast.Return) and body[0].value is None))


def _exits(block) -> bool:
    """Whether ``block`` ends by leaving the item or the function (``continue``, ``break``,
    ``return``, ``raise``): what follows its statement runs only after the other branch."""
    return bool(block) and isinstance(block[-1], (ast.Continue, ast.Break, ast.Return, ast.Raise))


def _branch_apart(node: ast.If, last: int) -> list:
    """The :attr:`LoaderFunction.apart` entries of ``if`` statement ``node`` (in a function whose
    last line is ``last``): a test in one branch runs on no path to the lines after the
    statement that takes the other branch, unless that branch leaves (:func:`_exits`); a missing
    ``else:`` is a branch that does not leave.  A branch that starts on the header's line is
    skipped (its lines cannot be told from the header's test)."""
    out = []
    for block, other in ((node.body, node.orelse), (node.orelse, node.body)):
        if block and block[0].lineno > node.lineno and not _exits(other) and node.end_lineno < last:
            out.append((block[0].lineno, block[-1].end_lineno, node.end_lineno + 1, last))
    return out


def _literal(node) -> bool:
    """A constant, or a list, tuple or set literal of constants."""
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) for e in node.elts)


def _params_dict_source(node) -> str | None:
    """Whose parameters ``node`` collects: ``""`` for ``dict(self.named_parameters(...))`` (also
    ``dict(self.named_parameters(remove_duplicate=False))``), ``"model"`` for
    ``dict(self.model.named_parameters())`` (a submodule's); ``None`` for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Call)
            and isinstance(node.args[0].func, ast.Attribute) and node.args[0].func.attr == "named_parameters"):
        return None
    owner = node.args[0].func.value
    if isinstance(owner, ast.Name) and owner.id == "self":
        return ""
    if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
        return owner.attr
    return None


class LoaderFunction:
    """What the loader analysis reads of one function ``fn`` (``qualname`` for messages,
    ``parent`` the enclosing function's record for a nested one): its parameters, the names it
    derives from others, its guards and lookups, and the calls it makes.  ``guarded(names, line)``
    says whether a skip covers a key at a line."""

    def __init__(self, fn, qualname: str, parent: "LoaderFunction | None"):
        self.node, self.qualname, self.parent = fn, qualname, parent
        args = fn.args
        self.params = [a.arg for a in args.posonlyargs + args.args]
        self.dicts: set[str] = set()  # names of this rank's parameter dicts
        self.dict_of: dict[str, str] = {}  # dict name -> the submodule whose parameters it holds ("": self)
        self.derived: dict[str, set[str]] = {}  # name -> the names its values were computed from
        # (line, name, container names): a skip or membership test on name; a membership test
        # also keeps the names of what it tests against (`weight_name in name` tests a substring
        # of the key, not the key against the parameters)
        self.guards: list[tuple[int, str, frozenset]] = []
        # decides on ranks in a way not read here: (the name, its first line), else None
        self.opaque: tuple[str, int] | None = None
        self.lookups: list = []  # Subscript nodes (dict name, key name)
        # (Call node, key names) of each `self.get_submodule(<key>)`: another rank's layer is a
        # placeholder without the submodule, so a checkpoint name resolved there raises
        self.submodules: list[tuple] = []
        # (callee text, line) of a call that hands names to another loader (`self.llm.load_weights(...)`)
        self.delegates: tuple | None = None
        # (first, last line of an `if` body, [(literal, name)]): the body runs only for names that
        # hold one of the literals (`if "classification_head" in name:`)
        self.picks: list[tuple] = []
        # the tests that must hold for this function to run from `load_weights` (text -> value)
        self.conditions: dict[str, bool] = {} if parent is None else parent.conditions
        self.calls: list = []  # Call nodes of this function's own body
        self.catches: list[tuple[int, int]] = []  # line ranges of try bodies that catch KeyError
        # names computed from `self.quant_config` -> the (method, line) it was called for there
        self.quant_derived: dict[str, set] = {}
        # (first, last line of a block, first, last line of a block no test in it covers): the
        # body of an `if` and its `else:`, and a loop's body and its `else:` (run when no
        # iteration broke out: a test in the body that skips to the next item never ran for it)
        self.apart: list[tuple[int, int, int, int]] = []
        # (line, name, conditions): a name computed by a call handed a parameter dict (see
        # checked_by_callee), or skipped by a range skip that needs a `hasattr` (see
        # _range_skip); a guard only where each condition (a callee id) is trusted
        self.callee_guards: list[tuple[int, str, frozenset]] = []
        # the first line of the outermost function this one lies in (its scope for a receiver)
        self.top_line = fn.lineno if parent is None else parent.top_line
        read: set[int] = set()  # ids of the nodes of range skips read here (they decide nothing unread)
        skips: list = []  # (line, index name, conditions) of each range skip
        scopes: list = []
        self.assigns: list = []  # the Assign and NamedExpr nodes of the own body, in walk order
        joined: set[int] = set()  # ids of membership tests that decide only with another operand
        for node in _own_nodes(fn, scopes):
            if isinstance(node, ast.BoolOp):  # met before the tests in it (the walk is top-down)
                _joined_tests(node, False, frozenset(), joined)
            if isinstance(node, ast.If):
                lits = _substring_picks(node.test)
                if lits:
                    self.picks.append((node.body[0].lineno, node.body[-1].end_lineno, lits))
            if isinstance(node, ast.If) and _skips_item(node.body):  # met before its test's nodes
                got = self._range_skip(node.test)
                if got is not None:
                    skips.append((node.lineno, *got))
                    read.update(id(n) for n in fast_walk(node.test))
            if isinstance(node, (ast.Assign, ast.NamedExpr)):
                self.assigns.append(node)
            if isinstance(node, ast.Assign) and (source := _params_dict_source(node.value)) is not None:
                named = [t.id for t in node.targets if isinstance(t, ast.Name)]
                self.dicts.update(named)
                self.dict_of.update((n, source) for n in named)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) \
                    and getattr(node, "value", None) is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                used, quant = _names_in(node.value)
                names = [n.id for t in targets for n in fast_walk(t) if isinstance(n, ast.Name)]
                for n in names:
                    self.derived.setdefault(n, set()).update(used)
                if quant is not None and isinstance(node, (ast.Assign, ast.NamedExpr)):
                    for n in names:
                        self.quant_derived.setdefault(n, set()).update(quant)
            if isinstance(node, (ast.For, ast.comprehension)):
                used = {n.id for n in fast_walk(node.iter) if isinstance(n, ast.Name)}
                for n in fast_walk(node.target):
                    if isinstance(n, ast.Name):
                        self.derived.setdefault(n.id, set()).update(used)
            if id(node) in read:
                continue
            if isinstance(node, ast.Name) and decides_on_rank(node.id):
                self._decides(node.id, node.lineno)
            elif isinstance(node, ast.Attribute) and decides_on_rank(node.attr):
                self._decides(node.attr, node.lineno)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
                if isinstance(node.func, ast.Attribute) and node.func.attr == "load_weights" \
                        and self.delegates is None:
                    self.delegates = (ast.unparse(node.func), node.lineno)
                if isinstance(node.func, ast.Attribute) and node.func.attr == "get_submodule" and node.args \
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                    keys = frozenset(n.id for n in fast_walk(node.args[0]) if isinstance(n, ast.Name) and n.id != "self")
                    if keys:
                        self.submodules.append((node, keys))
                if isinstance(node.func, ast.Name) and node.func.id == SKIP_CALL and node.args \
                        and isinstance(node.args[0], ast.Name):
                    self.guards.append((node.lineno, node.args[0].id, frozenset()))
                if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args \
                        and isinstance(node.args[0], ast.Name):
                    self.guards.append((node.lineno, node.args[0].id, frozenset()))  # params_dict.get(name)
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                    and not all(_literal(c) for c in node.comparators) and id(node) not in joined:
                # `name in params_dict`, `name.rsplit(".", 1)[0] not in present_prefixes`; a test
                # against literals (`weight_name in ["w1", "v1"]`) picks a mapping, it tests no key
                within = frozenset(n.id for c in node.comparators for n in fast_walk(c) if isinstance(n, ast.Name))
                self.guards.extend((node.lineno, n.id, within) for n in fast_walk(node.left) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
                if node.orelse:
                    self.apart.append((node.body[0].lineno, node.body[-1].end_lineno,
                                       node.orelse[0].lineno, node.orelse[-1].end_lineno))
                if isinstance(node, ast.If):
                    self.apart.extend(_branch_apart(node, fn.end_lineno))
            elif isinstance(node, ast.Try):
                if any(_catches_key_error(h) for h in node.handlers):
                    self.catches.append((node.body[0].lineno, node.body[-1].end_lineno))
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Name):
                self.lookups.append(node)

        # the functions defined in the own body (not in a nested class or lambda)
        self.defs = [n for n in scopes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for line, index, conditions in skips:  # a skip of the names the index was computed from
            names = self.roots(index) - {"self", index}
            for n in names:
                if conditions:
                    self.callee_guards.append((line, n, conditions))
                else:
                    self.guards.append((line, n, frozenset()))

    def _range_skip(self, test) -> tuple | None:
        """``(index name, conditions)`` of :func:`~.guards.layer_range_skip` for the test of an
        ``if`` that skips the item; ``conditions`` a frozenset of callee ids ``("hasattr",
        receiver, (attribute, first line of the outermost function))``, which ``check`` decides
        (whether the receiver's class has the attribute).  ``None`` when it is no range skip, or
        needs a ``hasattr`` of a receiver not reached from ``self`` in a method."""
        got = layer_range_skip(test)
        if got is None:
            return None
        index, conds = got
        method = self.parent is not None or self.params[:1] == ["self"]
        if conds and not (method and all(c[0].split(".")[0] == "self" for c in conds)):
            return None
        return index, frozenset(("hasattr", c[0], (c[1], self.top_line)) for c in conds)

    def _decides(self, name: str, line: int) -> None:
        if self.opaque is None or line < self.opaque[1]:
            self.opaque = (name, line)

    def checked_by_callee(self, dicts: set[str]) -> None:
        """Record the names computed by a call that is handed a parameter dict
        (``name = maybe_remap_kv_scale_name(name, params_dict)``) in ``callee_guards``, with the
        call's :func:`callee_id`: such a call tests the name against the dict only when the
        helper's body tests every key it returns (``semantic.key_helpers``), which ``check``
        reads; :meth:`guarded` counts them only for the helpers it is told to trust."""
        for node in self.assigns:
            if node.value is None:
                continue
            calls = [c for c in fast_walk(node.value) if hands_dict(c, dicts)]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in fast_walk(t) if isinstance(n, ast.Name)]
            for c in calls:
                cid = frozenset([callee_id(c, dicts)])
                self.callee_guards.extend((node.lineno, n, cid) for n in names)

    def all_dicts(self) -> set[str]:
        """This function's parameter dicts and those of the functions around it (closures)."""
        out, f = set(self.dicts), self.parent
        while f is not None:
            out |= f.dicts - set(self.params)
            f = f.parent
        return out

    def dict_source(self, name: str) -> str:
        """The submodule whose parameters dict ``name`` (of this function or one around it) holds:
        ``""`` for the class's own."""
        f = self
        while f is not None:
            if name in f.dict_of:
                return f.dict_of[name]
            f = f.parent
        return ""

    def roots(self, name: str) -> set[str]:
        """``name`` and every name its values were computed from in this function."""
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.derived.get(n, ()))
        return seen

    def guarded(self, names: set[str], line: int, trusted: frozenset = frozenset()) -> bool:
        """Whether a skip or membership test on the key made of ``names`` (or a name they were
        computed from) comes before ``line`` in this function, on a path to it (not in a block
        whose ``else:`` holds the line), or a ``try`` around it catches ``KeyError``; a name
        computed by a call of a helper whose :func:`callee_id` is in ``trusted`` counts as tested."""
        names = set().union(*(self.roots(n) for n in names))
        strings = names - self.all_dicts()  # the key and the strings it was made from
        return any(gl <= line and g in names and not (within & strings) and self._reaches(gl, line)
                   for gl, g, within in self.guards) or any(a <= line <= b for a, b in self.catches) or any(
            gl <= line and g in names and needs <= trusted and self._reaches(gl, line)
            for gl, g, needs in self.callee_guards)

    def _reaches(self, guard: int, line: int) -> bool:
        """Whether a test at line ``guard`` can have run on the way to ``line``: not when it lies
        in a block and ``line`` in that block's ``else:``."""
        return not any(a <= guard <= b and c <= line <= d for a, b, c, d in self.apart)


def hands_dict(node, dicts: set[str]) -> bool:
    """Whether ``node`` is a call that hands one of the parameter dicts ``dicts`` as a
    positional argument (``maybe_remap_kv_scale_name(name, params_dict)``)."""
    return isinstance(node, ast.Call) and any(isinstance(a, ast.Name) and a.id in dicts for a in node.args)


def callee_id(call: ast.Call, dicts: set[str]) -> tuple:
    """``(kind, name, positions)`` of a call handed a parameter dict of ``dicts``: ``kind`` is
    ``"self"`` for a method of ``self`` (``name`` the method), ``"name"`` for a plain or dotted
    name (``maybe_remap_kv_scale_name``, ``weight_utils.remap``), ``"other"`` for any other
    callee or a call that unpacks ``*args`` (``name`` its text: not resolved); ``positions`` the
    positional arguments that are a dict."""
    positions = tuple(k for k, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in dicts)
    chain = None if any(isinstance(a, ast.Starred) for a in call.args) else ref_chain(call.func)
    if chain is not None and len(chain) == 2 and chain[0] == "self":
        return ("self", chain[1], positions)
    if chain is not None and chain[0] != "self":
        return ("name", ".".join(chain), positions)
    return ("other", ast.unparse(call.func)[:80], positions)


# the most distinct helpers of one loader whose sets _covering_sets tries (2**n walks a lookup)
MAX_HELPERS = 4


def _covering_sets(cids: list, covered) -> list:
    """The smallest subsets ``s`` of ``cids`` (by inclusion) with ``covered(frozenset(s))``, each
    sorted; with more than :data:`MAX_HELPERS` only the whole set is tried."""
    import itertools

    sizes = range(1, len(cids) + 1) if len(cids) <= MAX_HELPERS else [len(cids)]
    out: list = []
    for n in sizes:
        for s in itertools.combinations(cids, n):
            if not any(set(o) <= set(s) for o in out) and covered(frozenset(s)):
                out.append(s)
    return out


def _joined_tests(node, negated: bool, ops: frozenset, out: set) -> None:
    """Add to ``out`` the ids of the membership tests in boolean expression ``node`` that do not
    decide on their own whether the key is a parameter: a test of absence joined with ``and``
    (``if name.endswith(".bias") and name not in params_dict: continue`` skips only the bias
    names: every other name goes on to the lookup) or a test of presence joined with ``or``
    (``if name in params_dict or extra:`` enters without the name).  ``not`` is read through
    (De Morgan): ``negated`` says an odd number of ``not`` lie above, ``ops`` the connectives
    ("and", "or") met on the way down, as they act after the negation."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _joined_tests(node.operand, not negated, ops, out)
    elif isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) != negated else "or"
        for value in node.values:
            _joined_tests(value, negated, ops | {op}, out)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        absent = isinstance(node.ops[0], ast.NotIn) != negated
        if ("and" if absent else "or") in ops:
            out.add(id(node))


def _names_in(expr) -> tuple[set[str], bool]:
    """The names ``expr`` reads, and, when it reads an attribute ``quant_config``, the methods it
    calls on it with their lines (``{("get_cache_scale", 12)}``; empty for a plain read), else
    ``None`` (one walk)."""
    names, quant = set(), None
    for n in fast_walk(expr):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute) and n.attr == "quant_config":
            quant = quant or set()
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "quant_config":
            quant = (quant or set()) | {(n.func.attr, n.lineno)}
    return names, quant


def _catches_key_error(handler) -> bool:
    """Whether ``except`` clause ``handler`` catches a ``KeyError`` and goes on: not one whose
    body ends by raising (``except KeyError: log(...); raise``)."""
    if handler.body and isinstance(handler.body[-1], ast.Raise):
        return False
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in ("KeyError", "LookupError", "Exception", "BaseException")
               for t in types)


def _list_callee(target, value) -> str | None:
    """The callee of ``target = value`` when it may assign a make_layers list: a tuple target of a
    call named ``make_layers``, or :func:`~.layer_builders.list_site`'s shape."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Call) and named_builder(dotted_name(value.func)):
        return dotted_name(value.func)
    got = list_site(target, value)
    return None if got is None else got[1]


def parameter_lookups(tree, lines) -> dict:
    """``{"layered": {class name: [callees]}, "lookups": [...]}``: the classes that may build or
    hold a make_layers list of this module, each with the callees of the calls that would build it
    (whether one does is :func:`~.layer_builders.is_builder`'s to say, at check time); each lookup
    ``[class, *record]`` (:func:`uncovered_lookups`) is one ``params_dict[key]`` of a class's
    ``load_weights`` (or a nested function or a helper it calls) that no skip covers on every path
    from ``load_weights``: of any class, since one that builds no list here may hold a model of
    another module that does (``check`` asks)."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    module_funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def text(c) -> str:
        return lines.span(c)

    texts = {c.name: text(c) for c in classes}
    layered: dict = {}
    for c in classes:
        # `self.start_layer, self.end_layer, self.layers = make_layers(...)`: this rank's slice (a
        # list assigned alone, as SGLang's `self.layers = make_layers(...)` without a PP rank, holds
        # every layer); only the statements whose lines name a range attribute are walked
        callees = set()
        for word in ("make_layers", "end_layer"):
            if word in texts[c.name]:
                callees |= {callee for n in nodes_naming(c, lines, word) if isinstance(n, ast.Assign)
                            for t in n.targets for callee in [_list_callee(t, n.value)] if callee is not None}
        if callees:
            layered[c.name] = callees
    changed = True
    while changed:  # a wrapper that constructs a layered class of this module holds its layers
        changed = False
        for c in classes:  # a class between (OPTModel builds OPTDecoder) holds them too
            called = [name for name in layered if name != c.name and name + "(" in texts[c.name]]
            got = set().union(*(layered[n.func.id] for name in called for n in nodes_naming(c, lines, name + "(")
                                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in layered))
            if not got <= layered.get(c.name, set()):
                layered[c.name] = layered.get(c.name, set()) | got
                changed = True
    out = []
    for c in classes:  # a class of no list here may hold one built in another module (`check` asks)
        if c.name not in layered and not _may_look_up(texts[c.name]):
            continue
        methods = {m.name: m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        lw = methods.get("load_weights")
        if lw is None:
            continue
        own = set(_SELF_STORE.findall(texts[c.name]))  # the attributes the class assigns itself
        for rec in uncovered_lookups(lw, methods, module_funcs, lines, own):
            out.append([c.name, *rec])
    return {"layered": {c: sorted(v) for c, v in sorted(layered.items())}, "lookups": out}


def nodes_naming(cls, lines, word: str):
    """The nodes of the statements of class ``cls`` (at any depth) whose own lines hold ``word``:
    a node whose text holds it lies in such a statement, so no other statement is walked."""
    blocks = ("body", "orelse", "finalbody", "handlers", "cases")
    marked = [i for i in range(cls.lineno, cls.end_lineno + 1) if word in lines.lines[i - 1]]
    for node in statements_on_lines(cls.body, marked):
        if not any(getattr(node, f, None) for f in blocks):
            yield from fast_walk(node)  # a simple statement: all of it
            continue
        yield node  # a compound one: its own expressions (its blocks' statements come on their own)
        for f in node._fields:
            if f not in blocks:
                v = getattr(node, f)
                for x in v if isinstance(v, list) else [v]:
                    if isinstance(x, ast.AST):
                        yield from fast_walk(x)
        for case in getattr(node, "cases", ()):
            yield from (n for x in (case.pattern, case.guard) if x is not None for n in fast_walk(x))


def _callee_def(call, methods, module_funcs) -> tuple:
    """``(definition, offset)``: the definition ``call`` runs when it is ``self.m(...)`` of a
    method of ``methods`` (offset 1: ``self`` takes the first parameter) or ``f(...)`` of a module
    function of ``module_funcs`` (offset 0); ``(None, 0)`` otherwise."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
            and func.attr in methods:
        return methods[func.attr], 1
    if isinstance(func, ast.Name) and func.id in module_funcs:
        return module_funcs[func.id], 0
    return None, 0


_DICT_NAME = re.compile(r"(\w+)\s*=\s*dict\(\s*self\.(?:\w+\.)?named_parameters\(")


def _may_look_up(text: str) -> bool:
    """Whether class text ``text`` may index a parameter dict it builds (``params_dict[``) or
    resolve a name to a submodule (``get_submodule(``): a text test, before any walk."""
    return "get_submodule(" in text or any(name + "[" in text for name in set(_DICT_NAME.findall(text)))


_SELF_STORE = re.compile(r"\bself\.(\w+)\s*(?::[^=\n]*)?=[^=]")


def uncovered_lookups(lw, methods, module_funcs, lines, own_attrs=frozenset()) -> list:
    """The uncovered lookups reached from ``load_weights`` ``lw`` (its class's ``methods`` by
    name, the file's ``module_funcs`` by name, ``lines`` the file's text): ``[line, col, end_line,
    end_col, dict name, key name, function qualname, quant, quant calls, opaque, via, kind,
    masked, conditions]`` for each ``params_dict[key]`` (``kind`` ``"lookup"``) or
    ``self.get_submodule(<key>)`` (``"submodule"``, the call's text for the dict name) of
    ``lw``, its nested functions or a helper it hands a parameter dict, that no skip covers on
    every path (callers followed up to :data:`MAX_CALL_DEPTH`); ``quant`` when the key is computed
    from ``self.quant_config``, ``quant calls`` the ``[method, line]`` it calls on it for that
    (``get_cache_scale``); ``opaque`` the ``[name, line]`` where the function decides on the rank
    in a way not read here (``self.start_layer``), whose lookups are then not judged, else
    ``None``; ``via`` the smallest sets of helpers handed a parameter dict (``[kind, name,
    positions, first line]``, :func:`callee_id`) that would cover the lookup if each tested the
    keys it returns (``check`` reads their bodies), empty when none would; ``masked`` the line of
    an earlier uncovered ``get_submodule`` of a name the key was computed from (it fails first),
    else ``None``; ``conditions`` the ``[test text, value]`` pairs that must hold for a method
    reached through calls to run (``if quant_config_name == "mxfp4":``); ``picked`` the string
    literals an ``if`` around the lookup requires the key to hold (``"classification_head" in
    name``), each part of the name of an attribute of ``own_attrs`` (the class's own modules, which
    hold no layer); ``delegates`` the ``[callee, line]`` of a call in ``load_weights`` that hands
    names to another loader (``self.llm.load_weights(...)``), else ``None``; ``of`` the attribute
    whose parameters the dict holds (``"model"`` for ``dict(self.model.named_parameters())``),
    ``None`` for the class's own.  Nothing is raised."""
    out = []
    root = LoaderFunction(lw, "load_weights", None)
    funcs = [root]
    # nested functions (any depth) with their enclosing function
    todo = [root]
    while todo:
        f = todo.pop()
        for node in f.defs:  # the functions defined in f's own body
            g = LoaderFunction(node, f"{f.qualname}.<locals>.{node.name}", f)
            funcs.append(g)
            todo.append(g)
    # helpers given a parameter dict: self.helper(params_dict, ...) and module_helper(params_dict, ...)
    helpers: dict[str, LoaderFunction] = {}
    for f in list(funcs):
        dicts = f.all_dicts()
        for call in f.calls:
            target, skip_self = _callee_def(call, methods, module_funcs)
            if target is None or (skip_self and target.name == "load_weights") or target.name in helpers:
                continue
            passed = [k for k, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in dicts]
            if not passed:
                continue
            h = LoaderFunction(target, target.name, None)
            h.dicts |= {h.params[k + skip_self] for k in passed if k + skip_self < len(h.params)}
            helpers[target.name] = h
            funcs.append(h)

    # the methods `load_weights` reaches through `self.m(...)` (at most MAX_CALL_DEPTH calls
    # below it) that build a parameter dict of their own, with the methods on the way: a loader
    # split into methods looks names up there (SGLang 0.5.23 gpt_oss.py: `load_weights` ->
    # `_load_weights_mxfp4` -> `_load_mxfp4_experts_weights`)
    # name -> (definition, the caller's record or name, the call's line); a record is built only
    # for the methods kept (a dict of their own, or on the way to one)
    reached: dict[str, tuple] = {}
    frontier = [(f, f.calls) for f in funcs]
    for _depth in range(MAX_CALL_DEPTH):
        nxt = []
        for caller, calls in frontier:
            for call in calls:
                target, _skip_self = _callee_def(call, methods, {})
                if target is None or target.name == "load_weights" or target.name in helpers \
                        or target.name in reached:
                    continue
                reached[target.name] = (target, caller, call.lineno)
                nxt.append((target.name, [n for n in _own_nodes(target) if isinstance(n, ast.Call)]))
        frontier = nxt
    records: dict[str, LoaderFunction] = {}
    kept: set[str] = set()
    for name in sorted(reached):
        node = reached[name][0]
        if "named_parameters(" not in lines.span(node):
            continue
        g = LoaderFunction(node, name, None)
        if not g.dicts:
            continue
        records[name] = g
        at = name
        while at is not None and at not in kept:  # with the methods on the way to it
            kept.add(at)
            caller = reached[at][1]
            at = caller if isinstance(caller, str) else None
    conds: dict[str, dict] = {}

    def conditions_of(name: str) -> dict:
        """The tests every call on the way from ``load_weights`` to method ``name`` runs under."""
        if name not in conds:
            _node, caller, line = reached[name]
            base = conditions_of(caller) if isinstance(caller, str) else caller.conditions
            caller_node = reached[caller][0] if isinstance(caller, str) else caller.node
            conds[name] = {**base, **_tests_around(caller_node, line)}
        return conds[name]

    for name in sorted(kept):
        if name not in records:
            records[name] = LoaderFunction(reached[name][0], name, None)
        records[name].conditions = conditions_of(name)
    for name in sorted(kept):
        g = records[name]
        helpers[name] = g
        funcs.append(g)
        todo = [g]
        while todo:  # its nested functions (closures over its dict)
            f = todo.pop()
            for node in f.defs:
                h = LoaderFunction(node, f"{f.qualname}.<locals>.{node.name}", f)
                funcs.append(h)
                todo.append(h)

    # a call of a method or module function whose own body decides on the rank
    # (`if self._is_non_local_pp_weight(name): continue`, SGLang 0.5.23 kimi_linear.py) decides
    # there too, in a way not read here (a helper handed the dict carries its own decision)
    deciding: dict[int, bool] = {}
    for f in funcs:
        for call in f.calls:
            target = _callee_def(call, methods, module_funcs)[0]
            if target is not None and target is not f.node and target.name != "load_weights" \
                    and target.name not in helpers:  # a helper handed the dict is judged itself
                if id(target) not in deciding:
                    deciding[id(target)] = any(
                        decides_on_rank(n.id if isinstance(n, ast.Name) else n.attr) for n in _own_nodes(target)
                        if isinstance(n, (ast.Name, ast.Attribute)))
                if deciding[id(target)]:
                    f._decides(target.name, call.lineno)

    def callers_cover(f: LoaderFunction, k: int, depth: int, trusted: frozenset) -> bool | None:
        """Whether every call of ``f`` covers its ``k``-th parameter (``None``: no call found)."""
        if depth > MAX_CALL_DEPTH:
            return None
        found = False
        for caller in funcs:
            for call in caller.calls:
                name = call.func.id if isinstance(call.func, ast.Name) else (
                    call.func.attr if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self" else None)
                if name != f.node.name or (f.parent is not None and caller is not f.parent
                                           and caller.parent is not f.parent):
                    continue
                offset = 1 if f.parent is None and f.params[:1] == ["self"] else 0
                pos = k - offset
                arg = call.args[pos] if 0 <= pos < len(call.args) else None
                if arg is None:
                    kw = next((w.value for w in call.keywords if w.arg == f.params[k]), None)
                    arg = kw
                found = True
                names = [n.id for n in fast_walk(arg) if isinstance(n, ast.Name)] if arg is not None else []
                if not names:
                    return None  # no name to follow
                if caller.opaque:
                    return None  # the caller decides on ranks in a way not read here
                # a key computed at the call (`n.replace(w, p)`) is covered by a test of what it was
                # made from, a test that is not a substring test on one of its parts (`w in n`)
                if not covers(caller, set(names), call.lineno, depth + 1, trusted):
                    return False
        return True if found else None

    def covers(f: LoaderFunction, names: set[str], line: int, depth: int, trusted: frozenset) -> bool:
        if f.guarded(names, line, trusted):
            return True
        if f is root:
            return False  # load_weights itself: its weights are the whole checkpoint
        # the parameters the key was computed from (`self` is the receiver, not a name's source)
        params = sorted({p for n in names for p in f.roots(n)
                         if p in f.params and not (p == "self" and f.params[0] == "self")})
        if not params:
            return False
        got = [callers_cover(f, f.params.index(p), depth, trusted) for p in params]
        # any parameter not followed: silent (whatever the order the names come in)
        return any(g is None for g in got) or all(got)

    for f in funcs:
        f.checked_by_callee(f.all_dicts())
    # the helpers handed a parameter dict whose result may be a key (first line of a call each)
    first: dict[tuple, int] = {}
    for f in funcs:
        for line, _n, needs in f.callee_guards:
            for cid in needs:
                first[cid] = min(line, first.get(cid, line))
    cids = sorted(first)
    for f in funcs:
        dicts = f.all_dicts()
        # (node, dict name or None for `self.get_submodule`, key names) of this function's lookups
        found = [(sub, sub.value.id, frozenset([sub.slice.id])) for sub in f.lookups if sub.value.id in dicts]
        found += [(call, None, keys) for call, keys in f.submodules]
        found.sort(key=lambda x: (x[0].lineno, x[0].col_offset))
        failing: list = []  # the uncovered `get_submodule` calls met so far, (line, key names)
        for node, dname, keys in found:
            if covers(f, set(keys), node.lineno, 0, frozenset()):
                continue
            key = sorted(keys)[0] if dname is None else next(iter(keys))
            via = [[[*c[:2], list(c[2]), first[c]] for c in sorted(s)]
                   for s in _covering_sets(cids, lambda s: covers(f, set(keys), node.lineno, 0, s))]
            # a key the quantization config maps (`quant_config.get_cache_scale(name)`): only
            # checkpoints that hold such tensors (per-layer KV-cache scales) reach the lookup
            roots = set().union(*(f.roots(k) for k in keys))
            quant = roots & set(f.quant_derived)
            calls = sorted({c for n in quant for c in f.quant_derived[n]})
            # an earlier `get_submodule` of a name this key was computed from fails first for it
            masked = next((line for line, ks in failing if ks <= roots and f._reaches(line, node.lineno)), None)
            # a lookup that runs only for names holding a literal (`"classification_head" in name`)
            # and names only modules the class assigns itself (`self.classification_head`), not a layer
            picked = sorted({lit for a, b, lits in f.picks if a <= node.lineno <= b
                             and all(_names_own(lit, own_attrs) for lit, _n in lits)
                             for lit, n in lits if n in roots})
            out.append([node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                        lines.col(node.end_lineno, node.end_col_offset),
                        dname if dname is not None else ast.unparse(node), key, f.qualname,
                        bool(quant), [list(c) for c in calls], list(f.opaque) if f.opaque else None, via,
                        "lookup" if dname is not None else "submodule", masked,
                        [[t, v] for t, v in f.conditions.items()], picked, list(root.delegates or ()) or None,
                        (f.dict_source(dname) or None) if dname is not None else None])
            if dname is None:
                failing.append((node.lineno, keys))
    return out

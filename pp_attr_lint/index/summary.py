"""Per-file summaries: what one Python module declares, read with the stdlib ``ast``.

A summary is plain builtin data (dicts, lists, tuples, str, int, None) so that the cache can store it
with :mod:`marshal`.  It holds everything the resolver needs from a file and nothing else:

* ``imports``: local name -> ``(module, name_or_None, level)``.  ``import a.b as c`` gives
  ``c -> ("a.b", None, 0)``; ``import a.b`` binds ``a -> ("a", None, 0)``; ``from .x import Y as Z``
  gives ``Z -> ("x", "Y", 1)``.
* ``import_paths``: the dotted names of the module-level ``import a.b.c`` statements (``a.b.c``,
  also under ``as``): each of them and every prefix of it is a module or package.
  ``plain_imports``: the names bound more than once at module level (in ``rebound``) only by
  ``import name...`` statements without ``as`` (each binds package ``name``).
* ``aliases``: module-level ``X = some.dotted.Name`` (a class alias).
* ``tables``: module-level dict literals whose values are tuples of two or more strings (vLLM's
  registry tables ``{"Arch": ("module", "Class")}``; vllm-omni 0.30.0's ``_OMNI_MODELS``
  ``{"Arch": ("folder", "module", "Class")}``).
* ``registrations``: ``RECEIVER.register_model("Arch", target)`` calls anywhere in the file (an
  out-of-tree plugin's ``ModelRegistry.register_model``), as ``(receiver, arch, kind, target,
  line, imports)``: ``kind`` ``"str"`` with ``target`` ``"module:Class"``, or ``"ref"`` with the
  dotted name of the class as written; ``imports`` maps the first name of the receiver and of a
  ``ref`` target to ``(module, name_or_None, level)`` when one import anywhere in the file binds it
  (plugins import ``ModelRegistry`` inside their ``register()``).
* ``classes``: name -> class record (see :func:`_class_record`).
* ``functions``: module-level function name -> scope record (params, locals).
* ``reads``: the attribute reads of the watched attribute names (``X.start_layer`` and
  ``getattr(X, "start_layer")``), each with its receiver and exact position.
* ``facts``: collector key -> what that collector returned (when not ``None``); ``held``: the
  collector keys that ran on this file (a gated collector runs only where the file's prefilter
  mask has a bit of its rules: :func:`pp_attr_lint.rule_api.index_spec`).

Values of assignments are *value descriptors*, small tuples:

* ``("call", dotted, kwargs[, consts])`` -- ``dotted(...)``; ``kwargs`` maps keyword -> list of string
  literals when the keyword's value is a list/tuple of string literals (``architectures=["A"]``);
  ``consts`` (present when the call passes a ``True``/``False``/``None`` keyword or any positional
  argument) maps keyword -> that constant and ``"*"`` -> the number of positional arguments, or is
  ``None`` when the call has ``*args`` or ``**kwargs`` (the flags of a construction:
  ``enable_pp=False``).
* ``("ref", (name, attr, attr, ...))`` -- a name followed by attribute reads (``self.a.b``).
* ``("ann", dotted)`` -- an annotation naming a class (``"?dotted"`` when it admits ``None``:
  ``Optional[X]``, ``X | None``, or a parameter whose default is ``None``).
* ``("import", module, name, level)`` -- a name bound by ``from module import name`` inside a
  function.
* ``("none",)`` -- the constant ``None`` (also added for ``a or b``, which is ``b`` when ``a``
  is falsy).
* ``("unknown", why, ...)`` -- anything else, ``why`` saying what for messages: ``"expr", text``
  (its source, shortened), ``"param", function`` (a nested function's, ``""``: a lambda's),
  ``"import", module, path`` (``import path [as x]`` in the function binds ``module``), ``"def",
  name``, or a name bound by ``"unpacked"``, ``"loop"``, ``"with"``, ``"except"``,
  ``"augmented"`` (``+=``), ``"global"``; ``("unknown",)`` says no more.

Positions are 1-based lines and 0-based *character* columns (``ast`` gives UTF-8 byte offsets;
they are converted here so that they match libcst and ruff's JSON).
"""

from __future__ import annotations

import ast
from itertools import chain as _iter_chain
from typing import Any

# child_nodes and statements_on_lines are imported here for the callers that still name this module
from .astutil import (answers_held_names_only, child_nodes, dotted_name, raises_attribute_error_only,  # noqa: F401
                      ref_chain, short_source, source_segment, statements_on_lines, walk)
from .constants import folded, string_constants
from .spec import IndexSpec, LineIndex
from .view import ModuleView, set_active

_chain = _iter_chain.from_iterable
UNKNOWN = ("unknown",)
NONE = ("none",)
# a name bound without a value of its own, by the statement's type -> the ``why`` of its descriptor
_BOUND_BY = {ast.For: "loop", ast.AsyncFor: "loop", ast.comprehension: "loop", ast.With: "with",
             ast.AsyncWith: "with", ast.Assign: "unpacked"}


# the lines of the module being summarized (set by :func:`summarize`): an expression's text is
# sliced from them, which costs far less than ``ast.unparse`` over the thousands of values a tree
# assigns (0.6 s of a profiled check of vLLM 0.21.0)
_SOURCE: list = [None]


def _expr(node: ast.AST) -> tuple:
    lines = _SOURCE[0]
    text = source_segment(lines, node) if lines is not None and hasattr(node, "end_lineno") else short_source(node)
    return UNKNOWN if text is None else ("unknown", "expr", text)


def _str_list(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[union-attr]
    return None


def value_descriptors(node: ast.AST | None) -> list[tuple]:
    """Describe what an assigned expression may evaluate to (a list: one per branch)."""
    if node is None:
        return [UNKNOWN]
    if isinstance(node, ast.IfExp):
        return value_descriptors(node.body) + value_descriptors(node.orelse)
    if isinstance(node, ast.NamedExpr):
        return value_descriptors(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return [NONE]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        # `a or X(...)`: any operand (the first truthy one), and None stays possible
        return [d for v in node.values for d in value_descriptors(v)] + [NONE]
    if isinstance(node, ast.Call):
        callee = dotted_name(node.func)
        if callee is None:
            return [_expr(node)]
        kwargs = {}
        consts = {}
        for kw in node.keywords:
            if kw.arg is not None:
                lits = _str_list(kw.value)
                if lits is not None:
                    kwargs[kw.arg] = lits
                elif isinstance(kw.value, ast.Constant) and (kw.value.value is None or isinstance(kw.value.value, bool)):
                    consts[kw.arg] = kw.value.value
        if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            return [("call", callee, kwargs, None)]  # `**kw` / `*args`: any flag may be passed
        if node.args:
            consts["*"] = len(node.args)
        if consts:
            return [("call", callee, kwargs, consts)]
        return [("call", callee, kwargs)]
    chain = ref_chain(node)
    if chain is not None:
        return [("ref", chain)]
    return [_expr(node)]


def annotation_name(node: ast.AST | None) -> str | None:
    """The class named by an annotation: ``Cls``, ``"Cls"``, ``mod.Cls``; ``Optional[Cls]`` and
    ``Cls | None`` give ``"?Cls"`` (the ``?`` says the value may be ``None``).  Anything else
    gives ``None``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = node.left, node.right
        if isinstance(right, ast.Constant) and right.value is None:
            return _optional(annotation_name(left))
        if isinstance(left, ast.Constant) and left.value is None:
            return _optional(annotation_name(right))
        return None
    if isinstance(node, ast.Subscript) and dotted_name(node.value) in ("Optional", "typing.Optional"):
        return _optional(annotation_name(node.slice))
    return dotted_name(node)


def _optional(ann: str | None) -> str | None:
    return None if ann is None else "?" + ann.lstrip("?")


def _is_super_init(call: ast.Call) -> tuple | None:
    """Classify ``super().__init__(...)``, ``super(P, self).__init__(...)`` and ``B.__init__(self, ...)``."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
        return None
    target = func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
        if not target.args:
            return ("super", None)
        if len(target.args) == 2:
            return ("super", dotted_name(target.args[0]))
        return ("unknown",)
    name = dotted_name(target)
    if name is not None:
        return ("explicit", name)
    return ("unknown",)


class _Summarizer:
    def __init__(self, source: str, attrs: frozenset[str], view: ModuleView):
        self.attrs = attrs
        self.view = view  # the module's one walk, which the collectors read after this
        self.lines = LineIndex(source)
        self._guarded: dict[tuple, set[int]] | None = {}
        self._guard_fn: ast.AST | None = None  # the function whose guards _guarded holds (computed lazily)
        self.summary: dict[str, Any] = {
            "imports": {},
            "aliases": {},
            "tables": {},
            "classes": {},
            "functions": {},
            "reads": [],
            "star_imports": [],
            "import_paths": [],
            "stores": [],  # (receiver chain or None, attr, class, function line) of `x.attr = ...`
        }
        self._cls: str | None = None
        self._bindings: dict[str, int] = {}
        self._plain: dict[str, int] = {}  # name -> module-level `import name...` (no `as`) binding it
        self._globals: set[str] = set()

    # -- module level ------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> dict[str, Any]:
        for stmt in tree.body:
            self._module_stmt(stmt)
        # a name bound more than once at module level (a class and a later alias, `try: import
        # ... except ImportError: import ...`, `global` in a function) is not one thing
        self.summary["rebound"] = sorted(n for n, c in self._bindings.items() if c > 1) + sorted(self._globals)
        # rebound names only ever bound by `import name.x`, `import name.y`: package `name` each time
        self.summary["plain_imports"] = sorted(n for n, c in self._bindings.items()
                                               if c > 1 and self._plain.get(n) == c and n not in self._globals)
        return self.summary

    def _bind(self, names) -> None:
        for n in names:
            self._bindings[n] = self._bindings.get(n, 0) + 1

    def _module_stores(self, stmt: ast.AST) -> None:
        """Record ``X.start_layer = ...`` and ``setattr(X, "start_layer", v)`` at module level."""
        for sub in walk(stmt):
            targets = ()
            if isinstance(sub, ast.Assign):
                targets = sub.targets
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
                targets = (sub.target,)
            elif isinstance(sub, ast.withitem) and sub.optional_vars is not None:
                targets = (sub.optional_vars,)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr" and len(sub.args) >= 2:
                name = sub.args[1].value if isinstance(sub.args[1], ast.Constant) else "*"
                if name == "*" or name in self.attrs:
                    self.summary["stores"].append((ref_chain(sub.args[0]), name, None, None))
            for t in targets:
                for node in walk(t):
                    if isinstance(node, ast.Attribute) and node.attr in self.attrs and isinstance(node.ctx, ast.Store):
                        self.summary["stores"].append((ref_chain(node.value), node.attr, None, None))

    def _module_stmt(self, stmt: ast.stmt) -> None:
        s = self.summary
        if not isinstance(stmt, (ast.If, ast.Try, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not (
            hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)
        ):
            self._module_stores(stmt)
            self._bind(_bound_names(stmt))
        elif isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            self._bind([stmt.name])
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                s["import_paths"].append(a.name)
                if a.asname:
                    s["imports"][a.asname] = (a.name, None, 0)
                else:
                    top = a.name.split(".")[0]
                    s["imports"][top] = (top, None, 0)
                    self._plain[top] = self._plain.get(top, 0) + 1
        elif isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if a.name == "*":
                    s["star_imports"].append((stmt.module or "", stmt.level))
                else:
                    s["imports"][a.asname or a.name] = (stmt.module or "", a.name, stmt.level)
        elif isinstance(stmt, ast.ClassDef):
            s["classes"][stmt.name] = self._class_record(stmt)
            self._nested_classes(stmt, stmt.name)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            s["functions"][stmt.name] = self._scope(stmt, None, None)
        elif isinstance(stmt, ast.Assign):
            self._scan_reads(stmt, None, None)
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                dn = dotted_name(stmt.value)
                if dn is not None:
                    s["aliases"][name] = dn
                elif isinstance(stmt.value, ast.Dict):
                    table = {}
                    for k, v in zip(stmt.value.keys, stmt.value.values):
                        if (
                            isinstance(k, ast.Constant)
                            and isinstance(k.value, str)
                            and isinstance(v, ast.Tuple)
                            and len(v.elts) >= 2
                            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts)
                        ):
                            table[k.value] = tuple(e.value for e in v.elts)  # type: ignore[union-attr]
                    if table:
                        s["tables"][name] = table
        elif isinstance(stmt, (ast.If, ast.Try)) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
            # imports and classes under `if TYPE_CHECKING:` / `try: ... except ImportError:`
            for body in _sub_bodies(stmt):
                for sub in body:
                    self._module_stmt(sub)
        else:
            self._scan_reads(stmt, None, None)

    # -- classes -----------------------------------------------------------------------------
    def _nested_classes(self, node: ast.ClassDef, prefix: str) -> None:
        """Record ``class Outer: class Inner(...)`` as the class ``Outer.Inner`` (a stand-in
        namespace such as ``class nn: class Module: ...`` is then resolved like a module)."""
        for stmt in node.body:
            if isinstance(stmt, ast.ClassDef):
                name = f"{prefix}.{stmt.name}"
                self.summary["classes"][name] = self._class_record(stmt)
                self._nested_classes(stmt, name)

    def _class_record(self, node: ast.ClassDef) -> dict[str, Any]:
        body_names: list[str] = []
        properties: list[str] = []
        methods: dict[str, Any] = {}
        annotations: dict[str, str] = {}
        nested: list[str] = []
        class_values: dict[str, str] = {}  # `model_cls = DeepseekV4Model` in the class body
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decos = [dotted_name(d.func if isinstance(d, ast.Call) else d) for d in stmt.decorator_list]
                is_prop = any(
                    d is not None and (d in ("property", "functools.cached_property", "cached_property")
                                       or d.endswith(".setter") or d.endswith(".getter"))
                    for d in decos
                )
                if is_prop:
                    properties.append(stmt.name)
                else:
                    body_names.append(stmt.name)
                static = any(d in ("staticmethod", "classmethod") for d in decos)
                methods.setdefault(stmt.name, self._scope(stmt, node.name, None if static else "self"))
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    body_names.extend(_target_names(t))
                dn = dotted_name(stmt.value)
                if dn is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    class_values[stmt.targets[0].id] = dn
                self._scan_reads(stmt, node.name, None)
            elif isinstance(stmt, ast.AnnAssign):
                if isinstance(stmt.target, ast.Name):
                    ann = annotation_name(stmt.annotation)
                    if stmt.value is not None:
                        body_names.append(stmt.target.id)
                    elif ann is not None:
                        annotations[stmt.target.id] = ann
                self._scan_reads(stmt, node.name, None)
            elif isinstance(stmt, ast.ClassDef):
                nested.append(stmt.name)
                body_names.append(stmt.name)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                body_names.extend((a.asname or a.name).split(".")[0] for a in stmt.names)
            elif isinstance(stmt, ast.AugAssign):
                body_names.extend(_target_names(stmt.target))
            elif isinstance(stmt, (ast.If, ast.Try, ast.For, ast.While, ast.With)):
                # conditional class bodies: every name they bind counts as a class attribute
                for sub in walk(stmt):
                    if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                        for t in sub.targets if isinstance(sub, ast.Assign) else [sub.target]:
                            body_names.extend(_target_names(t))
                    elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        body_names.append(sub.name)
                self._scan_reads(stmt, node.name, None)
        # `locals()[name] = ...`, `exec(...)` or `vars()` in a class body can bind any name
        dynamic_body = any(
            isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("locals", "vars", "exec", "eval")
            for stmt in node.body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            for sub in walk(stmt)
        )
        if dynamic_body:
            body_names.append("__dict__")
        # `Generic[T]` / `Protocol[T]` count as the subscripted class
        bases = [dotted_name(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases]
        return {
            "line": node.lineno,
            "col": self.lines.col(node.lineno, node.col_offset),
            "end_line": node.end_lineno,
            "bases": bases,
            "keywords": [kw.arg for kw in node.keywords],
            "decorators": [dotted_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list],
            "body_names": sorted(set(body_names)),
            "properties": sorted(set(properties)),
            "annotations": annotations,
            "methods": methods,
            "class_values": class_values,
        }

    # -- functions and methods ---------------------------------------------------------------
    def _scope(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: str | None, self_kind: str | None) -> dict:
        args = fn.args
        positional = args.posonlyargs + args.args
        self_name = positional[0].arg if (cls is not None and self_kind and positional) else None
        params = {}
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        for a in positional + args.kwonlyargs:
            ann = annotation_name(a.annotation)
            d = defaults.get(a.arg)
            if ann is not None and isinstance(d, ast.Constant) and d.value is None:
                ann = _optional(ann)  # `x: Inner = None`
            params[a.arg] = ann
        for a in (args.vararg, args.kwarg):
            if a is not None:
                params[a.arg] = None
        self._guarded, self._guard_fn = None, fn  # computed at the first watched read only
        self._cls = cls
        scope = {
            "line": fn.lineno,
            "self": self_name,
            "params": params,
            "locals": {},
            "assigns": {},
            "init_calls": [],
            "dynamic": False,
            "passes_self": False,
        }
        self._rets: list[ast.Return] = []
        self._nested: list[ast.AST] = []
        self._vars_params: list[str] = []
        view = self.view
        for lv in view.body(fn, cls):
            self._walk_fn(lv, scope, cls, fn.name)
        if any(p in scope["locals"] for p in self._vars_params):
            scope["dynamic"] = True  # `vars(config)` after `config = self`
        # what it returns (for `self.x = self.build(...)` and `x = make(...)`): the value of each
        # `return` outside nested functions and classes, and the return annotation
        rets = self._rets
        if self._nested:
            inner = {id(r) for n in self._nested for r in walk(n) if isinstance(r, ast.Return)}
            rets = [r for r in rets if id(r) not in inner]
        scope["returns"] = [d for r in rets for d in (value_descriptors(r.value) if r.value else [NONE])]
        scope["return_ann"] = annotation_name(fn.returns)
        if fn.name == "__new__" and cls is not None:
            scope["new_benign"] = _new_is_benign(fn, self.attrs, view.walk(fn))
        if fn.name == "__getattr__" and cls is not None and raises_attribute_error_only(fn):
            scope["raises_only"] = True  # answers no name: adds no attribute
        elif fn.name == "__getattr__" and cls is not None and answers_held_names_only(fn):
            scope["held_only"] = True  # answers only the names the instance's containers hold
        return scope

    def _walk_fn(self, lv: list, scope: dict, cls: str | None, fname: str) -> None:
        """Record what the nodes of one statement of a function (``lv``: its nodes by depth, whose
        concatenation is :func:`walk`'s order) bind, store, call and read in ``scope``."""
        self_name = scope["self"]
        attrs = self.attrs
        for sub in _chain(lv):
            t = type(sub)
            if t is ast.Attribute:
                if sub.attr in attrs:  # type: ignore[attr-defined]
                    self._read_site_attr(sub, scope, cls)  # type: ignore[arg-type]
                continue
            if t not in _FN_INTERESTING:
                continue
            if t is ast.Return:
                self._rets.append(sub)  # type: ignore[arg-type]
                continue
            if t is ast.ClassDef:
                self._nested.append(sub)
                continue
            if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                value = sub.value
                for t in targets:
                    self._record_target(t, value, scope, sub, annotation=getattr(sub, "annotation", None))
            elif isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                scope["locals"].setdefault(sub.target.id, []).extend(value_descriptors(sub.value))
            elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._record_target(sub.target, None, scope, sub)  # `for self.start_layer in ...`
            elif isinstance(sub, (ast.With, ast.AsyncWith)):
                for item in sub.items:
                    if item.optional_vars is not None:
                        self._record_target(item.optional_vars, None, scope, sub)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not isinstance(sub, ast.Lambda):
                    self._nested.append(sub)
                a = sub.args
                param = ("unknown", "param", "" if isinstance(sub, ast.Lambda) else sub.name)
                for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                    scope["locals"].setdefault(p.arg, []).append(param)
                if not isinstance(sub, ast.Lambda):
                    scope["locals"].setdefault(sub.name, []).append(("unknown", "def", sub.name))
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                scope["locals"].setdefault(sub.name, []).append(("unknown", "except"))
            elif isinstance(sub, ast.ImportFrom):
                for a in sub.names:
                    # `from .pool import Pool` inside the function: the imported name
                    desc = ("import", sub.module or "", a.name, sub.level) if a.name != "*" else UNKNOWN
                    scope["locals"].setdefault(a.asname or a.name, []).append(desc)
            elif isinstance(sub, ast.Import):
                for a in sub.names:
                    desc = ("unknown", "import", a.name if a.asname else a.name.split(".")[0], a.name)
                    scope["locals"].setdefault((a.asname or a.name).split(".")[0], []).append(desc)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                for n in sub.names:
                    scope["locals"].setdefault(n, []).append(("unknown", "global"))
                if isinstance(sub, ast.Global):
                    self._globals.update(sub.names)  # the function may rebind a module-level class
            elif isinstance(sub, ast.Call):
                kind = _is_super_init(sub)
                if kind is not None and fname == "__init__":
                    if kind[0] == "explicit" and sub.args and not (
                        isinstance(sub.args[0], ast.Name) and sub.args[0].id == self_name
                    ):
                        kind = ("unknown",)
                    scope["init_calls"].append(kind)
                func = sub.func
                if isinstance(func, ast.Name) and func.id in ("exec", "eval", "vars", "locals"):
                    if func.id == "vars" and _vars_of_other(sub, scope):
                        if isinstance(sub.args[0], ast.Name):
                            self._vars_params.append(sub.args[0].id)  # dynamic if the body rebinds it
                    else:
                        scope["dynamic"] = True  # `exec("self.x = 0")`, `vars(self)[...] = ...`
                if self_name and not (isinstance(func, ast.Name) and func.id in _SELF_SAFE_CALLS) and not (
                    isinstance(func, ast.Attribute) and func.attr == "__init__"
                ) and any(isinstance(a, ast.Name) and a.id == self_name
                          for a in [*sub.args, *(k.value for k in sub.keywords)]):
                    scope["passes_self"] = True  # `init_range(self)` may set attributes on it
                if (
                    isinstance(func, ast.Name)
                    and func.id == "setattr"
                    and len(sub.args) >= 2
                    and not (isinstance(sub.args[0], ast.Name) and sub.args[0].id == self_name)
                    and not (isinstance(sub.args[1], ast.Constant) and sub.args[1].value not in self.attrs)
                ):
                    name = sub.args[1].value if isinstance(sub.args[1], ast.Constant) else "*"
                    self.summary["stores"].append((ref_chain(sub.args[0]), name, cls, scope["line"]))
                if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and sub.args:
                    if self_name and isinstance(sub.args[0], ast.Name) and sub.args[0].id == self_name:
                        if (
                            func.id == "setattr"
                            and len(sub.args) >= 2
                            and isinstance(sub.args[1], ast.Constant)
                            and isinstance(sub.args[1].value, str)
                        ):
                            scope["assigns"].setdefault(sub.args[1].value, []).append(
                                (sub.lineno, [UNKNOWN])
                            )
                        else:
                            scope["dynamic"] = True
                elif isinstance(func, ast.Attribute) and func.attr in ("update", "__setitem__", "setdefault"):
                    if _is_self_dict(func.value, self_name):
                        scope["dynamic"] = True
                elif isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "add_module", "register_module"):
                    scope["dynamic"] = True
                self._read_site_call(sub, scope, cls)
            elif isinstance(sub, ast.Subscript) and _is_self_dict(sub.value, self_name) and isinstance(sub.ctx, ast.Store):
                scope["dynamic"] = True

    def _record_target(self, t: ast.AST, value: ast.AST | None, scope: dict, stmt: ast.AST, annotation=None) -> None:
        self_name = scope["self"]
        if isinstance(t, ast.Attribute) and t.attr in self.attrs and not (
            isinstance(t.value, ast.Name) and t.value.id == self_name
        ):
            # `self.lm.start_layer = ...`: the attribute is put on another object from outside
            self.summary["stores"].append((ref_chain(t.value), t.attr, self._cls, scope["line"]))
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == self_name and self_name:
            scope["assigns"].setdefault(t.attr, []).append((t.lineno, _target_descs(stmt, value, annotation)))
        elif isinstance(t, (ast.Tuple, ast.List)):
            # `self.start_layer, self.end_layer, self.layers = make_layers(...)`
            for elt in t.elts:
                if isinstance(elt, ast.Starred):
                    elt = elt.value
                self._record_target(elt, None, scope, stmt)
        elif isinstance(t, ast.Name):
            scope["locals"].setdefault(t.id, []).extend(_target_descs(stmt, value, annotation))
        elif isinstance(t, ast.Starred):
            self._record_target(t.value, None, scope, stmt)

    # -- reads of watched attributes ----------------------------------------------------------
    def _site(self, node: ast.AST, recv: ast.AST, kind: str, attr: str, scope: dict | None, cls: str | None) -> None:
        chain = ref_chain(recv)
        # attributes `a` for which this read runs only under `hasattr(recv, "a")`
        if self._guarded is None:
            fn = self._guard_fn
            self._guarded = _hasattr_guarded(fn, self.view.walk(fn)) if fn is not None else {}
        guards = sorted({a for (c, a), ids in self._guarded.items()
                         if (c == chain or (c, a) == ANY_GUARD) and id(node) in ids})
        end_line = getattr(node, "end_lineno", node.lineno)  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", node.col_offset)  # type: ignore[attr-defined]
        self.summary["reads"].append(
            {
                "attr": attr,
                "kind": kind,
                "chain": chain,
                "line": node.lineno,  # type: ignore[attr-defined]
                "col": self.lines.col(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                "end_line": end_line,
                "end_col": self.lines.col(end_line, end_col),
                "recv_end_line": recv.end_lineno,  # type: ignore[attr-defined]
                "recv_end_col": self.lines.col(recv.end_lineno, recv.end_col_offset),  # type: ignore[attr-defined]
                "class": cls,
                "function": scope_key(scope),
                "guards": guards,
            }
        )

    def _read_site_attr(self, node: ast.Attribute, scope: dict | None, cls: str | None) -> None:
        if node.attr in self.attrs and isinstance(node.ctx, ast.Load):
            self._site(node, node.value, "attribute", node.attr, scope, cls)

    def _read_site_call(self, node: ast.Call, scope: dict | None, cls: str | None) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) == 2
            and not node.keywords
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in self.attrs
        ):
            self._site(node, node.args[0], "getattr", node.args[1].value, scope, cls)

    def _scan_reads(self, node: ast.AST, cls: str | None, scope: dict | None) -> None:
        for sub in walk(node):
            if isinstance(sub, ast.Attribute):
                self._read_site_attr(sub, scope, cls)
            elif isinstance(sub, ast.Call):
                self._read_site_call(sub, scope, cls)



_FN_INTERESTING = frozenset({
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension,
    ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ExceptHandler,
    ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Call, ast.Subscript, ast.Return, ast.ClassDef,
})


def _hasattr_key(node: ast.AST) -> tuple | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "hasattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        chain = ref_chain(node.args[0])
        if chain is not None:
            return (chain, node.args[1].value)
    return None


ANY_GUARD = (None, "*")  # key of nodes guarded for every receiver and attribute


def _catches_attribute_error(t: ast.AST | None) -> bool:
    if t is None:
        return True  # bare `except:`
    if isinstance(t, ast.Tuple):
        return any(_catches_attribute_error(e) for e in t.elts)
    name = dotted_name(t)
    return name is not None and name.rsplit(".", 1)[-1] in ("AttributeError", "Exception", "BaseException")


def _hasattr_guarded(fn: ast.AST, nodes: list | None = None) -> dict[tuple, set[int]]:
    """Nodes that run only when ``hasattr(R, "a")`` was true: the operands after it in an ``and``,
    and the body of an ``if``/``while``/conditional expression whose test is that call or an
    ``and`` holding it.  Keyed by ``(receiver chain, attribute)``; a negated guard guards nothing.
    ``nodes``: ``walk(fn)`` as a list when the caller has it."""
    guarded: dict[tuple, set[int]] = {}

    def mark(key: tuple, nodes) -> None:
        ids = guarded.setdefault(key, set())
        for n in nodes:
            ids.update(id(x) for x in walk(n))

    def key_of(test: ast.AST) -> tuple | None:
        k = _hasattr_key(test)
        if k is not None:
            return k
        # `isinstance(x, Inner)` narrows x: the read may be on another class than the resolver thinks
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and test.args:
            chain = ref_chain(test.args[0])
            if chain is not None:
                return (chain, "*")
        return None

    def keys_of(test: ast.AST) -> list[tuple]:
        k = key_of(test)
        if k is not None:
            return [k]
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return [k for v in test.values if (k := key_of(v)) is not None]
        return []

    for node in walk(fn) if nodes is None else nodes:
        for body in (getattr(node, "body", None), getattr(node, "orelse", None), getattr(node, "finalbody", None)):
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                # `if not hasattr(x, "a"): return` guards every statement after it
                if (
                    isinstance(stmt, ast.If)
                    and isinstance(stmt.test, ast.UnaryOp)
                    and isinstance(stmt.test.op, ast.Not)
                    and stmt.body
                    and isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
                ):
                    k = _hasattr_key(stmt.test.operand)
                    if k is not None:
                        mark(k, body[i + 1:])
        if isinstance(node, (ast.With, ast.AsyncWith)):
            # `with contextlib.suppress(AttributeError):`
            for item in node.items:
                e = item.context_expr
                if (
                    isinstance(e, ast.Call)
                    and (dotted_name(e.func) or "").rsplit(".", 1)[-1] == "suppress"
                    and any(_catches_attribute_error(a) for a in e.args)
                ):
                    mark(ANY_GUARD, node.body)
        if isinstance(node, ast.Try) or (hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)):
            if any(_catches_attribute_error(h.type) for h in node.handlers):
                mark(ANY_GUARD, node.body)  # `try: x.start_layer except AttributeError:` cannot raise
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for i, v in enumerate(node.values):
                k = key_of(v)
                if k is not None:
                    mark(k, node.values[i + 1:])
        elif isinstance(node, (ast.If, ast.While)):
            for k in keys_of(node.test):
                mark(k, node.body)
        elif isinstance(node, ast.IfExp):
            for k in keys_of(node.test):
                mark(k, [node.body])
    return guarded


# builtins that take `self` without storing attributes on it
_SELF_SAFE_CALLS = frozenset({
    "super", "isinstance", "issubclass", "hasattr", "getattr", "setattr", "delattr", "type", "id", "len", "repr", "str",
    "print", "hash", "bool", "callable", "format", "iter", "next", "list", "tuple", "dict", "set",
})


def _target_descs(stmt: ast.AST, value: ast.AST | None, annotation: ast.AST | None) -> list[tuple]:
    """Value descriptors of one assignment target: unknown for ``x += ...``, the annotated class
    for ``x: Cls = ...``, else what the value may be."""
    if isinstance(stmt, ast.AugAssign):
        return [("unknown", "augmented")]
    ann = annotation_name(annotation)
    if ann is not None:
        return [("ann", ann)]
    if value is None and type(stmt) in _BOUND_BY:  # a target without a value of its own: what binds it
        return [("unknown", _BOUND_BY[type(stmt)])]
    return value_descriptors(value)


def scopes_by_line(summary: dict) -> dict[tuple[str | None, int], dict]:
    """``(class name or None, line of the def)`` -> the method's or module function's scope."""
    scopes = {}
    for cname, crec in summary["classes"].items():
        for scope in crec["methods"].values():
            scopes[(cname, scope["line"])] = scope
    for scope in summary["functions"].values():
        scopes[(None, scope["line"])] = scope
    return scopes


def _is_super_new(v: ast.AST | None) -> bool:
    """``super().__new__(cls)`` or ``object.__new__(cls)``."""
    if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "__new__"):
        return False
    target = v.func.value
    return (isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super") or (
        isinstance(target, ast.Name) and target.id == "object")


def _new_is_benign(fn: ast.FunctionDef | ast.AsyncFunctionDef, attrs: frozenset[str], nodes: list) -> bool:
    """Whether a ``__new__`` only builds the instance the normal way: it returns what
    ``super().__new__(cls)`` gave, stores none of the watched attributes, uses no ``setattr``,
    ``exec``, ``vars`` or ``__dict__``, and hands the instance only to methods of ``cls``.
    (vLLM's ``SupportsQuant.__new__`` attaches ``quant_config`` this way,
    vllm/model_executor/models/interfaces.py.)  ``nodes``: ``walk(fn)`` as a list."""
    cls_name = (fn.args.posonlyargs + fn.args.args)[0].arg if (fn.args.posonlyargs + fn.args.args) else "cls"
    instances = {
        t.id for sub in nodes if isinstance(sub, ast.Assign) and _is_super_new(sub.value)
        for t in sub.targets if isinstance(t, ast.Name)
    }
    returns = 0
    for sub in nodes:
        if isinstance(sub, ast.Return):
            returns += 1
            v = sub.value
            if not ((isinstance(v, ast.Name) and v.id in instances) or _is_super_new(v)):
                return False
        elif isinstance(sub, ast.Attribute) and (sub.attr == "__dict__" or (
                sub.attr in attrs and isinstance(sub.ctx, ast.Store))):
            return False
        elif isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Name) and f.id in ("setattr", "exec", "eval", "vars"):
                return False
            passes = any(isinstance(a, ast.Name) and a.id in instances
                         for a in [*sub.args, *(k.value for k in sub.keywords)])
            if passes and not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == cls_name):
                return False
    return returns > 0


def _vars_of_other(call: ast.Call, scope: dict) -> bool:
    """Whether ``vars(x)`` is surely of another object than the method's ``self``: ``x`` is a
    parameter other than ``self`` (``Config(**vars(config))``) or an attribute
    (``vars(self.config)``).  ``vars()``, ``vars(self)`` and ``vars(local)`` may be of ``self``."""
    if len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Name):
        return arg.id in scope["params"] and arg.id != scope["self"]
    return isinstance(arg, ast.Attribute) and ref_chain(arg) is not None and arg.attr != "__dict__"


def _bound_names(stmt: ast.stmt) -> list[str]:
    """Names a module-level statement binds."""
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names if a.name != "*"]
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in _target_names(t)]
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return _target_names(stmt.target)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return _target_names(stmt.target)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [n for i in stmt.items if i.optional_vars is not None for n in _target_names(i.optional_vars)]
    if isinstance(stmt, ast.Delete):
        return [n for t in stmt.targets for n in _target_names(t)]
    return []


def scope_key(scope: dict | None) -> int | None:
    """The key of a function scope inside its summary: the line of its ``def`` (or ``None``)."""
    return None if scope is None else scope["line"]


def _is_self_dict(node: ast.AST, self_name: str | None) -> bool:
    return (
        self_name is not None
        and isinstance(node, ast.Attribute)
        and node.attr == "__dict__"
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def _target_names(t: ast.AST) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return []


def _sub_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
    for h in getattr(stmt, "handlers", []):
        bodies.append(h.body)
    return bodies


def summarize(source: str, spec: IndexSpec | frozenset, filename: str = "<unknown>",
              mask: int | None = None) -> dict[str, Any]:
    """Summarize one module.

    Args:
        source: the module's text (already decoded).
        spec: what to record (an :class:`IndexSpec`; a plain set of attribute names is read as
            ``IndexSpec(attrs)``).
        filename: only used in the ``SyntaxError`` message.
        mask: the file's prefilter mask (a function of its bytes and ``spec``): a gated
            collector runs only when it has one of the collector's bits; ``None``: every
            collector runs.

    Returns:
        The summary dict described in this module's docstring; the rules' own facts are under
        ``"facts"`` (rule code -> what its collector returned).

    Raises:
        SyntaxError: the source does not parse (``ValueError`` for NUL bytes is re-raised as
        ``SyntaxError``).
    """
    if not isinstance(spec, IndexSpec):
        spec = IndexSpec(frozenset(spec))
    try:
        tree = ast.parse(source, filename=filename)
    except ValueError as e:  # source code string cannot contain null bytes
        raise SyntaxError(str(e)) from None
    view = ModuleView(tree)
    summarizer = _Summarizer(source, spec.attrs, view)
    _SOURCE[0] = summarizer.lines
    try:
        summary = summarizer.run(tree)
    finally:
        _SOURCE[0] = None
    facts = {}
    held = []
    gates = spec.collector_gates or (None,) * len(spec.collectors)
    # the collectors' walks of the functions the summarizer walked read its nodes (see .view)
    old = set_active(view)
    try:
        for (code, collect), gate in zip(spec.collectors, gates):
            if gate is not None and mask is not None and not mask & gate:
                continue  # none of its rules wants this file: none of them reads its facts here
            held.append(code)
            got = collect(tree, summarizer.lines)
            if got is not None:
                facts[code] = got
    finally:
        set_active(old)
    summary["facts"] = facts
    summary["held"] = held
    summary["registrations"] = _registrations(tree) if "register_model" in source else []
    return summary


def complete_facts(source: str, collect) -> Any:
    """What ``collect`` (a collector of an :class:`IndexSpec`) finds in a module whose summary was
    made without it (its gate skipped the file; see :func:`summarize`): the same value it gives
    there, from the module's text parsed again.  Raises ``SyntaxError`` only for a text that does
    not parse, which no summarized file is."""
    tree = ast.parse(source)
    old = set_active(ModuleView(tree))
    try:
        return collect(tree, LineIndex(source))
    finally:
        set_active(old)


def _registrations(tree: ast.Module) -> list:
    """The ``X.register_model("Arch", target)`` calls of ``tree`` (see the module docstring)."""
    out = []
    bound: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                bound.setdefault(a.asname or a.name, []).append((node.module or "", a.name, node.level))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound.setdefault(a.asname, []).append((a.name, None, 0))
                else:
                    head = a.name.split(".", 1)[0]
                    bound.setdefault(head, []).append((head, None, 0))
    constants = string_constants(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register_model" and len(node.args) == 2 and not node.keywords):
            continue
        receiver = dotted_name(node.func.value)
        arch, target = (folded(a, constants) or a for a in node.args)
        if receiver is None or not (isinstance(arch, ast.Constant) and isinstance(arch.value, str)):
            continue
        if isinstance(target, ast.Constant) and isinstance(target.value, str) and target.value.count(":") == 1:
            kind, value = "str", target.value
        elif dotted_name(target) is not None:
            kind, value = "ref", dotted_name(target)
        else:
            continue
        heads = [receiver.split(".", 1)[0]] + ([value.split(".", 1)[0]] if kind == "ref" else [])
        imports = {h: bound[h][0] for h in heads if len(set(bound.get(h, ()))) == 1}
        out.append((receiver, arch.value, kind, value, node.lineno, imports))
    return out

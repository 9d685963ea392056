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
* :func:`layer_id_constant`: a literal layer id.
"""

from __future__ import annotations

import ast
import re

from ..semantic.callsites import argument, name_uses, positional, rebound, self_attr
from ..semantic.constructions import NotEstablished, dotted

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
    (:func:`stage_built`) and one of them is the file's; else ``None``.  ``own`` maps
    ``(module, class, method)`` to the file's accessors, ``facts_of(module)`` gives a module's
    accessors (:func:`accessors`).  Raises
    :class:`~pp_attr_lint.semantic.constructions.NotEstablished` when an MRO cannot be read or
    the method found is abstract."""
    from ..resolve import EXTERNAL, NONE_KEY, Unresolved

    r = receivers.r
    hit, holders, stages = None, [], []
    real = [k for k in classes if k != NONE_KEY]
    if not real:
        return None
    for k in sorted(real):
        if k[0] == EXTERNAL:
            return None
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
        if (entry[0], entry[1], m) in own and hit is None:
            hit = own[(entry[0], entry[1], m)]
        holders.append(k[1])
        stages.append(built)
    return (hit, holders, stages) if hit is not None else None


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

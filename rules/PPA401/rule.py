"""PPA401 intermediate-tensor-keys: the keys a model allocates for what it receives from the
previous pipeline-parallel rank (``make_empty_intermediate_tensors``), the keys its ``forward``
sends to the next rank (``IntermediateTensors({...})``) and the keys it reads from what it received
(``intermediate_tensors["k"]``) do not agree (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.rule_api import fast_walk as _fast_walk

_FACTORY = "make_empty_intermediate_tensors_factory"
_CONTAINER = "IntermediateTensors"


def _str_keys(node):
    """``[(key, node)]`` of a list/tuple of string literals, or of a dict literal's string keys;
    ``None`` when any element or key is not a string literal (``**spread``, a variable)."""
    import ast

    if isinstance(node, (ast.List, ast.Tuple)):
        elts = node.elts
    elif isinstance(node, ast.Dict):
        elts = node.keys
    else:
        return None
    out = []
    for e in elts:
        if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
            return None
        out.append((e.value, e))
    return out


def _is_call_of(n, name) -> bool:
    import ast

    return isinstance(n, ast.Call) and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)


def _class_facts(c, lines) -> dict | None:
    """What class ``c`` allocates, sends and reads, or ``None`` when it allocates nothing literal."""
    import ast

    methods = {m.name: m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    alloc = None
    init = methods.get("__init__")
    if init is not None:
        for n in _fast_walk(init):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == F.PP_HOOK
                                                 and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                 for t in n.targets):
                if isinstance(n.value, ast.Call) and getattr(n.value.func, "id", None) == _FACTORY and n.value.args:
                    alloc = _str_keys(n.value.args[0])
                    alloc_at = n.value.args[0]
                else:
                    return None  # forwarded from another module, or computed
    hook = methods.get(F.PP_HOOK)
    if hook is not None:
        rets = [n for n in _fast_walk(hook) if isinstance(n, ast.Return) and n.value is not None]
        if len(rets) == 1 and isinstance(rets[0].value, ast.Call) and getattr(rets[0].value.func, "id", None) == _CONTAINER \
                and rets[0].value.args:
            alloc = _str_keys(rets[0].value.args[0])
            alloc_at = rets[0].value.args[0]
        else:
            return None
    if alloc is None:
        return None
    fwd = methods.get("forward")
    if fwd is None:
        return None
    sent, reads, known = [], [], True
    uses, none_tested = [], set()
    for n in _fast_walk(fwd):  # one walk, in ast.walk's order
        if _is_call_of(n, _CONTAINER):
            keys = _str_keys(n.args[0]) if n.args else None
            if keys is None:
                known = False  # `**spread` or built elsewhere: the sent keys are not all known
            else:
                sent += keys
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "intermediate_tensors" \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            reads.append((n.slice.value, n))
        elif isinstance(n, ast.Name) and n.id == "intermediate_tensors":
            uses.append(n)
        elif isinstance(n, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
            none_tested.add(id(n.left))
    # the receiving side is only fully read when every use of intermediate_tensors is a literal
    # subscript or the operand of `is None` / `is not None`
    subscripted = {id(r[1].value) for r in reads}
    reads_known = all(id(u) in subscripted or id(u) in none_tested for u in uses)

    def pos(node):
        return [node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                lines.col(node.end_lineno, node.end_col_offset)]

    return {"alloc": [[k, *pos(n)] for k, n in alloc], "alloc_at": pos(alloc_at),
            "sent": [[k, *pos(n)] for k, n in sent] if sent else [], "sent_known": known and bool(sent),
            "reads": [[k, *pos(n)] for k, n in reads], "reads_known": reads_known}


_FACTORY_CALL = re.compile(rb"make_empty_intermediate_tensors_factory\s*\(\s*([\[(])")
_STR = re.compile(rb"""\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*""")
_READ = re.compile(rb"""\bintermediate_tensors\s*\[\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*\]""")
_SENT_KEY = re.compile(rb"""(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*:""")


_RETURN_NONE = re.compile(r"\breturn\b[^\n#]*\bNone\b")
_SEND_DICT = re.compile(rb"IntermediateTensors\(\s*\{")
_SPREAD = frozenset({b"**"})  # a dict literal with `**spread`: its keys are not known


def _literal_keys(data: bytes, start: int, close: bytes) -> frozenset | None:
    """The string literals of a list, tuple or dict literal's keys starting at ``start`` (after its
    opening bracket) up to the bracket ``close`` at its depth; :data:`_SPREAD` for a dict with
    ``**spread``; ``None`` when it holds anything else that could be a key (a name, a nested
    bracket) or is not read here."""
    keys, i, n = set(), start, len(data)
    while i < n:
        m = _STR.match(data, i)
        if m is None:
            rest = data[i:i + 64].lstrip()
            if rest.startswith(b"**"):
                return _SPREAD  # keys it cannot read, as the rule cannot
            if rest.startswith(close) and not keys:
                return frozenset()
            return None
        keys.add(m.group(1) if m.group(1) is not None else m.group(2))
        i = m.end()
        if data[i:i + 1] == b":" and close == b"}":  # a dict key: skip its value to the next comma
            depth, i = 0, i + 1
            while i < n and not (depth == 0 and data[i:i + 1] in (b",", close)):
                c = data[i:i + 1]
                if c in (b"(", b"[", b"{"):
                    depth += 1
                elif c in (b")", b"]", b"}"):
                    depth -= 1
                elif c in (b"'", b'"', b"#"):
                    return None  # a string or comment inside a value: not read here (a yes)
                i += 1
        if data[i:i + 1] == b",":
            i += 1
            while i < n and data[i:i + 1] in b" \t\r\n":
                i += 1
        if data[i:i + 1] == close:
            return frozenset(keys)
    return None


# -- a value sent that may be None ---------------------------------------------------------------
# A sent value's sources: ("none", line) (the literal), "other" (anything else), ("elem", attr) (a slot of
# self.attr), ("layer", attr, i) (element i of what calling a slot of self.attr returns; -1 the
# whole value).  Each rank scenario sets the rank atoms; other tests take both branches.
_SCENARIOS = (("first", {"@first": True, "@last": False}), ("middle", {"@first": False, "@last": False}))
_OTHER = frozenset({"other"})


def _decided(test, env: dict):
    """``True``/``False`` when ``test`` has that value on the scenario's rank whatever its other
    tests are (at most 6 of them), else ``None``."""
    import itertools

    from pp_attr_lint.semantic import guards

    f = guards.formula(test)
    names = sorted(guards.atoms(f) - {"@first", "@last"})
    if len(names) > 6:
        return None
    seen = {guards.evaluate(f, dict(zip(names, vals), **env)) for vals in itertools.product((False, True), repeat=len(names))}
    return seen.pop() if len(seen) == 1 else None


def _join(*states):
    """The join of flow states (``None``: not reached); a name unbound on a path adds nothing (the
    path raises before it sends the name)."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out: dict = {}
    for s in live:
        for k, v in s.items():
            out[k] = out.get(k, frozenset()) | v
    return out


def _own(node):
    """``node`` and its descendants, not entering nested functions, lambdas or classes."""
    import ast

    from pp_attr_lint.index.astutil import child_nodes

    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in child_nodes(n) if not isinstance(c, skip))


def _bound(stmts) -> set:
    """Every local name the statements may bind (assignments, loop and ``with`` targets, walrus,
    imports, nested definitions)."""
    import ast

    out = set()
    for st in stmts:
        for n in _own(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not st:
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                out.update(n.names)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(st.name)
    return out


def _self_attr(node):
    """``attr`` of ``self.attr``, else ``None``."""
    import ast

    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _layer_iter(it):
    """``attr`` when iterating ``it`` yields slots of ``self.attr`` (``self.layers``,
    ``self.layers[a:b]``, ``islice(self.layers, a, b)``), else ``None``."""
    import ast

    if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice):
        it = it.value
    elif isinstance(it, ast.Call) and (getattr(it.func, "id", None) == "islice" or getattr(it.func, "attr", None) == "islice") \
            and it.args:
        it = it.args[0]
    return _self_attr(it)


class _Flow:
    """Which sources each local name may hold on one rank scenario, through one function body;
    ``sends`` maps each reached ``IntermediateTensors({...})`` call to ``{key: sources}``."""

    def __init__(self, env: dict):
        self.env = env
        self.sends: dict = {}
        self.loops: list = []  # per enclosing loop: [break states, continue states]

    def taint(self, state, names):
        if state is None:
            return None
        out = dict(state)
        for n in names:
            out[n] = out.get(n, frozenset()) | _OTHER
        return out

    def value(self, node, state) -> frozenset:
        import ast

        if isinstance(node, ast.Constant) and node.value is None:
            return frozenset({("none", node.lineno)})
        if isinstance(node, ast.Name):
            return state.get(node.id, frozenset())
        if isinstance(node, ast.IfExp):
            d = _decided(node.test, self.env)
            if d is not None:
                return self.value(node.body if d else node.orelse, state)
            return self.value(node.body, state) | self.value(node.orelse, state)
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice) and _self_attr(node.value):
            return frozenset({("elem", _self_attr(node.value))})
        attr = self.layer_call(node, state)
        if attr is not None:
            return frozenset({("layer", attr, -1)})
        return _OTHER

    def layer_call(self, node, state):
        """``attr`` when ``node`` calls a slot of ``self.attr``."""
        import ast

        if not isinstance(node, ast.Call) or node.keywords and any(k.arg is None for k in node.keywords):
            return None
        f = node.func
        if isinstance(f, ast.Name):
            got = state.get(f.id, frozenset())
            if len(got) == 1 and next(iter(got))[0] == "elem":
                return next(iter(got))[1]
            return None
        if isinstance(f, ast.Subscript) and not isinstance(f.slice, ast.Slice):
            return _self_attr(f.value)
        return None

    def bind(self, target, value, sources, state) -> None:
        import ast

        if isinstance(target, ast.Name):
            state[target.id] = sources
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                for n in _bound([ast.Expr(target)]):
                    state[n] = _OTHER
                return
            attr = self.layer_call(value, state) if value is not None else None
            for i, e in enumerate(target.elts):
                if attr is not None:
                    src = frozenset({("layer", attr, i)})
                elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    src = self.value(value.elts[i], state)
                else:
                    src = _OTHER
                self.bind(e, value.elts[i] if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                          else None, src, state)
        # attributes, subscripts: no local name

    def record_sends(self, stmt, state) -> None:
        import ast

        for n in _own(stmt):
            if isinstance(n, ast.Call) and (getattr(n.func, "id", None) == _CONTAINER or getattr(n.func, "attr", None) == _CONTAINER) \
                    and n.args and isinstance(n.args[0], ast.Dict):
                got = self.sends.setdefault(n, {})
                for k, v in zip(n.args[0].keys, n.args[0].values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        got[k.value] = (got.get(k.value, (frozenset(), v))[0] | self.value(v, state), v)

    def walrus(self, stmt, state) -> None:
        import ast

        for n in _own(stmt):
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                state[n.target.id] = _OTHER

    def block(self, body, state):
        for st in body:
            if state is None:
                return None
            state = self.stmt(st, state)
        return state

    def stmt(self, st, state):
        import ast

        state = dict(state)
        if isinstance(st, (ast.If, ast.While)):
            self.record_sends(st.test, state)
            self.walrus(st.test, state)
        elif not isinstance(st, (ast.For, ast.AsyncFor, ast.Try, ast.With, ast.AsyncWith)) \
                and not (hasattr(ast, "TryStar") and isinstance(st, ast.TryStar)):
            self.record_sends(st, state)
            self.walrus(st, state)
        if isinstance(st, ast.Assign):
            src = self.value(st.value, state)
            for t in st.targets:
                self.bind(t, st.value, src, state)
            return state
        if isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.bind(st.target, st.value, self.value(st.value, state), state)
            return state
        if isinstance(st, ast.AugAssign):
            self.bind(st.target, None, _OTHER, state)
            return state
        if isinstance(st, (ast.Return, ast.Raise)):
            return None
        if isinstance(st, (ast.Break, ast.Continue)):
            if self.loops:
                self.loops[-1][0 if isinstance(st, ast.Break) else 1].append(state)
            return None
        if isinstance(st, ast.If):
            d = _decided(st.test, self.env)
            if d is True:
                return self.block(st.body, state)
            if d is False:
                return self.block(st.orelse, state)
            return _join(self.block(st.body, dict(state)), self.block(st.orelse, dict(state)))
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            tgt, elem = None, _OTHER
            if not isinstance(st, ast.While):
                self.record_sends(st.iter, state)
                self.walrus(st.iter, state)
                tgt, it = st.target, st.iter
                if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "enumerate" and it.args \
                        and isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2:
                    self.bind(tgt.elts[0], None, _OTHER, state)
                    tgt, it = tgt.elts[1], it.args[0]
                attr = _layer_iter(it)
                if attr is not None:
                    elem = frozenset({("elem", attr)})
            self.loops.append([[], []])
            head = state  # at the loop's head: before the first round, or after any round
            for _ in range(4):  # the lattice is finite: a few rounds reach the fixpoint
                s = dict(head)
                if tgt is not None:
                    self.bind(tgt, None, elem, s)
                out = self.block(st.body, s)
                nxt = _join(state, out, *self.loops[-1][1])
                if nxt == head:
                    break
                head = nxt
            else:  # no fixpoint yet: what the body binds may hold anything
                head = self.taint(head, _bound(st.body))
            breaks = self.loops.pop()[0]
            return _join(self.block(st.orelse, dict(head)), *breaks)
        if isinstance(st, ast.Try) or (hasattr(ast, "TryStar") and isinstance(st, ast.TryStar)):
            names = _bound([st])
            s0 = self.taint(state, names)
            body = self.block(st.body, dict(s0))
            handlers = [self.block(h.body, self.taint(s0, [h.name] if h.name else [])) for h in st.handlers]
            res = _join(self.block(st.orelse, dict(body)) if body is not None else None, *handlers)
            if st.finalbody:
                res = self.block(st.finalbody, _join(res, s0))
            return res
        if isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.record_sends(item.context_expr, state)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None, _OTHER, state)
            return self.block(st.body, state)
        if isinstance(st, ast.Delete):
            for t in st.targets:
                if isinstance(t, ast.Name):
                    state.pop(t.id, None)
            return state
        # match, nested definitions, imports, global/nonlocal: what they bind is not followed
        return self.taint(state, _bound([st]))


def _none_sends(fn, lines) -> list:
    """``[key, scenario, sources, row, col, end_row, end_col]`` for each value of an
    ``IntermediateTensors({...})`` that ``fn`` sends whose every source on that rank scenario is
    the ``None`` literal (``["none", line]``) or an element of a layer's return (``["layer", attr,
    i]``): what the check
    confirms through the layer's ``forward``."""
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [x.arg for x in (a.vararg, a.kwarg) if x]
    out = []
    for scenario, env in _SCENARIOS:
        flow = _Flow(env)
        flow.block(fn.body, {p: _OTHER for p in params})
        for _call, keys in flow.sends.items():
            for k, (sources, node) in keys.items():
                if sources and all(s != "other" and (s[0] == "none" or s[0] == "layer" and s[2] >= 0) for s in sources):
                    out.append([k, scenario, sorted([list(s) for s in sources], key=repr),
                                node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                                lines.col(node.end_lineno, node.end_col_offset)])
        if out:
            break  # the first rank it holds on is the one reported
    return out


def _none_positions(fn) -> list:
    """The positions that are the ``None`` literal in every tuple ``fn`` returns (``return h,
    None``), when every ``return`` gives a tuple of one length and ``fn`` is no generator."""
    import ast

    rets, n = [], None
    for node in _own(fn):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return []
        if isinstance(node, ast.Return):
            v = node.value
            if not isinstance(v, ast.Tuple) or any(isinstance(e, ast.Starred) for e in v.elts) \
                    or (n is not None and len(v.elts) != n):
                return []
            n = len(v.elts)
            rets.append(v)
    if not rets:
        return []
    return [i for i in range(n) if all(isinstance(r.elts[i], ast.Constant) and r.elts[i].value is None for r in rets)]


_LIST_STORE = re.compile(r"self\.(\w+)\s*\)?\s*=\s*(?:[\w.]+\.)?make_layers\s*\(")


def _layer_stores(c, lines) -> dict:
    """``{attr: [[method, constructor or None], ...]}``: each store of ``self.attr``, for an
    ``attr`` that a ``make_layers`` call is assigned to, in a method of class ``c``, with the class
    the ``make_layers`` lambda builds (``lambda prefix: Layer(...)``); ``None`` for any other store
    of it.  Only the methods whose text names ``self.attr`` are walked."""
    import ast

    from pp_attr_lint.index.astutil import dotted_name

    attrs = set(_LIST_STORE.findall("".join(lines.lines[c.lineno - 1:c.end_lineno])))
    if not attrs:
        return {}
    named = re.compile(r"self\.(?:%s)\b" % "|".join(map(re.escape, sorted(attrs))))
    out: dict = {}
    for m in c.body:
        if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or not named.search("".join(lines.lines[m.lineno - 1:m.end_lineno])):
            continue
        for n in _own(m):
            if isinstance(n, ast.Assign):
                targets = [t for tt in n.targets for t in (tt.elts if isinstance(tt, (ast.Tuple, ast.List)) else [tt])]
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                targets = [n.target]
            else:
                continue
            for t in targets:
                attr = _self_attr(t)
                if attr not in attrs:
                    continue
                ctor = None
                v = n.value
                if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple) and t is n.targets[0].elts[-1] \
                        and isinstance(v, ast.Call) and (getattr(v.func, "id", None) == "make_layers"
                                                         or getattr(v.func, "attr", None) == "make_layers"):
                    fn = v.args[1] if len(v.args) > 1 else next((k.value for k in v.keywords if k.arg == "layer_fn"), None)
                    if isinstance(fn, ast.Lambda) and isinstance(fn.body, ast.Call):
                        ctor = dotted_name(fn.body.func)
                out.setdefault(attr, []).append([m.name, ctor])
    return out


class IntermediateTensorKeys(Rule):
    def prefilter(self, data: bytes) -> bool:
        """The file sends intermediate tensors and its keys may disagree, or sends a dict literal
        (one of whose values may be ``None``).  It says no only when there is no such literal and
        the one allocation is a factory call with a literal key list, every key read
        (``intermediate_tensors["k"]``) is allocated, and every ``IntermediateTensors({...})`` has
        exactly the allocated keys (or keys it cannot read: ``**spread``, which leaves the sends
        unjudged); anything else, a ``make_empty_intermediate_tensors`` method included, is a yes."""
        if b"IntermediateTensors(" not in data:
            return False
        if _SEND_DICT.search(data):
            return True  # a value it sends may be None (followed through the layers' returns)
        calls = list(_FACTORY_CALL.finditer(data))
        if b"def make_empty_intermediate_tensors" in data or len(calls) > 1:
            return True
        if not calls:
            return False  # nothing literal allocated here: the rule judges nothing
        m = calls[0]
        keys = _literal_keys(data, m.end(), b"]" if m.group(1) == b"[" else b")")
        if keys is None:
            return False  # a computed key list: the rule does not judge the class
        reads = {a if a is not None else b for a, b in _READ.findall(data)}
        if not reads <= keys:
            return True
        i = data.find(b"IntermediateTensors(")
        while i >= 0:
            j = i + len(b"IntermediateTensors(")
            while data[j:j + 1] in (b" ", b"\t", b"\n", b"\r"):
                j += 1
            if data[j:j + 1] == b"{":
                sent = _literal_keys(data, j + 1, b"}")
                if sent is None or (sent is not _SPREAD and sent and sent != keys):
                    return True  # keys that may differ, or a literal not read here
            elif data[j:j + 1] != b")":
                pass  # IntermediateTensors(tensors) built elsewhere: the sends are not judged
            i = data.find(b"IntermediateTensors(", j)
        return False

    def collect(self, tree, lines):
        """Per class: ``keys`` (what it allocates, sends and reads), ``none`` (values it may send as
        ``None``, :func:`_none_sends`), ``returns`` (``[line, positions]`` of its ``forward``'s
        ``None`` tuple elements) and ``stores`` (:func:`_layer_stores`); ``None`` when empty."""
        import ast

        text = "".join(lines.lines)
        sends = "IntermediateTensors(" in text
        layers = "make_layers" in text
        out: dict = {}
        for c in tree.body:
            if not isinstance(c, ast.ClassDef):
                continue
            if sends and F.PP_HOOK in "".join(lines.lines[c.lineno - 1:c.end_lineno]):
                got = _class_facts(c, lines)
                if got is not None:
                    out.setdefault("keys", {})[c.name] = got
            fwd = next((m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward"),
                       None)
            if fwd is not None:
                body = "".join(lines.lines[fwd.lineno - 1:fwd.end_lineno])
                if sends and "IntermediateTensors(" in body:
                    ns = _none_sends(fwd, lines)
                    if ns:
                        out.setdefault("none", {})[c.name] = ns
                # a tuple with a None element, on the line of its return (a return split over
                # lines is not read: a missed position only keeps a finding back)
                if _RETURN_NONE.search(body):
                    pos = _none_positions(fwd)
                    if pos:
                        out.setdefault("returns", {})[c.name] = [fwd.lineno, pos]
            # layer lists are read in files that send (a base's list elsewhere: not established)
            if sends and layers and "make_layers" in "".join(lines.lines[c.lineno - 1:c.end_lineno]):
                st = _layer_stores(c, lines)
                if st:
                    out.setdefault("stores", {})[c.name] = st
        return out or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        try:
            if not rf.module_runs_under_pp(ctx.module):
                return []
        except Exception:  # noqa: BLE001  (cannot tell: judge it)
            pass
        out = []
        for cls, sends in facts.get("none", {}).items():
            out += rf.unless_refused(self.code, cls, self._none_findings(ctx, cls, sends))
        for cls, f in facts.get("keys", {}).items():
            start = len(out)
            allocated = {k for k, *_ in f["alloc"]}
            sent = {k for k, *_ in f["sent"]}
            for k, *p in f["reads"]:
                if k not in allocated:
                    out.append(self.finding(
                        ctx, *p, f"`{cls}.forward` reads `intermediate_tensors[{k!r}]`, a key its "
                        f"`make_empty_intermediate_tensors` does not allocate: the tensors a rank > 0 receives "
                        f"hold only the allocated keys, so the read raises KeyError on every pipeline-parallel "
                        f"rank but the first.",
                        [f"allocated: {', '.join(sorted(allocated))}",
                         "fails on every pipeline-parallel rank > 0 (it receives)"],
                        help=f"Allocate {k!r} in `make_empty_intermediate_tensors` (and send it), or stop reading it",
                        witness={"ranks": "every pipeline-parallel rank but the first", "config": {}}))
            if f["sent_known"]:
                for k, *p in f["sent"]:
                    if k not in allocated:
                        out.append(self.finding(
                            ctx, *p, f"`{cls}.forward` sends {k!r} to the next pipeline-parallel rank, a key its "
                            f"`make_empty_intermediate_tensors` does not allocate: the receiving rank has no "
                            f"buffer for it (KeyError in the model runner on every rank > 0).",
                            [f"allocated: {', '.join(sorted(allocated))}; sent: {', '.join(sorted(sent))}"],
                            help=f"Allocate {k!r} in `make_empty_intermediate_tensors`, or stop sending it",
                            witness={"ranks": "every pipeline-parallel rank but the first", "config": {}}))
                if f["reads_known"]:
                    read = {k for k, *_ in f["reads"]}
                    for k, *p in f["alloc"]:
                        if k not in sent and k not in read:
                            out.append(self.finding(
                                ctx, *p, f"`{cls}` allocates {k!r} for what it receives from the previous "
                                f"pipeline-parallel rank, but its `forward` never sends (nor reads) it: a model "
                                f"runner that fills every allocated key from what it received raises KeyError on "
                                f"every rank > 0 (vLLM's Model Runner V2, `vllm/v1/worker/gpu/model_runner.py`, "
                                f"chosen with `VLLM_USE_V2_MODEL_RUNNER=1`; the XPU runner, vLLM PR 55913); the "
                                f"default v1 GPU and CPU runners copy only the received keys and pass.",
                                [f"allocated: {', '.join(sorted(allocated))}; sent on ranks that are not last: "
                                 f"{', '.join(sorted(sent))}; read on ranks that are not first: "
                                 f"{', '.join(sorted(read)) or 'none'}"],
                                help=f"Allocate only the keys that are sent: drop {k!r} from "
                                     f"`make_empty_intermediate_tensors` (or send it)",
                                witness={"ranks": "every pipeline-parallel rank but the first, on a model runner "
                                                  "that fills every allocated key (vLLM's Model Runner V2, "
                                                  "VLLM_USE_V2_MODEL_RUNNER=1; the XPU runner)",
                                         "config": {}}))
            out[start:] = rf.unless_refused(self.code, cls, out[start:])
        return out

    def _none_findings(self, ctx, cls: str, sends: list) -> list:
        """Findings of the values ``cls.forward`` sends that are ``None`` on a rank: the literal,
        or an element every ``return`` of the layer's ``forward`` gives as ``None``."""
        out = []
        for key, scenario, sources, *p in sends:
            why = []
            nones = sorted({s[1] for s in sources if s[0] == "none"})
            if nones:
                why.append(f"the `None` literal of line{'s' if len(nones) > 1 else ''} "
                           f"{', '.join(map(str, nones))} reaches this line there")
            for s in sources:
                if s[0] == "none":
                    continue
                got = self._layer_none(ctx, (ctx.module, cls), s[1], s[2])
                if got is None:
                    break
                why.append(got)
            else:
                sender = "the first pipeline-parallel rank (rank 0)" if scenario == "first" \
                    else "a middle pipeline-parallel rank (pipeline_parallel_size >= 3)"
                receiver = "rank 1" if scenario == "first" else "the rank after it"
                out.append(self.finding(
                    ctx, *p, f"`{cls}.forward` sends {key!r} to the next pipeline-parallel rank as `None` on {sender}: "
                    f"{receiver} receives `None` where a tensor is expected, and vLLM's v1 model runner copies every "
                    f"received tensor into its buffers (`v[:num_tokens]`): TypeError: 'NoneType' object is not "
                    f"subscriptable on {receiver}.",
                    [*why,
                     f"on {sender}, every value this line can send for {key!r} is `None`"],
                    help=f"Send a tensor for {key!r} (the layers' running residual), or stop sending and allocating it",
                    witness={"ranks": f"{receiver}, which receives what {sender} sends", "config": {}}))
        return out

    def _layer_none(self, ctx, key, attr: str, i: int) -> str | None:
        """Why element ``i`` of what a slot of ``self.attr`` of class ``key`` returns is ``None``:
        every store of ``attr`` that runs for ``key`` is a ``make_layers`` list of one class,
        whose ``forward`` gives ``None`` there in every ``return``; ``None`` when that is not
        established (unresolved classes included)."""
        from pp_attr_lint.resolve import EXTERNAL, Unresolved

        memo = ctx.shared.setdefault(("PPA401", "layer-none"), {})
        if (key, attr, i) in memo:
            return memo[(key, attr, i)]
        got = None
        try:
            mro = [e for e in ctx.resolver.mro(key) if e[0] != EXTERNAL]
            ctors = []
            for k in mro:
                for m, scope in ctx.resolver.class_record(k)["methods"].items():
                    if attr not in scope.get("assigns", {}):
                        continue
                    if next(e for e in mro if m in ctx.resolver.class_record(e)["methods"]) != k:
                        continue  # overridden: this store does not run for `key`
                    stores = ((ctx.facts(self.code, k[0]) or {}).get("stores", {}).get(k[1], {})).get(attr, [])
                    mine = [c for meth, c in stores if meth == m]
                    if not mine or None in mine:
                        raise Unresolved("receiver-unresolved", "a store that is not a make_layers list")
                    ctors += [(k, c) for c in mine]
            names = set()
            for k, ctor in ctors:
                layer = ctx.resolver.resolve_class(k[0], ctor)
                if layer is None:
                    raise Unresolved("receiver-unresolved", ctor)
                lmro = ctx.resolver.mro(layer)
                owner = None
                for e in lmro:
                    if e[0] == EXTERNAL:
                        break
                    methods = ctx.resolver.class_record(e)["methods"]
                    if "__call__" in methods:
                        raise Unresolved("dynamic-class", "__call__")
                    if "forward" in methods:
                        owner = e
                        break
                ret = (ctx.facts(self.code, owner[0]) or {}).get("returns", {}).get(owner[1]) if owner else None
                if ret is None or i not in ret[1]:
                    raise Unresolved("receiver-unresolved", "not None")
                from pp_attr_lint.textio import display_path

                path = ctx.project.path(owner[0])
                names.add(f"`self.{attr}` holds `{layer[1]}` layers (`make_layers`); every `return` of "
                          f"`{owner[1]}.forward` ({display_path(path) if path else owner[0]}:{ret[0]}) gives "
                          f"`None` as element {i}")
            if ctors:
                got = "; ".join(sorted(names))
        except (Unresolved, StopIteration, KeyError, RecursionError):
            got = None
        memo[(key, attr, i)] = got
        return got


RULE = IntermediateTensorKeys(
    code="PPA401",
    name="intermediate-tensor-keys",
    summary="intermediate-tensor keys allocated, sent and read by a model do not agree",
    needles=("IntermediateTensors(",),
    version=2,
)

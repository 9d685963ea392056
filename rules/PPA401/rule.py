"""PPA401 intermediate-tensor-keys: the keys a model allocates for what it receives from the
previous pipeline-parallel rank (``make_empty_intermediate_tensors``), the keys its ``forward``
sends to the next rank (``IntermediateTensors({...})``) and the keys it reads from what it received
(``intermediate_tensors["k"]``) do not agree (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule

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


def _calls(fn, name):
    import ast

    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name):
            yield n


def _class_facts(c, lines) -> dict | None:
    """What class ``c`` allocates, sends and reads, or ``None`` when it allocates nothing literal."""
    import ast

    methods = {m.name: m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    alloc = None
    init = methods.get("__init__")
    if init is not None:
        for n in ast.walk(init):
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
        rets = [n for n in ast.walk(hook) if isinstance(n, ast.Return) and n.value is not None]
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
    for call in _calls(fwd, _CONTAINER):
        keys = _str_keys(call.args[0]) if call.args else None
        if keys is None:
            known = False  # `**spread` or built elsewhere: the sent keys are not all known
            continue
        sent += keys
    for n in ast.walk(fwd):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "intermediate_tensors" \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            reads.append((n.slice.value, n))
    # the receiving side is only fully read when every use of intermediate_tensors is a literal subscript
    uses = [n for n in ast.walk(fwd) if isinstance(n, ast.Name) and n.id == "intermediate_tensors"]
    subscripted = {id(r[1].value) for r in reads}
    reads_known = all(id(u) in subscripted or _is_none_test(fwd, u) for u in uses)

    def pos(node):
        return [node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                lines.col(node.end_lineno, node.end_col_offset)]

    return {"alloc": [[k, *pos(n)] for k, n in alloc], "alloc_at": pos(alloc_at),
            "sent": [[k, *pos(n)] for k, n in sent] if sent else [], "sent_known": known and bool(sent),
            "reads": [[k, *pos(n)] for k, n in reads], "reads_known": reads_known}


def _is_none_test(fn, name_node) -> bool:
    """Whether ``name_node`` is the operand of ``is None`` / ``is not None`` or of an ``assert``
    (``assert intermediate_tensors is not None``), which reads no key."""
    import ast

    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and n.left is name_node and all(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
            return True
    return False


_FACTORY_CALL = re.compile(rb"make_empty_intermediate_tensors_factory\s*\(\s*([\[(])")
_STR = re.compile(rb"""\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*""")
_READ = re.compile(rb"""\bintermediate_tensors\s*\[\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*\]""")
_SENT_KEY = re.compile(rb"""(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*:""")


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


class IntermediateTensorKeys(Rule):
    def prefilter(self, data: bytes) -> bool:
        """The file sends intermediate tensors and its keys may disagree.  It says no only when
        the one allocation is a factory call with a literal key list, every key read
        (``intermediate_tensors["k"]``) is allocated, and every ``IntermediateTensors({...})`` has
        exactly the allocated keys (or keys it cannot read: ``**spread``, which leaves the sends
        unjudged); anything else, a ``make_empty_intermediate_tensors`` method included, is a yes."""
        if b"IntermediateTensors(" not in data:
            return False
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
        import ast

        if "IntermediateTensors(" not in "".join(lines.lines):
            return None  # runs on every parsed file: nothing is sent here
        out = {}
        for c in tree.body:
            if isinstance(c, ast.ClassDef) and F.PP_HOOK in "".join(lines.lines[c.lineno - 1:c.end_lineno]):
                got = _class_facts(c, lines)
                if got is not None:
                    out[c.name] = got
        return out or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint import ranks

        try:
            if not ranks.RankFacts.of(ctx).module_runs_under_pp(ctx.module):
                return []
        except Exception:  # noqa: BLE001  (cannot tell: judge it)
            pass
        out = []
        for cls, f in facts.items():
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
                         f"fails on every pipeline-parallel rank > 0 (it receives)"],
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
                                f"runner that fills every allocated key from what it received (vLLM's XPU runner, "
                                f"vLLM PR 55913) raises KeyError on every rank > 0; the v1 GPU and CPU runners copy "
                                f"only the received keys and pass.",
                                [f"allocated: {', '.join(sorted(allocated))}; sent on ranks that are not last: "
                                 f"{', '.join(sorted(sent))}; read on ranks that are not first: "
                                 f"{', '.join(sorted(read)) or 'none'}"],
                                help=f"Allocate only the keys that are sent: drop {k!r} from "
                                     f"`make_empty_intermediate_tensors` (or send it)",
                                witness={"ranks": "every pipeline-parallel rank but the first, on a model runner "
                                                  "that fills every allocated key (vLLM's XPU runner)",
                                         "config": {}}))
        return out


RULE = IntermediateTensorKeys(
    code="PPA401",
    name="intermediate-tensor-keys",
    summary="intermediate-tensor keys allocated, sent and read by a model do not agree",
    needles=("IntermediateTensors(",),
    version=1,
)

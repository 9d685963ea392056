"""PPA401 intermediate-tensor-keys: the keys a model allocates for what it receives from the
previous pipeline-parallel rank (``make_empty_intermediate_tensors``), the keys its ``forward``
sends to the next rank (``IntermediateTensors({...})``) and the keys it reads from what it received
(``intermediate_tensors["k"]``) do not agree (see README.md)."""

from __future__ import annotations

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
        if isinstance(n, ast.Name) and n.id == "intermediate_tensors" and isinstance(getattr(n, "ctx", None), ast.Load):
            pass
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


class IntermediateTensorKeys(Rule):
    def collect(self, tree, lines):
        import ast

        out = {}
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
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

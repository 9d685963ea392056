"""PPA301 attribute-of-skipped-init: an ``__init__`` that skips a base ``__init__``
(``nn.Module.__init__(self)``, ``super(Parent, self).__init__()``, or no call at all) leaves
the attributes only that base sets missing, and an inherited method or a caller reads one of them
(see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.textio import display_path, read_source


# `class Name(FirstBase` at any indent (group 1: the indent, 2: the name, 3: the first base, if any)
_CLASS_LINE = re.compile(rb"^([ \t]*)class[ \t]+(\w+)[ \t]*(?:\(\s*([\w.]+))?", re.M)
# the explicit calls the prefilter looks for, read backward from each `.__init__(`:
# `super(P, self)` (group 1: P) right before it, or a dotted name `X` (bytes of _NAME_BYTES, not
# after `)` or `]`) right before it and `self` as the first argument (_SELF_ARG) after it
_SUPER_CALL = re.compile(rb"super\(\s*([\w.]+)\s*,\s*self\s*\)")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_SELF_ARG = re.compile(rb"\s*self\s*[,)]")
_LOOK_BACK = 4096  # bytes before `.__init__(` searched for its `super(`


# characters str.splitlines() breaks at and Python's tokenizer does not
_OTHER_LINE_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _enclosing_class(data: bytes, pos: int, indent: int):
    """The match of :data:`_CLASS_LINE` for the nearest ``class`` line above byte ``pos`` that is
    indented less than ``indent``, or ``None``."""
    k = data.rfind(b"class", 0, pos)
    while k >= 0:
        start = data.rfind(b"\n", 0, k) + 1
        m = _CLASS_LINE.match(data, start)
        if m is not None and m.start(2) - len(b"class") - 1 <= k <= m.start(2) and len(m.group(1)) < indent:
            return m
        k = data.rfind(b"class", 0, k)
    return None


class SkippedInitAttribute(Rule):
    # the files that read `x.end_layer` on another object too (what :meth:`_judge_callers` judges)
    wants_attribute_reads = True

    def prefilter(self, data: bytes) -> bool:
        """An explicit ``X.__init__(self...)`` or ``super(P, self).__init__(`` that may skip a base:
        ``X`` is not the first base of the enclosing class, or ``P`` is not that class itself
        (``class C(nn.Module)`` calling ``nn.Module.__init__(self)``, or ``super(C, self)`` in
        ``C``, runs the same chain as ``super().__init__()`` and skips nothing).  The enclosing
        class is the nearest ``class`` line above with a smaller indent; a call whose class is not
        found counts as a hit."""
        if b".__init__(self" not in data and b", self).__init__(" not in data:
            return False
        i = data.find(b".__init__(")
        while i >= 0:
            # the call that ends here, found backward from each occurrence (a regular expression
            # run over the whole file tries its dotted-name branch at almost every byte)
            pos = name = None
            if data[i - 1:i] == b")":  # super(P, self).__init__(
                k = data.rfind(b"super(", max(0, i - _LOOK_BACK), i)
                m = _SUPER_CALL.fullmatch(data, k, i) if k >= 0 else None
                if m is not None:
                    pos, name, against = k, m.group(1), 2
            else:  # X.__init__(self
                j = i
                while j > 0 and data[j - 1] in _NAME_BYTES:
                    j -= 1
                if j < i and data[j - 1:j] not in (b")", b"]") and _SELF_ARG.match(data, i + len(b".__init__(")):
                    pos, name, against = j, data[j:i], 3
            if pos is not None:
                line = data[data.rfind(b"\n", 0, pos) + 1:pos]
                indent = len(line) - len(line.lstrip())
                owner = _enclosing_class(data, pos, indent)
                if owner is None or name != owner.group(against):
                    return True  # P is not the class itself / X is not its first base
            i = data.find(b".__init__(", i + 1)
        return False

    def prefetch(self, module, summary, resolver):
        """The MRO of the classes :meth:`check` judges."""
        from pp_attr_lint.resolve import Unresolved

        for cname, rec in summary["classes"].items():
            if _judged(cname, rec):
                try:
                    resolver.mro((module, cname))
                except Unresolved:
                    pass

    def check(self, ctx):
        out = []
        for cname, rec in ctx.summary["classes"].items():
            if not _judged(cname, rec):
                continue
            init = rec["methods"]["__init__"]
            f = self._judge_class(ctx, (ctx.module, cname), rec, init)
            if f is not None:
                out.append(f)
        out.extend(self._judge_callers(ctx))
        return out

    # -- the class that skips ------------------------------------------------------------------
    def skipped(self, ctx, key):
        """``[(base, its __init__ scope, attributes it sets that no executed code sets)]``."""
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        r = ctx.resolver
        memo = ctx.shared.setdefault(("PPA301", "skipped"), {})
        if key in memo:
            return memo[key]
        memo[key] = []
        try:
            r.check_resolved(key)
            mro = r.mro(key)
            inits = r.executed_inits(key)
        except Unresolved:
            return []
        executed = {id(s) for _, s in inits}
        if any(s.get("passes_self") for _, s in inits):
            return []
        out = []
        for entry in mro[1:]:
            if entry[0] == EXTERNAL:
                continue
            scope = r.class_record(entry)["methods"].get("__init__")
            if scope is None or id(scope) in executed:
                continue
            missing = []
            for attr in sorted(scope["assigns"]):
                if attr in F.SET_BY_ENGINE:
                    continue
                try:
                    if r.attribute_status(key, attr) == "absent":
                        missing.append(attr)
                except Unresolved:
                    return []
            if missing:
                out.append((entry, scope, missing))
        memo[key] = out
        return out

    def _judge_class(self, ctx, key, rec, init):
        skipped = self.skipped(ctx, key)
        if not skipped:
            return None
        r = ctx.resolver
        mro = r.mro(key)
        reads = []
        for base, _scope, missing in skipped:
            for attr in missing:
                got = self._inherited_read(ctx, key, mro, attr)
                if got is not None:
                    reads.append((base, attr, got))
        if not reads:
            return None
        base, attr, (owner, method, path, line) = reads[0]
        how = _how(init)
        message = (f"`{key[1]}.__init__` {how} skips `{base[1]}.__init__`, the only code that sets `{attr}`; "
                   f"`{owner[1]}.{method}` reads `self.{attr}` ({display_path(path)}:{line}) on `{key[1]}` instances: "
                   f"AttributeError.")
        explanation = [f"MRO: {' -> '.join(e[1] for e in mro)}",
                       f"executed: {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(key))}"]
        explanation += [f"`{a}` is set only in skipped `{b[1]}.__init__` and read by `{o[1]}.{m}` "
                        f"({display_path(p)}:{ln})" for b, a, (o, m, p, ln) in reads]
        explanation.append(f"help: call `{base[1]}.__init__` (or `super().__init__(...)`), or set "
                           + ", ".join(f"`self.{a}`" for a in dict.fromkeys(a for _, a, _ in reads))
                           + f" in `{key[1]}.__init__`")
        line = init["line"]
        return self.finding(ctx, line, 0, line, 0, message, explanation)

    def _inherited_read(self, ctx, key, mro, attr):
        """The first method that ``key`` really runs (no class before its owner on the MRO
        defines it) and that reads ``self.attr``: ``(owner, method, path, line)``."""
        from pp_attr_lint.resolve import EXTERNAL
        r = ctx.resolver
        seen: set[str] = set()
        for entry in mro:
            if entry[0] == EXTERNAL:
                continue
            crec = r.class_record(entry)
            for mname in crec["methods"]:
                if mname in seen or mname not in F.ENGINE_METHODS:
                    continue  # only methods the engine is known to call on every model
                seen.add(mname)
                line = self._self_reads(ctx, entry).get(mname, {}).get(attr)
                if line is not None:
                    return (entry, mname, r.src.path(entry[0]), line)
            seen.update(crec["body_names"])
        return None

    def _self_reads(self, ctx, key) -> dict:
        """``{method: {attr: first line}}`` of ``self.attr`` loads in class ``key``'s methods
        (parsed once per run, only for classes whose subclasses skip an ``__init__``: the class's own
        lines when it is a top-level class, else its whole module)."""
        memo = ctx.shared.setdefault(("PPA301", "reads"), {})
        if key in memo:
            return memo[key]
        memo[key] = {}
        import ast

        path = ctx.resolver.src.path(key[0])
        rec = ctx.resolver.class_record(key)
        try:
            text = read_source(path).text
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return {}
        tree = None
        if rec.get("col") == 0 and rec.get("end_line") and not any(c in text for c in _OTHER_LINE_BREAKS):
            # a top-level class: only its own lines are parsed, not the whole module (blank lines
            # before it keep the line numbers); the whole module when that does not give the class
            lines = text.splitlines(keepends=True)
            try:
                tree = ast.parse("\n" * (rec["line"] - 1) + "".join(lines[rec["line"] - 1:rec["end_line"]]))
            except (SyntaxError, ValueError):
                tree = None
            if tree is None or len(tree.body) != 1 or getattr(tree.body[0], "name", None) != key[1] \
                    or tree.body[0].lineno != rec["line"]:
                tree = None
        if tree is None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, TypeError):
                return {}
        parts = key[1].split(".")
        body = tree.body
        node = None
        for part in parts:
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return {}
            body = node.body
        out: dict = {}
        for fn in body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            found: dict = {}
            for node in _unconditional(fn.body):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and \
                            isinstance(sub.value, ast.Name) and sub.value.id == me:
                        found[sub.attr] = min(found.get(sub.attr, sub.lineno), sub.lineno)
            out[fn.name] = found
        memo[key] = out
        return out

    # -- the callers ---------------------------------------------------------------------------
    def _judge_callers(self, ctx):
        """Reads of a watched attribute (``x.end_layer``) whose receiver is typed as a base of
        a class that skips the ``__init__`` setting it (found in the base's module and the
        checked files)."""
        from pp_attr_lint.resolve import Unresolved
        out = []
        r = ctx.resolver
        from pp_attr_lint.index.summary import scopes_by_line

        scopes = None
        for read in ctx.summary["reads"]:
            chain = read["chain"]
            if not chain or read.get("guards") or read["attr"] not in self.attributes:
                continue
            if scopes is None:
                scopes = scopes_by_line(ctx.summary)
            scope = scopes.get((read["class"], read["function"]))
            if scope is None or (len(chain) == 1 and chain[0] == scope.get("self")):
                continue
            try:
                cands = r.chain_candidates(tuple(chain), ctx.module,
                                           (ctx.module, read["class"]) if read["class"] else None, scope)
            except Unresolved:
                continue
            if not cands:
                continue
            for base in sorted(cands):
                try:
                    if r.attribute_status(base, read["attr"]) != "present":
                        continue
                except Unresolved:
                    continue
                for sub in self._subclasses(ctx, base):
                    missing = [m for b, _, ms in self.skipped(ctx, sub) for m in ms]
                    if read["attr"] in missing:
                        recv = ".".join(chain)
                        message = (f"`{recv}` is typed as `{base[1]}`, but its subclass `{sub[1]}` skips the `__init__` "
                                   f"that sets `{read['attr']}` and never sets it: reading `{recv}.{read['attr']}` "
                                   f"raises AttributeError when it holds a `{sub[1]}`.")
                        explanation = [f"`{sub[1]}` MRO: {' -> '.join(e[1] for e in r.mro(sub))}",
                                       f"`{sub[1]}()` runs {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(sub))}"]
                        out.append(self.finding(ctx, read["line"], read["col"], read["end_line"], read["end_col"],
                                                message, explanation))
                        break
                else:
                    continue
                break
        return out

    def _subclasses(self, ctx, base):
        from pp_attr_lint.resolve import Unresolved
        r = ctx.resolver
        # the other checked files its own prefilter accepts: the same whichever rules run
        mods = {base[0], ctx.module} | {st.module for st in ctx.checked if ctx.accepts(st, self)}
        out = []
        for mod in sorted(mods):
            s = ctx.project.summary(mod)
            if s is None:
                continue
            for cname in s["classes"]:
                key = (mod, cname)
                if key == base:
                    continue
                try:
                    if base in r.mro(key):
                        out.append(key)
                except Unresolved:
                    continue
        return out


def _unconditional(body: list):
    """The parts of a function body that run on every call: plain statements, the tests of
    ``if``/``while``, the iterables of ``for``, the bodies of ``with`` and ``try`` (not the branches
    of an ``if``, a loop's body or a handler: a read there may depend on an argument, e.g. SGLang's
    ``forward(..., get_embedding=False)`` reads ``self.pooler`` only when asked for embeddings)."""
    import ast

    out = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            out.append(stmt.test)
            if isinstance(stmt, ast.If) and _exits(stmt.body) and not stmt.orelse:
                continue
            if isinstance(stmt, ast.If) and (_exits(stmt.body) or _exits(stmt.orelse)):
                break  # what follows runs only on one branch
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.append(stmt.iter)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.extend(item.context_expr for item in stmt.items)
            out.extend(_unconditional(stmt.body))
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            out.extend(_unconditional(stmt.body))
        elif isinstance(stmt, ast.Match):
            out.append(stmt.subject)
        else:
            out.append(stmt)
        if isinstance(stmt, (ast.Return, ast.Raise)):
            break
    return out


def _exits(body: list) -> bool:
    import ast

    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


_PLAIN_BASES = {"object", "nn.Module", "torch.nn.Module", "Module", "ABC", "abc.ABC", "Protocol", "Generic"}


def _judged(cname: str, rec: dict) -> bool:
    """Whether :meth:`SkippedInitAttribute.check` judges this top-level class."""
    init = rec["methods"].get("__init__")
    return init is not None and "." not in cname and _may_skip(init, rec)


def _may_skip(init: dict, rec: dict) -> bool:
    """Cheap test before any resolution: the ``__init__`` calls a base explicitly
    (``nn.Module.__init__(self)``, ``super(P, self)``), or calls none while the class has a base
    that may define one."""
    calls = init.get("init_calls", [])
    if any(c[0] == "explicit" or (c[0] == "super" and c[1]) or c[0] == "unknown" for c in calls):
        return True
    return not calls and any(b is not None and b not in _PLAIN_BASES for b in rec["bases"])


def _how(init: dict) -> str:
    calls = init.get("init_calls", [])
    for c in calls:
        if c[0] == "explicit":
            return f"calls `{c[1]}.__init__(self)`, which"
        if c[0] == "super" and c[1]:
            return f"calls `super({c[1]}, self).__init__()`, which"
    if any(c[0] == "super" for c in calls):
        return "calls `super().__init__()`, whose chain along the MRO"
    return "calls no base `__init__` and so"


RULE = SkippedInitAttribute(
    code="PPA301",
    name="attribute-of-skipped-init",
    summary="Attribute set only by a base __init__ that this class skips is read",
    needles=(".__init__(self", ", self).__init__("),
    attributes=F.RANGE_ATTRIBUTES,  # the reads its callers' check judges (`self.pool.end_layer`)
)

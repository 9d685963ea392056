"""PPA201 missing-pp-hook: a class with ``SupportsPP`` on its MRO that neither defines nor assigns
``make_empty_intermediate_tensors``, so the protocol's stub answers (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.textio import display_path
from pp_attr_lint.unjudged import MISSING_CODE


def _stub_kind(fn) -> str:
    """``stub`` when a method body only holds a docstring, ``...``, ``pass`` or
    ``raise NotImplementedError`` (it answers ``None`` or raises), else ``impl``."""
    import ast

    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return "stub"
    if len(body) == 1 and (isinstance(body[0], ast.Pass) or (
            isinstance(body[0], ast.Raise) and "NotImplementedError" in ast.unparse(body[0]))):
        return "stub"
    return "impl"


REGISTER_NEEDLE = f".{F.REGISTER_METHOD}(".encode()
_ASSIGNED = re.compile(rb"[ \t]*(?::[^=\n]*)?=(?!=)")  # after the hook's name: an assignment to it
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _own_hook(data: bytes, pos: int) -> bool:
    """Whether the body of the top-level class whose header ends before byte ``pos`` provides
    the hook itself, from its own lines (those before the next line that starts in column 0 with
    code): ``def make_empty_intermediate_tensors`` or ``make_empty_intermediate_tensors = ...``
    at the body's indent, or ``self.make_empty_intermediate_tensors = ...`` in its ``__init__``."""
    hook = F.PP_HOOK.encode()
    nl = data.find(b"\n", pos)
    body_indent = None
    in_init = False
    while 0 <= nl < len(data) - 1:
        start = nl + 1
        nl = data.find(b"\n", start)
        line = data[start:len(data) if nl < 0 else nl]
        stripped = line.lstrip(b" \t")
        if not stripped.strip() or stripped.startswith(b"#"):
            continue
        indent = len(line) - len(stripped)
        if indent == 0:
            if stripped[:1] in (b")", b"]", b"}"):
                continue
            return False  # the class's lines end here (or a column-0 line of a string cut them)
        if body_indent is None:
            body_indent = indent
        if indent <= body_indent and stripped[:1] in (b")", b"]", b"}"):
            continue  # the end of a multi-line signature or literal (`    ):`)
        if indent <= body_indent:
            in_init = indent == body_indent and stripped.startswith(b"def __init__")
            if indent == body_indent:
                if stripped.startswith((b"def " + hook, b"async def " + hook)) and \
                        stripped[len(b"def ") + len(hook) + stripped.startswith(b"async ") * 6:][:1] in (b"(", b" "):
                    return True
                if stripped.startswith(hook) and _ASSIGNED.match(stripped, len(hook)):
                    return True
        elif in_init:
            j = stripped.find(b"self." + hook)
            if j == 0 and _ASSIGNED.match(stripped, len(b"self.") + len(hook)):
                return True
    return False


def _init_end(path: str, cname: str):
    """Where a statement can be appended to the ``__init__`` of top-level class ``cname`` in the
    file at ``path``: ``(indent column, end row, end column of its last statement, self name)``,
    or ``None``."""
    import ast

    from pp_attr_lint.index.spec import LineIndex
    from pp_attr_lint.textio import read_source

    try:
        text = read_source(path).text
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    lines = LineIndex(text)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cname:
            for st in node.body:
                if isinstance(st, ast.FunctionDef) and st.name == "__init__" and st.body:
                    last = st.body[-1]
                    return (lines.col(st.body[0].lineno, st.body[0].col_offset), last.end_lineno,
                            lines.col(last.end_lineno, last.end_col_offset),
                            (st.args.posonlyargs + st.args.args)[0].arg if st.args.args else None)
    return None


# a class whose __init__ calls no base __init__ is judged in files that name pipeline parallelism
# (a model, a runner): elsewhere such classes are interfaces' implementations (quantization
# methods, attention backends), and reading them all would parse a tenth of a tree more
_PP_WORDS = re.compile(rb"SupportsPP|IntermediateTensors|intermediate_tensors|get_pp_group")
_PP_WORDS_TEXT = re.compile(_PP_WORDS.pattern.decode())
# the same words for a test of bytes: one substring search each is several times faster than
# the alternation over the whole file (0.13 s -> 0.02 s on vLLM 0.21.0's 1,679 files)
_PP_WORD_BYTES = tuple(w.encode() for w in _PP_WORDS_TEXT.pattern.split("|"))
_DEF_INIT = re.compile(rb"([ \t]+)(?:async[ \t]+)?def __init__\(")


def _init_calls_no_base(data: bytes) -> bool:
    """Whether some method ``__init__`` (a ``def __init__(`` line that is indented) of a class with
    a base that may bring ``SupportsPP`` has no ``__init__(`` between its line and the next code
    line indented as far or less: it may call no base ``__init__`` and so skip the one that
    assigns an inherited hook.  A line of a string or signature that starts further left ends the
    body early, which can only make this say yes."""
    i = data.find(b"def __init__(")
    if i < 0:
        return False
    from pp_attr_lint.kinds.skipped_init import enclosing_class  # a warm run never loads it

    while i >= 0:
        after = i + len(b"def __init__(")
        start = data.rfind(b"\n", 0, i) + 1
        m = _DEF_INIT.match(data, start)
        if m is not None and m.end() == after:
            indent = len(m.group(1))
            end = re.compile(rb"\n[ \t]{0,%d}(?=[^ \t\r\n#)\]}])" % indent).search(data, after)
            if data.find(b"__init__(", after, end.start() if end else len(data)) < 0:
                owner = enclosing_class(data, start + indent, indent)
                if owner is None or _may_inherit(data, owner.start(2)):
                    return True
        i = data.find(b"def __init__(", after)
    return False


# bases through which no SupportsPP can come (a class on them alone lists it or has none)
_PLAIN_BASES = frozenset({b"object", b"nn.Module", b"torch.nn.Module", b"Module", b"ABC", b"abc.ABC",
                          b"Protocol", b"Exception", b"ValueError", b"RuntimeError", b"Enum", b"enum.Enum",
                          b"str", b"int", b"dict", b"list", b"tuple", b"NamedTuple", b"TypedDict"})


def _may_inherit(data: bytes, name_at: int) -> bool:
    """Whether the class whose name starts at byte ``name_at`` has a base that may bring
    ``SupportsPP`` (one not in :data:`_PLAIN_BASES`); a header it cannot read counts as yes."""
    open_at = data.find(b"(", name_at)
    colon = data.find(b":", name_at)
    if open_at < 0 or (0 <= colon < open_at):
        return False  # `class X:`: no base
    close = data.find(b")", open_at)
    if close < 0 or b"(" in data[open_at + 1:close]:
        return True  # a call or subscript among the bases (`Generic[T]` is fine, read below)
    bases = [b.strip() for b in data[open_at + 1:close].split(b",")]
    return any(b and b not in _PLAIN_BASES and b"=" not in b for b in bases)


class MissingPPHook(Rule):
    def prefilter(self, data: bytes) -> bool:
        """Some class that lists ``SupportsPP`` among its bases may lack the hook: its own body
        (up to the next line that starts in column 0 with code) neither defines
        ``make_empty_intermediate_tensors`` nor assigns it at class level, and its ``__init__``
        does not assign ``self.make_empty_intermediate_tensors``.  Only a class's own lines
        count (another class of the file, e.g. the inner model, providing the hook proves nothing
        about this one); a class header not in column 0 counts as a hit.  Or an explicit base
        ``__init__`` call may skip the ``__init__`` that assigns an inherited class's hook
        (:func:`pp_attr_lint.kinds.skipped_init.may_skip_base_init`, as PPA301), or an ``__init__``
        may call none (:func:`_init_calls_no_base`) in a file that names pipeline parallelism
        (:data:`_PP_WORDS`, the scope in which such classes are judged).  A file whose
        classes inherit the protocol through a base that lacks the hook is reported at that base.
        A file that registers a model (``.register_model(``) is read too: its registrations tell
        which classes are drafters."""
        if REGISTER_NEEDLE in data:
            return True
        name = F.PP_PROTOCOL.encode()
        i = data.find(name)
        while i >= 0:
            end = i + len(name)
            if (i == 0 or data[i - 1] not in _WORD) and (end >= len(data) or data[end] not in _WORD):
                # in a class header: `class X(... SupportsPP`, no colon between them
                k = data.rfind(b"class ", 0, i)
                if k >= 0 and (k == 0 or data[k - 1] in b"\n \t") and b":" not in data[k:i] and b"(" in data[k:i]:
                    if k > 0 and data[k - 1] != 0x0A:
                        return True  # a class inside a block: judged too, not read here
                    colon = data.find(b":", end)
                    if colon < 0 or not _own_hook(data, colon + 1):
                        return True
            i = data.find(name, end)
        from pp_attr_lint.kinds.skipped_init import may_skip_base_init

        # a class that skips a base __init__ (or calls none) may lose the hook that base assigns
        return may_skip_base_init(data) or (any(w in data for w in _PP_WORD_BYTES) and _init_calls_no_base(data))

    def collect(self, tree, lines):
        """``protocol``: how classes named ``SupportsPP`` provide the hook (``stub``, ``impl``,
        ``annotation``); ``init_helpers``: classes with a method other than ``__init__`` whose text
        calls an ``__init__`` (it may run a base ``__init__`` for one that calls none itself);
        ``pp_words``: the file names pipeline parallelism (:data:`_PP_WORDS`)."""
        import ast

        protocol, helpers = {}, []
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name != "__init__"
                    and "__init__(" in "".join(lines.lines[m.lineno - 1:m.end_lineno]) for m in node.body):
                helpers.append(node.name)  # a method besides __init__ may run a base __init__
            if isinstance(node, ast.ClassDef) and node.name == F.PP_PROTOCOL:
                for st in node.body:
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == F.PP_HOOK:
                        protocol[node.name] = _stub_kind(st)
                    elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == F.PP_HOOK:
                        protocol.setdefault(node.name, "annotation" if st.value is None else "impl")
        out = {"protocol": protocol} if protocol else {}
        if helpers:
            out["init_helpers"] = helpers
        if any(_PP_WORDS_TEXT.search(ln) for ln in lines.lines):
            out["pp_words"] = True
        return out or None

    def prefetch(self, module, summary, resolver):
        """The MRO of the classes :meth:`check` judges, the registries it reads for them, and
        for a class that lacks the hook what its fix looks at (the classes its ``__init__``'s
        attributes hold)."""
        listed = [cname for cname, rec in summary["classes"].items() if _listed(cname, rec) or _skips(cname, rec)]
        if listed:
            resolver.model_registry(module.split(".", 1)[0])
        from pp_attr_lint.resolve import Unresolved

        for cname in listed:
            key = (module, cname)
            try:
                if self._provides(resolver, key):
                    continue
                inits = resolver.executed_inits(key)
                if inits and inits[0][0] == key:
                    self._providers(resolver, key, inits)
            except Unresolved:
                pass

    def check(self, ctx):
        from pp_attr_lint.model import NotJudged

        out = []
        mine = ctx.facts(self.code) or {}
        for cname, rec in ctx.summary["classes"].items():
            if not _listed(cname, rec) and not _skips(cname, rec):
                continue
            if not _listed(cname, rec) and _no_base_init(rec):
                if not mine.get("pp_words"):
                    continue  # judged only in a file that names pipeline parallelism (_PP_WORDS)
                inherits = _inherits_protocol(ctx, (ctx.module, cname))
                if inherits is False:
                    continue  # a class that calls no base __init__ and has no SupportsPP on its MRO
                if inherits is not True:
                    reason, detail, dep = inherits
                    out.append(NotJudged(code=self.code, reason=reason, path=ctx.file.path, row=rec["line"],
                                         column=rec["col"] + 1, dep_path=dep,
                                         detail=f"`{cname}.__init__` calls no base `__init__`, and whether "
                                                f"`SupportsPP` is on its MRO cannot be told: {detail}"))
                    continue
            drafter = self._drafter_only(ctx, (ctx.module, cname))
            if drafter is True:
                continue  # a speculative-decoding drafter: never asked for intermediate tensors
            if drafter is not False:
                out.append(NotJudged(code=self.code, reason=drafter[0], detail=drafter[1], path=ctx.file.path,
                                     row=rec["line"], column=rec["col"] + 1))
                continue
            f = self._judge(ctx, (ctx.module, cname), rec, mine)
            if isinstance(f, NotJudged):
                out.append(f)  # its MRO cannot be read: the registry would not settle it either
                continue
            if f is not None and not _listed(cname, rec):
                # an inherited SupportsPP is mostly met on drafters (EAGLE heads built with
                # nn.Module.__init__(self)); only the registry tells them from models
                # the registry of this package, or of the engine its SupportsPP comes from (a plugin's vLLM)
                top = ctx.module.split(".", 1)[0]
                try:
                    mro = ctx.resolver.mro((ctx.module, cname))
                except Exception:  # noqa: BLE001  (cannot tell: only this package's registry)
                    mro = []
                tops = dict.fromkeys([top] + [e[0].split(".", 1)[0] for e in mro
                                              if e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL and e[0] != "<external>"])
                if all(ctx.resolver.model_registry(t) is None for t in tops):
                    where = " or ".join(F.REGISTRY_MODULE.replace("{top}", t) for t in tops)
                    f = NotJudged(code=self.code, reason="module-not-found",
                                  detail=f"{where}, which tells speculative-decoding drafters (never run under "
                                         f"pipeline parallelism) from models, is not found; `{cname}` inherits "
                                         f"`SupportsPP` and skips the `__init__` that assigns its hook",
                                  path=ctx.file.path, row=rec["line"], column=rec["col"] + 1)
            if f is not None:
                out.append(f)
        return out

    def _judge(self, ctx, key, rec, mine):
        from pp_attr_lint.resolve import EXTERNAL, Unresolved, adds_no_attribute
        r = ctx.resolver
        try:
            mro = r.mro(key)
            r.check_resolved(key)
            inits = r.executed_inits(key)
        except Unresolved as e:
            if e.reason not in MISSING_CODE:
                return None
            if not _listed(key[1], rec) and not mine.get("pp_words"):
                return None  # an explicit base __init__ call in a file that names no PP at all
            # the MRO leads into code the run does not have (a renamed copy whose absolute imports
            # name the original package, a plugin without vLLM): whether a base provides the hook
            # cannot be told, and that is said
            from pp_attr_lint.model import NotJudged

            return NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=rec["line"],
                             column=rec["col"] + 1, dep_path=e.path,
                             detail=f"whether a class on `{key[1]}`'s MRO provides `{F.PP_HOOK}`: {e.detail}")
        proto_at = None
        for i, entry in enumerate(mro):
            name = entry[1].rsplit(".", 1)[-1]
            if name == F.PP_PROTOCOL:
                proto_at = i
                break
        if proto_at is None:
            return None
        proto = mro[proto_at]
        if proto[0] == EXTERNAL:
            how = "stub"  # vLLM's own protocol: a `...` body (vllm/model_executor/models/interfaces.py)
        else:
            pf = ctx.facts(self.code, proto[0]) or {}
            how = pf.get("protocol", {}).get(proto[1])
            if how not in ("stub", "annotation"):
                return None
        executed = {id(scope) for _, scope in inits}
        for entry in mro[:proto_at] + [e for e in mro[proto_at + 1:]]:
            if entry[0] == EXTERNAL:
                continue
            crec = r.class_record(entry)
            for special in ("__getattr__", "__getattribute__", "__setattr__"):
                if special in crec["methods"] and not adds_no_attribute(crec, special):
                    return None
            if entry in mro[:proto_at] and (F.PP_HOOK in crec["methods"] or F.PP_HOOK in crec["body_names"]
                                            or F.PP_HOOK in crec["properties"] or F.PP_HOOK in crec["annotations"]):
                return None
            for mname, scope in crec["methods"].items():
                if scope["dynamic"] or (mname == "__init__" and id(scope) in executed and scope.get("passes_self")):
                    return None
                if F.PP_HOOK in scope["assigns"] and (mname != "__init__" or id(scope) in executed):
                    return None
        chain = " -> ".join(e[1].rsplit(".", 1)[-1] if e[0] == EXTERNAL else e[1] for e in mro)
        result = "returns `None`" if how == "stub" else "raises AttributeError"
        answers = (f"the protocol's {'stub' if how == 'stub' else 'annotation'} answers instead and {result}. The model "
                   f"runner calls it on every pipeline-parallel rank but the first, to allocate the tensors it receives.")
        explanation = [f"MRO: {chain}",
                       f"no class before `{proto[1].rsplit('.', 1)[-1]}` on the MRO defines `{F.PP_HOOK}`, and no "
                       f"executed `__init__` assigns `self.{F.PP_HOOK}`"]
        if _listed(key[1], rec):
            message = f"`{key[1]}` lists `SupportsPP` but neither defines nor assigns `{F.PP_HOOK}`; " + answers
        else:
            # inherited SupportsPP: judged only when the base __init__ that assigns the hook is skipped
            # (a base that lacks the hook altogether is reported at that base)
            lost = [e for e in mro[:proto_at] if e[0] != EXTERNAL and e != key
                    and F.PP_HOOK in (r.class_record(e)["methods"].get("__init__") or {}).get("assigns", {})]
            if not lost:
                return None
            if _no_base_init(rec) and any(e[0] != EXTERNAL and e[1] in ((ctx.facts(self.code, e[0]) or {})
                                                                         .get("init_helpers", ()))
                                          for e in mro):
                return None  # another method may run the base __init__ that __init__ does not call
            base = lost[0]
            line = r.class_record(base)["methods"]["__init__"]["assigns"][F.PP_HOOK][0][0]
            message = (f"`{key[1]}` inherits `SupportsPP` from `{base[1]}`, whose `__init__` assigns `{F.PP_HOOK}` "
                       f"({display_path(r.src.path(base[0]))}:{line}), but `{key[1]}.__init__` {_how(rec)} skips that "
                       f"`__init__` and nothing else provides the hook; " + answers)
            explanation.append(f"executed: {', '.join(o[1] + '.__init__' for o, _ in inits) or 'none'}")
        fix = self._fix(ctx, key, mine, inits, explanation)
        help = (f"Give `{key[1]}` a `{F.PP_HOOK}`: forward the inner model's in `__init__` "
                f"(`self.{F.PP_HOOK} = self.<inner model>.{F.PP_HOOK}`), or define the method")
        return self.finding(ctx, rec["line"], rec["col"], rec["line"], rec["col"] + len("class " + key[1]),
                            message, explanation, fix=fix, help=help,
                            witness={"ranks": "every pipeline-parallel rank but the first", "config": {}})

    @staticmethod
    def _drafter_only(ctx, key):
        """Whether the model registry lists ``key`` only among speculative-decoding drafters
        (``True`` / ``False``), or ``(reason, detail)`` when that cannot be established.

        The registry is the one of ``key``'s top-level package (found by its place in the tree,
        :meth:`Resolver.model_registry`); a ``register_model("Arch", key)`` call of a checked file
        adds the tables that list ``Arch`` in the registry of the package its ``ModelRegistry``
        comes from (a plugin that replaces a drafter's architecture registers a drafter), or a
        table of its own when none lists it.  When that registry cannot be read, or a registration
        of a class of ``key``'s name cannot be resolved, whether ``key`` is a drafter is not known."""
        from pp_attr_lint.semantic.model import RankFacts

        r = ctx.resolver
        names = set()
        for tname, _arch, mod, cls in r.model_registry(key[0].split(".", 1)[0]) or ():
            if cls == key[1] and (key[0] == mod or key[0].startswith(mod + ".")):
                names.add(tname)
        for arch, top, rkey, rname, rmod, line in RankFacts.of(ctx).registrations():
            if rkey is None and rname == key[1].rsplit(".", 1)[-1]:
                return ("receiver-unresolved", f"the class that {rmod}:{line} registers as `{arch}` cannot be resolved")
            if rkey != tuple(key):
                continue
            entries = r.model_registry(top) if top is not None else None
            if entries is None:
                return ("module-not-found", f"{rmod}:{line} registers `{key[1]}` as `{arch}`, and the model registry "
                        f"of {top or 'its `ModelRegistry`'} that tells whether `{arch}` is a drafter was not found")
            names |= {t for t, a, _m, _c in entries if a == arch} or {"<register_model>"}
        return bool(names) and names <= {F.DRAFTER_TABLE}

    @staticmethod
    def _provides(r, key) -> bool:
        """Whether instances of ``key`` have the hook of their own: a method, property or class
        attribute before any ``SupportsPP`` on the MRO, or an assignment in an executed ``__init__``."""
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        try:
            mro = r.mro(key)
            inits = r.executed_inits(key)
        except Unresolved:
            return False
        if any(F.PP_HOOK in scope["assigns"] for _, scope in inits):
            return True
        for entry in mro:
            if entry[0] == EXTERNAL or entry[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL:
                return False
            crec = r.class_record(entry)
            if F.PP_HOOK in crec["methods"] or F.PP_HOOK in crec["body_names"] or F.PP_HOOK in crec["properties"]:
                return True
        return False

    def _providers(self, r, key, inits) -> list[str]:
        """The attributes ``key``'s own ``__init__`` (``inits[0]``) sets that hold only classes
        providing the hook themselves (see :meth:`_provides`)."""
        providers = []
        for attr in sorted(inits[0][1]["assigns"]):
            got = r.attr_candidates(key, attr)
            if got and all(self._provides(r, ck) for ck in got[0]):
                providers.append(attr)
        return providers

    def _fix(self, ctx, key, mine, inits, explanation):
        """``self.<hook> = self.<a>.<hook>`` appended to the class's own ``__init__`` when exactly one
        attribute set there holds classes that define the hook themselves."""
        r = ctx.resolver
        if not inits or inits[0][0] != key:
            return None
        at = _init_end(ctx.file.path, key[1])
        if at is None:
            return None
        providers = self._providers(r, key, inits)
        if len(providers) != 1:
            if providers:
                explanation.append("no fix: several attributes provide the hook: " + ", ".join(providers))
            return None
        indent, end_row, end_col, self_name = at
        if not self_name:
            return None
        stmt = f"{self_name}.{F.PP_HOOK} = {self_name}.{providers[0]}.{F.PP_HOOK}"
        return self.make_fix("safe", f"Forward the hook: `{stmt}`",
                             [self.replace((end_row, end_col, end_row, end_col), "\n" + " " * indent + stmt)])


def _skips(cname: str, rec: dict) -> bool:
    """Whether a top-level class that is not an interface has an ``__init__`` that calls a base
    ``__init__`` explicitly (``super(P, self).__init__()``, ``X.__init__(self)``), or calls none at
    all: it may skip the base ``__init__`` that assigns an inherited hook."""
    if "." in cname or cname == F.PP_PROTOCOL or cname.startswith("Supports"):
        return False
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    if "Protocol" in bases or "ABC" in bases or not rec["bases"]:
        return False
    init = rec["methods"].get("__init__")
    return init is not None and (_no_base_init(rec) or any(c[0] == "explicit" or (c[0] == "super" and c[1])
                                                            for c in init.get("init_calls", [])))


def _no_base_init(rec: dict) -> bool:
    """Whether the class's own ``__init__`` calls no base ``__init__`` at all."""
    init = rec["methods"].get("__init__")
    return init is not None and not init.get("init_calls")


def _inherits_protocol(ctx, key):
    """Whether ``SupportsPP`` is on the MRO of ``key`` (``True`` / ``False``), or ``(reason,
    detail, path)`` when a base leads into code the run does not have (a module not found, a
    file that does not parse); other failures (a dynamic base) count as ``False``."""
    from pp_attr_lint.resolve import Unresolved

    try:
        mro = ctx.resolver.mro(key)
    except Unresolved as e:
        return (e.reason, e.detail, e.path) if e.reason in MISSING_CODE else False
    except RecursionError:
        return False
    return any(e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL for e in mro)


def _how(rec: dict) -> str:
    for c in rec["methods"]["__init__"].get("init_calls", []):
        if c[0] == "explicit":
            return f"calls `{c[1]}.__init__(self)`, which"
        if c[0] == "super" and c[1]:
            return f"calls `super({c[1]}, self).__init__()`, which"
    return "calls no base `__init__` and so"


def _listed(cname: str, rec: dict) -> bool:
    """Whether a top-level class lists ``SupportsPP`` among its bases and is not itself an
    interface (``Supports*``, ``Protocol``, ``ABC``): the classes this rule judges (a subclass
    inherits its base's hook; an interface's subclasses provide the hook)."""
    if "." in cname or cname == F.PP_PROTOCOL or cname.startswith("Supports"):
        return False
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    return F.PP_PROTOCOL in bases and "Protocol" not in bases and "ABC" not in bases


RULE = MissingPPHook(
    code="PPA201",
    name="missing-pp-hook",
    summary="SupportsPP class without make_empty_intermediate_tensors: the protocol stub answers None",
    fix_applicability="safe",
    needles=(F.PP_PROTOCOL,),
    version=2,
)

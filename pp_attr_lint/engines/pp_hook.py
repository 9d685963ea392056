"""The pipeline-parallel hook contract of vLLM's ``SupportsPP`` protocol: a model that lists it
provides ``make_empty_intermediate_tensors``, which the GPU model runner calls on every rank but
the first to allocate the tensors it receives (``vllm/model_executor/models/interfaces.py``
``SupportsPP``, whose own body is a stub; ``vllm/v1/worker/gpu_model_runner.py``).

* :func:`lists_without_hook`, :func:`init_calls_no_base`, :data:`PP_WORDS`: byte tests of a file
  (a rule's prefilter): a class in it may lack the hook or call no base ``__init__``;
* :func:`stub_kind`: how a class named ``SupportsPP`` provides the hook itself;
* :func:`lists_protocol`, :func:`skips_base_init`, :func:`no_base_init`, :func:`how_skipped`:
  what a class's summary record says of it;
* :func:`inherits_protocol`, :func:`provides_hook`, :func:`hook_providers`: what its MRO and
  executed ``__init__``s provide;
* :func:`drafter_only`: whether the model registry lists a class only among the
  speculative-decoding drafters, which never receive intermediate tensors
  (``vllm/model_executor/models/registry.py``, ``_SPECULATIVE_DECODING_MODELS``).
"""

from __future__ import annotations

import re

from .. import facts as F
from ..unjudged import MISSING_CODE


def stub_kind(fn) -> str:
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


# a file that registers a model (`ModelRegistry.register_model(...)`)
REGISTER_NEEDLE = f".{F.REGISTER_METHOD}(".encode()
_ASSIGNED = re.compile(rb"[ \t]*(?::[^=\n]*)?=(?!=)")  # after the hook's name: an assignment to it
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def own_hook(data: bytes, pos: int) -> bool:
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


# a class whose __init__ calls no base __init__ is judged in files that name pipeline parallelism
# (a model, a runner): elsewhere such classes are interfaces' implementations (quantization
# methods, attention backends), and reading them all would parse a tenth of a tree more
PP_WORDS = re.compile(rb"SupportsPP|IntermediateTensors|intermediate_tensors|get_pp_group")
PP_WORDS_TEXT = re.compile(PP_WORDS.pattern.decode())
# the same words for a test of bytes: one substring search each is several times faster than
# the alternation over the whole file (0.13 s -> 0.02 s on vLLM 0.21.0's 1,679 files)
PP_WORD_BYTES = tuple(w.encode() for w in PP_WORDS_TEXT.pattern.split("|"))
_DEF_INIT = re.compile(rb"([ \t]+)(?:async[ \t]+)?def __init__\(")


def init_calls_no_base(data: bytes, enclosing_class) -> bool:
    """Whether some method ``__init__`` (a ``def __init__(`` line that is indented) of a class with
    a base that may bring ``SupportsPP`` has no ``__init__(`` between its line and the next code
    line indented as far or less: it may call no base ``__init__`` and so skip the one that
    assigns an inherited hook.  A line of a string or signature that starts further left ends the
    body early, which can only make this say yes.  ``enclosing_class(data, pos, indent)`` finds the
    class line above a byte (:func:`pp_attr_lint.kinds.skipped_init.enclosing_class`, passed in:
    the rule kinds lie above the engines' facts)."""
    i = data.find(b"def __init__(")
    if i < 0:
        return False
    while i >= 0:
        after = i + len(b"def __init__(")
        start = data.rfind(b"\n", 0, i) + 1
        m = _DEF_INIT.match(data, start)
        if m is not None and m.end() == after:
            indent = len(m.group(1))
            end = re.compile(rb"\n[ \t]{0,%d}(?=[^ \t\r\n#)\]}])" % indent).search(data, after)
            if data.find(b"__init__(", after, end.start() if end else len(data)) < 0:
                owner = enclosing_class(data, start + indent, indent)
                if owner is None or may_inherit(data, owner.start(2)):
                    return True
        i = data.find(b"def __init__(", after)
    return False


# bases through which no SupportsPP can come (a class on them alone lists it or has none)
PLAIN_BASES = frozenset({b"object", b"nn.Module", b"torch.nn.Module", b"Module", b"ABC", b"abc.ABC",
                         b"Protocol", b"Exception", b"ValueError", b"RuntimeError", b"Enum", b"enum.Enum",
                         b"str", b"int", b"dict", b"list", b"tuple", b"NamedTuple", b"TypedDict"})


def may_inherit(data: bytes, name_at: int) -> bool:
    """Whether the class whose name starts at byte ``name_at`` has a base that may bring
    ``SupportsPP`` (one not in :data:`PLAIN_BASES`); a header it cannot read counts as yes."""
    open_at = data.find(b"(", name_at)
    colon = data.find(b":", name_at)
    if open_at < 0 or (0 <= colon < open_at):
        return False  # `class X:`: no base
    close = data.find(b")", open_at)
    if close < 0 or b"(" in data[open_at + 1:close]:
        return True  # a call or subscript among the bases (`Generic[T]` is fine, read below)
    bases = [b.strip() for b in data[open_at + 1:close].split(b",")]
    return any(b and b not in PLAIN_BASES and b"=" not in b for b in bases)


def lists_without_hook(data: bytes) -> bool:
    """Some class that lists ``SupportsPP`` among its bases may lack the hook: its own body
    (up to the next line that starts in column 0 with code) neither defines
    ``make_empty_intermediate_tensors`` nor assigns it at class level, and its ``__init__``
    does not assign ``self.make_empty_intermediate_tensors``.  Only a class's own lines
    count (another class of the file, e.g. the inner model, providing the hook proves nothing
    about this one); a class header not in column 0 counts as a hit.  A file that registers a
    model (``.register_model(``) counts too: its registrations tell which classes are drafters."""
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
                if colon < 0 or not own_hook(data, colon + 1):
                    return True
        i = data.find(name, end)
    return False


def skips_base_init(cname: str, rec: dict) -> bool:
    """Whether a top-level class that is not an interface has an ``__init__`` that calls a base
    ``__init__`` explicitly (``super(P, self).__init__()``, ``X.__init__(self)``), or calls none at
    all: it may skip the base ``__init__`` that assigns an inherited hook."""
    if "." in cname or cname == F.PP_PROTOCOL or cname.startswith("Supports"):
        return False
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    if "Protocol" in bases or "ABC" in bases or not rec["bases"]:
        return False
    init = rec["methods"].get("__init__")
    return init is not None and (no_base_init(rec) or any(c[0] == "explicit" or (c[0] == "super" and c[1])
                                                            for c in init.get("init_calls", [])))


def no_base_init(rec: dict) -> bool:
    """Whether the class's own ``__init__`` calls no base ``__init__`` at all."""
    init = rec["methods"].get("__init__")
    return init is not None and not init.get("init_calls")


def inherits_protocol(resolver, key):
    """Whether ``SupportsPP`` is on the MRO of ``key`` (``True`` / ``False``), or ``(reason,
    detail, path)`` when a base leads into code the run does not have (a module not found, a
    file that does not parse); other failures (a dynamic base) count as ``False``."""
    from ..resolve import Unresolved

    try:
        mro = resolver.mro(key)
    except Unresolved as e:
        return (e.reason, e.detail, e.path) if e.reason in MISSING_CODE else False
    except RecursionError:
        return False
    return any(e[1].rsplit(".", 1)[-1] == F.PP_PROTOCOL for e in mro)


def how_skipped(rec: dict) -> str:
    """How the class's own ``__init__`` skips a base ``__init__``, as words of a message."""
    for c in rec["methods"]["__init__"].get("init_calls", []):
        if c[0] == "explicit":
            return f"calls `{c[1]}.__init__(self)`, which"
        if c[0] == "super" and c[1]:
            return f"calls `super({c[1]}, self).__init__()`, which"
    return "calls no base `__init__` and so"


def lists_protocol(cname: str, rec: dict) -> bool:
    """Whether a top-level class lists ``SupportsPP`` among its bases and is not itself an
    interface (``Supports*``, ``Protocol``, ``ABC``): the classes this rule judges (a subclass
    inherits its base's hook; an interface's subclasses provide the hook): PPA201 judges them."""
    if "." in cname or cname == F.PP_PROTOCOL or cname.startswith("Supports"):
        return False
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    return F.PP_PROTOCOL in bases and "Protocol" not in bases and "ABC" not in bases


def drafter_only(resolver, registrations, key):
    """Whether the model registry lists ``key`` only among speculative-decoding drafters
    (``True`` / ``False``), or ``(reason, detail)`` when that cannot be established.

    The registry is the one of ``key``'s top-level package (found by its place in the tree,
    :meth:`Resolver.model_registry`); a ``register_model("Arch", key)`` call of a checked file
    adds the tables that list ``Arch`` in the registry of the package its ``ModelRegistry``
    comes from (a plugin that replaces a drafter's architecture registers a drafter), or a
    table of its own when none lists it.  When that registry cannot be read, or a registration
    of a class of ``key``'s name cannot be resolved, whether ``key`` is a drafter is not known.
    ``registrations()`` gives the tree's registrations
    (:meth:`RankFacts.registrations <pp_attr_lint.semantic.model.RankFacts.registrations>`), read
    only after the package's own registry."""
    r = resolver
    names = set()
    for tname, _arch, mod, cls in r.model_registry(key[0].split(".", 1)[0]) or ():
        if cls == key[1] and (key[0] == mod or key[0].startswith(mod + ".")):
            names.add(tname)
    for arch, top, rkey, rname, rmod, line in registrations():
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


def draft_built(tree, lines) -> list[str]:
    """The classes of module ``tree`` whose ``__init__`` reads the draft model's configuration
    (``<x>.speculative_config.draft_model_config``, :data:`pp_attr_lint.facts.DRAFT_CONFIG_CHAIN`)
    on every call, by the flow walker's reading (no test, loop or handler around it): such a
    class cannot be built without speculative decoding, so the engine builds it only as a
    drafter.  ``lines`` is the module's :class:`~pp_attr_lint.index.spec.LineIndex`."""
    import ast

    from ..index.astutil import ref_chain
    from ..semantic.flow import FunctionGuards
    from ..semantic.guards import TRUE

    want = F.DRAFT_CONFIG_CHAIN
    out = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        if init is None or want[-1] not in lines.span(init):
            continue
        flow = FunctionGuards(init, lines, cls=node.name)
        for sub in ast.walk(init):
            if isinstance(sub, ast.Attribute) and sub.attr == want[-1]:
                chain = ref_chain(sub)
                if chain is not None and chain[-len(want):] == want and flow.every_call(sub) == TRUE:
                    out.append(node.name)
                    break
    return out


def provides_hook(r, key) -> bool:
    """Whether instances of ``key`` have the hook of their own: a method, property or class
    attribute before any ``SupportsPP`` on the MRO, or an assignment in an executed ``__init__``."""
    from ..resolve import EXTERNAL, Unresolved

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


def hook_providers(r, key, inits) -> list[str]:
    """The attributes ``key``'s own ``__init__`` (``inits[0]``) sets that hold only classes
    providing the hook themselves (see :func:`provides_hook`)."""
    providers = []
    for attr in sorted(inits[0][1]["assigns"]):
        got = r.attr_candidates(key, attr)
        if got and all(provides_hook(r, ck) for ck in got[0]):
            providers.append(attr)
    return providers


def init_end(path: str, cname: str):
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

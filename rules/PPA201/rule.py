"""PPA201 missing-pp-hook: a class with ``SupportsPP`` on its MRO that neither defines nor assigns
``make_empty_intermediate_tensors``, so the protocol's stub answers (see README.md).

The hook's contract (how a class provides it, which classes are drafters, the byte test of a
file) is :mod:`pp_attr_lint.engines.pp_hook`; the rule keeps the query and the message."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.textio import display_path
from pp_attr_lint.unjudged import MISSING_CODE


# the hook assigned a lambda or a local function (:mod:`pp_attr_lint.engines.hook_signature`)
_ASSIGNED_CALLABLE = re.compile(rb"self\.make_empty_intermediate_tensors\s*=\s*\(?\s*(?!self\.)")


class MissingPPHook(Rule):
    def prefilter(self, data: bytes) -> bool:
        """Some class that lists ``SupportsPP`` among its bases may lack the hook, or the file
        registers a model (:func:`~pp_attr_lint.engines.pp_hook.lists_without_hook`).  Or an
        explicit base ``__init__`` call may skip the ``__init__`` that assigns an inherited
        class's hook (:func:`pp_attr_lint.kinds.skipped_init.may_skip_base_init`, as PPA301), or
        an ``__init__`` may call none (:func:`~pp_attr_lint.engines.pp_hook.init_calls_no_base`)
        in a file that names pipeline parallelism (``PP_WORDS``, the scope in which such classes
        are judged).  A file whose classes inherit the protocol through a base that lacks the hook
        is reported at that base."""
        from pp_attr_lint.engines.pp_hook import PP_WORD_BYTES, init_calls_no_base, lists_without_hook

        if lists_without_hook(data) or _ASSIGNED_CALLABLE.search(data):
            return True
        from pp_attr_lint.kinds.skipped_init import enclosing_class, may_skip_base_init

        # a class that skips a base __init__ (or calls none) may lose the hook that base assigns
        return may_skip_base_init(data) or (any(w in data for w in PP_WORD_BYTES)
                                            and init_calls_no_base(data, enclosing_class))

    def collect(self, tree, lines):
        """``protocol``: how classes named ``SupportsPP`` provide the hook (``stub``, ``impl``,
        ``annotation``); ``init_helpers``: classes with a method other than ``__init__`` whose text
        calls an ``__init__`` (it may run a base ``__init__`` for one that calls none itself);
        ``pp_words``: the file names pipeline parallelism
        (:data:`pp_attr_lint.engines.pp_hook.PP_WORDS`)."""
        import ast

        from pp_attr_lint.engines.pp_hook import PP_WORDS_TEXT, stub_kind

        protocol, helpers = {}, []
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name != "__init__"
                    and "__init__(" in lines.span(m) for m in node.body):
                helpers.append(node.name)  # a method besides __init__ may run a base __init__
            if isinstance(node, ast.ClassDef) and node.name == F.PP_PROTOCOL:
                for st in node.body:
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == F.PP_HOOK:
                        protocol[node.name] = stub_kind(st)
                    elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == F.PP_HOOK:
                        protocol.setdefault(node.name, "annotation" if st.value is None else "impl")
        from pp_attr_lint.engines.hook_signature import hook_callables

        out = {"protocol": protocol} if protocol else {}
        if callables := hook_callables(tree, lines):
            out["callables"] = callables  # the kind "signature": the runner's call does not bind
        if helpers:
            out["init_helpers"] = helpers
        from pp_attr_lint.engines.pp_hook import draft_built

        if drafts := draft_built(tree, lines):
            out["draft_built"] = drafts  # built only as a speculative-decoding drafter
        if any(PP_WORDS_TEXT.search(ln) for ln in lines.lines):
            out["pp_words"] = True
        return out or None

    def check(self, ctx):
        from pp_attr_lint.engines.pp_hook import (drafter_only, inherits_protocol, lists_protocol, no_base_init,
                                                  skips_base_init)
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic.model import RankFacts

        out = []
        mine = ctx.facts(self.code) or {}
        for cname, rec in ctx.summary["classes"].items():
            if not lists_protocol(cname, rec) and not skips_base_init(cname, rec):
                continue
            if not lists_protocol(cname, rec) and no_base_init(rec):
                if not mine.get("pp_words"):
                    continue  # judged only in a file that names pipeline parallelism (pp_hook.PP_WORDS)
                inherits = inherits_protocol(ctx.resolver, (ctx.module, cname))
                if inherits is False:
                    continue  # a class that calls no base __init__ and has no SupportsPP on its MRO
                if inherits is not True:
                    reason, detail, dep = inherits
                    out.append(NotJudged(code=self.code, reason=reason, path=ctx.file.path, row=rec["line"],
                                         column=rec["col"] + 1, dep_path=dep,
                                         detail=f"`{cname}.__init__` calls no base `__init__`, and whether "
                                                f"`SupportsPP` is on its MRO cannot be told: {detail}"))
                    continue
            drafter = drafter_only(ctx.resolver, RankFacts.of(ctx).registrations, (ctx.module, cname))
            if drafter is not True and self._draft_built(ctx, (ctx.module, cname)):
                drafter = True  # its __init__ reads the draft model's config: built only as a drafter
            if drafter is True:
                continue  # a speculative-decoding drafter: never asked for intermediate tensors
            if drafter is not False:
                out.append(NotJudged(code=self.code, reason=drafter[0], detail=drafter[1], path=ctx.file.path,
                                     row=rec["line"], column=rec["col"] + 1))
                continue
            for bad in mine.get("callables", {}).get(cname, ()) if lists_protocol(cname, rec) else ():
                out += self._signature(ctx, cname, bad)
            f = self._judge(ctx, (ctx.module, cname), rec, mine)
            if isinstance(f, NotJudged):
                out.append(f)  # its MRO cannot be read: the registry would not settle it either
                continue
            if f is not None and not lists_protocol(cname, rec):
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

    def _draft_built(self, ctx, key) -> bool:
        """Whether an ``__init__`` that runs when ``key`` is built reads the draft model's
        configuration on every call (:func:`~pp_attr_lint.engines.pp_hook.draft_built`)."""
        from pp_attr_lint.resolve import Unresolved

        try:
            inits = ctx.resolver.executed_inits(key)
        except Unresolved:
            return False
        return any(ikey[1] in ((ctx.facts(self.code, ikey[0]) or {}).get("draft_built", ()))
                   for ikey, _scope in inits if ikey[0] != "<external>")

    def _signature(self, ctx, cname, bad):
        """The hook ``bad`` (a :func:`~pp_attr_lint.engines.hook_signature.hook_callables` record)
        as a finding when no call of the runner binds it (kind "signature"), as not judged when no
        call is found; ``[]`` when one binds it."""
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        from pp_attr_lint.engines.hook_signature import verdict
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic.model import RankFacts

        got = verdict(RankFacts.of(ctx).reader, cname, bad)
        if got is None or len(got) == 2:
            return [NotJudged(code=self.code, reason=got[0], path=ctx.file.path, row=bad["line"],
                              column=bad["col"] + 1, detail=got[1])] if got else []
        message, explanation, help = got
        return [self.finding(ctx, bad["line"], bad["col"], bad["end_line"], bad["end_col"], message, explanation,
                             help=help, witness={"ranks": LATER_RANKS_WORDS, "config": {}})]

    def _judge(self, ctx, key, rec, mine):
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        from pp_attr_lint.engines.pp_hook import how_skipped, lists_protocol, no_base_init
        from pp_attr_lint.resolve import EXTERNAL, Unresolved, adds_no_attribute

        r = ctx.resolver
        try:
            mro = r.mro(key)
            r.check_resolved(key)
            inits = r.executed_inits(key)
        except Unresolved as e:
            if e.reason not in MISSING_CODE:
                return None
            if not lists_protocol(key[1], rec) and not mine.get("pp_words"):
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
        if lists_protocol(key[1], rec):
            message = f"`{key[1]}` lists `SupportsPP` but neither defines nor assigns `{F.PP_HOOK}`; " + answers
        else:
            # inherited SupportsPP: judged only when the base __init__ that assigns the hook is skipped
            # (a base that lacks the hook altogether is reported at that base)
            lost = [e for e in mro[:proto_at] if e[0] != EXTERNAL and e != key
                    and F.PP_HOOK in (r.class_record(e)["methods"].get("__init__") or {}).get("assigns", {})]
            if not lost:
                return None
            if no_base_init(rec) and any(e[0] != EXTERNAL and e[1] in ((ctx.facts(self.code, e[0]) or {})
                                                                         .get("init_helpers", ()))
                                          for e in mro):
                return None  # another method may run the base __init__ that __init__ does not call
            base = lost[0]
            line = r.class_record(base)["methods"]["__init__"]["assigns"][F.PP_HOOK][0][0]
            message = (f"`{key[1]}` inherits `SupportsPP` from `{base[1]}`, whose `__init__` assigns `{F.PP_HOOK}` "
                       f"({display_path(r.src.path(base[0]))}:{line}), but `{key[1]}.__init__` {how_skipped(rec)} skips that "
                       f"`__init__` and nothing else provides the hook; " + answers)
            explanation.append(f"executed: {', '.join(o[1] + '.__init__' for o, _ in inits) or 'none'}")
        fix = self._fix(ctx, key, mine, inits, explanation)
        help = (f"Give `{key[1]}` a `{F.PP_HOOK}`: forward the inner model's in `__init__` "
                f"(`self.{F.PP_HOOK} = self.<inner model>.{F.PP_HOOK}`), or define the method")
        return self.finding(ctx, rec["line"], rec["col"], rec["line"], rec["col"] + len("class " + key[1]),
                            message, explanation, fix=fix, help=help,
                            witness={"ranks": LATER_RANKS_WORDS, "config": {}})

    def _fix(self, ctx, key, mine, inits, explanation):
        """``self.<hook> = self.<a>.<hook>`` appended to the class's own ``__init__`` when exactly one
        attribute set there holds classes that define the hook themselves."""
        from pp_attr_lint.engines.pp_hook import hook_providers, init_end

        r = ctx.resolver
        if not inits or inits[0][0] != key:
            return None
        at = init_end(ctx.file.path, key[1])
        if at is None:
            return None
        providers = hook_providers(r, key, inits)
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


RULE = MissingPPHook(
    code="PPA201",
    name="missing-pp-hook",
    summary="SupportsPP class without make_empty_intermediate_tensors: the protocol stub answers None",
    fix_applicability="safe",
    needles=(F.PP_PROTOCOL,),
    version=4,
)

"""PPA301 attribute-of-skipped-init: an ``__init__`` that skips a base ``__init__``
(``nn.Module.__init__(self)``, ``super(Parent, self).__init__()``, or no call at all) leaves
the attributes only that base sets missing, and an inherited method or a caller reads one of them
(see README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule
from pp_attr_lint.textio import display_path
from pp_attr_lint.unjudged import MISSING_CODE


class SkippedInitAttribute(Rule):
    # the files that read `x.end_layer` on another object too (what :meth:`_judge_callers` judges)
    wants_attribute_reads = True

    def prefilter(self, data: bytes) -> bool:
        """An explicit base ``__init__`` call that may skip a base
        (:func:`pp_attr_lint.kinds.skipped_init.may_skip_base_init`; imported here: a warm run
        loads the rules but no analysis code)."""
        from pp_attr_lint.kinds.skipped_init import may_skip_base_init

        return may_skip_base_init(data)

    def check(self, ctx):
        from pp_attr_lint.semantic.init import Inits
        from pp_attr_lint.semantic.model import RankFacts

        out = []
        unresolved = Inits.of(ctx).unresolved
        for cname, rec in ctx.summary["classes"].items():
            if not _judged(cname, rec):
                continue
            init = rec["methods"]["__init__"]
            key = (ctx.module, cname)
            f = self._judge_class(ctx, key, rec, init)
            if f is not None:  # none for a model the engine never runs under PP (a refused drafter)
                out += RankFacts.of(ctx).unless_refused(self.code, cname, [f])
            elif key in unresolved and unresolved[key].reason in MISSING_CODE:
                # the MRO leads into code the run does not have (a renamed copy whose absolute
                # imports name the original package, a plugin without vLLM): which base
                # `__init__` the explicit call skips cannot be told, and that is said
                from pp_attr_lint.model import NotJudged

                e = unresolved[key]
                out.append(NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=rec["line"], column=1,
                                     detail=f"`{cname}.__init__` "
                                            f"{_how(init).removesuffix(', which').removesuffix(' and so')}: {e.detail}",
                                     dep_path=e.path))
        out.extend(self._judge_callers(ctx))
        return out

    # -- the class that skips ------------------------------------------------------------------
    def _judge_class(self, ctx, key, rec, init):
        from pp_attr_lint.semantic.init import Inits

        inits = Inits.of(ctx)
        skipped = inits.skipped(key)
        if not skipped:
            return None
        r = ctx.resolver
        mro = r.mro(key)
        reads = []
        for base, _scope, missing in skipped:
            for attr in missing:
                got = inits.inherited_read(key, mro, attr)
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
        help = (f"Call `{base[1]}.__init__` (or `super().__init__(...)`), or set "
                + ", ".join(f"`self.{a}`" for a in dict.fromkeys(a for _, a, _ in reads))
                + f" in `{key[1]}.__init__`")
        line = init["line"]
        return self.finding(ctx, line, 0, line, 0, message, explanation, help=help,
                            witness={"ranks": "every rank (pipeline parallelism not needed)", "config": {}})

    # -- the callers ---------------------------------------------------------------------------
    def _judge_callers(self, ctx):
        """Reads of a watched attribute (``x.end_layer``) whose receiver is typed as a base of
        a class that skips the ``__init__`` setting it (found in the base's module and the
        checked files)."""
        from pp_attr_lint.index.summary import scopes_by_line
        from pp_attr_lint.resolve import Unresolved
        from pp_attr_lint.semantic.init import Inits, built_exactly, fails_before

        inits = Inits.of(ctx)
        out = []
        r = ctx.resolver
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
            if built_exactly(r, tuple(chain), ctx.module, (ctx.module, read["class"]) if read["class"] else None, scope):
                continue  # `self.model = TextModel(...)`: holds a TextModel, never a subclass
            for base in sorted(cands):
                try:
                    if r.attribute_status(base, read["attr"]) != "present":
                        continue
                except Unresolved:
                    continue
                for sub in self._subclasses(ctx, base):
                    missing = [m for b, _, ms in inits.skipped(sub) for m in ms]
                    if read["attr"] in missing and not fails_before(inits.tree(ctx.file.path), read, chain, set(missing)):
                        recv = ".".join(chain)
                        message = (f"`{recv}` is typed as `{base[1]}`, but its subclass `{sub[1]}` skips the `__init__` "
                                   f"that sets `{read['attr']}` and never sets it: reading `{recv}.{read['attr']}` "
                                   f"raises AttributeError when it holds a `{sub[1]}`.")
                        explanation = [f"`{sub[1]}` MRO: {' -> '.join(e[1] for e in r.mro(sub))}",
                                       f"`{sub[1]}()` runs {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(sub))}"]
                        help = (f"Have `{sub[1]}.__init__` run the base `__init__` that sets `{read['attr']}`, "
                                f"or set `self.{read['attr']}` there")
                        out.append(self.finding(ctx, read["line"], read["col"], read["end_line"], read["end_col"],
                                                message, explanation, help=help,
                                                witness={"ranks": "every rank (pipeline parallelism not needed)",
                                                         "config": {}}))
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

"""PPA101 placeholder-attribute: an attribute of a value that is a ``PPMissingLayer`` on some
pipeline-parallel rank, read where the guard does not rule that rank out (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.kinds import placeholder
from pp_attr_lint.rule_api import Rule


_NAMES = tuple(b"." + n.encode() for n in sorted(("embed_tokens", "norm", "lm_head", "final_layernorm", "wte", "ln_f",
                                                  "embed_in", "final_layer_norm", "word_embeddings")))
_IDENT_START = re.compile(rb"[a-z_]")
# `lm_head = x.embed_tokens` (also `= (x.embed_tokens if tied else ...)`), or a later branch
# `... else x.embed_tokens` of the value (within a few lines)
_PLACEHOLDER_NAMES = b"|".join(n[1:] for n in _NAMES)
_ALIAS = re.compile(rb"lm_head\s*=\s*\(?\s*[\w.]+\.(?:" + _PLACEHOLDER_NAMES + rb")(?![\w.(\[])")
_ALIAS_ELSE = re.compile(rb"lm_head\s*=(?!=)(?:[^\n]*\n){0,8}?[^\n]*\belse\s+\(?\s*[\w.]+\.(?:"
                         + _PLACEHOLDER_NAMES + rb")(?![\w.(\[])")


class PlaceholderAttribute(placeholder.PlaceholderRule, Rule):
    kinds = ("read", "alias", "arg")

    def prefilter(self, data: bytes) -> bool:
        """A file that names ``PPMissingLayer`` (any attribute it assigns one to may be read or
        aliased into ``lm_head``, ``self.embedding = PPMissingLayer()`` as well as
        ``self.embed_tokens``), a tied head (``tie_weights(``), or a read through a name that holds
        a placeholder in vLLM's models (``self.model.embed_tokens.weight``) or an alias of one into
        ``lm_head`` (``self.lm_head = self.model.embed_tokens``): the placeholder may be assigned
        in another file, so ``PPMissingLayer`` need not occur."""
        if b"PPMissingLayer" in data or b"tie_weights(" in data:
            return True
        return b"lm_head" in data and (_ALIAS.search(data) is not None or _ALIAS_ELSE.search(data) is not None)

    def judge(self, ctx, rf, safe, kind, cls, fline, chain, attr, pos, guard, guarded, extra):
        from pp_attr_lint.semantic import guards
        if kind == "read" and attr in safe:
            return None
        owners = rf.receiver_classes(chain[:-1], cls, fline)
        if owners is None and ctx.resolver.why is not None:
            # the receiver's class cannot be told (code the run does not have, a name bound twice):
            # a read of a placeholder's attribute cannot be judged, and that is said
            return self.not_judged(ctx, ctx.resolver.why, chain, pos)
        if not owners:
            return None
        conds, wheres, missing = [], [], None
        for k in sorted(owners):
            pc = rf.placeholder_condition(k, chain[-1])
            if pc is None and rf.placeholder_failure is None:
                return None  # some candidate never holds a placeholder there (or cannot be told)
            if pc is None:  # its bases lead into code the run does not have
                missing = missing or rf.placeholder_failure
                continue
            conds.append(pc[0])
            wheres.append(rf.where(pc[1]))
        if missing is not None:
            return self.not_judged(ctx, missing, chain, pos)
        cond = guards.f_or(*conds)
        by_rank = bool(guards.rank_atoms(cond))
        if not by_rank and ctx.summary_function_name(cls, fline) not in ("__init__", *F.ENGINE_METHODS):
            # the placeholder is chosen by a test that is not the rank's place (a feature flag, a
            # helper such as pp_stage_needs_embedding): judged only where every rank runs the line
            return None
        use_guard = guards.f_and(guard, guards.LAST) if kind == "alias" else guard
        env = rf.satisfying(guards.f_and(use_guard, cond), guard, cls, fline)
        if env is None:
            return None
        recv = ".".join(chain)
        holder = " | ".join(k[1] for k in sorted(owners))
        rank = guards.rank_words(env) if by_rank else (
            "every rank" if cond == guards.TRUE else f"the ranks where {guards.describe(cond)}")
        where = ", ".join(dict.fromkeys(wheres))
        if kind == "read":
            what = f"reads `{recv}.{attr}`"
            fails = f"`PPMissingLayer` has no attribute `{attr}`"
        elif kind == "alias":
            what = f"makes `{attr}` an alias of `{recv}`"
            fails = (f"`{attr}` is used on the last rank (the logits processor reads its `weight` / "
                     f"`quant_method`), which a `PPMissingLayer` does not have")
        else:
            what = f"passes `{recv}` to `{extra}()`, which reads its `{attr}`"
            fails = f"`PPMissingLayer` has no attribute `{attr}`"
        message = (f"`{recv}` is a `PPMissingLayer` placeholder on {rank} ({holder}.{chain[-1]} is assigned one at "
                   f"{where}); this line {what} there, and {fails}: AttributeError on that rank only.")
        explanation = [
            f"`{'.'.join(chain[:-1])}` is a `{holder}`; its `{chain[-1]}` is a `PPMissingLayer` "
            f"{guards.when(guards.f_or(*conds))} (assigned at {where})",
            guards.runs_when(guard) + ("; the model uses the alias on the last rank" if kind == "alias" else ""),
            "both hold on " + rank + guards.describe_env(env),
        ]
        real = guards.f_not(cond)  # where the attribute holds the real module
        if kind == "alias":
            help = (f"Build `{recv}` on the last rank too (it is a real module only {guards.when(real)}), or give "
                    f"`{attr}` a module of its own there instead of an alias of `{recv}`")
        elif real == ("F",):
            help = f"Build `{chain[-1]}` as a real module where this line runs, or do not read `{recv}.{attr}` there"
        else:
            help = (f"Run this line only {guards.when(real)}, where `{recv}` is a real module, or build "
                    f"`{chain[-1]}` on this rank too; `isinstance({recv}, PPMissingLayer)` tells the placeholder")
        row, col, end_row, end_col = pos
        # an alias fails where the last rank uses it, when serving (masking reads it)
        return self.finding(ctx, row, col, end_row, end_col, message, explanation, help=help,
                            witness=guards.witness(env, rank),
                            fix_data={"fails_in": "serving"} if kind == "alias" else None)


RULE = PlaceholderAttribute(
    code="PPA101",
    name="placeholder-attribute",
    summary="Attribute read on a value that is a PPMissingLayer on some pipeline-parallel rank",
    needles=("PPMissingLayer", "tie_weights", placeholder.REGISTER_NEEDLE),
    facts_key=placeholder.FACTS_KEY,
    version=2,  # the collector records whether a read lies in a deferred body
)

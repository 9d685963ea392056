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
_ALIAS = re.compile(rb"lm_head\s*=\s*[\w.]+\.(?:embed_tokens|wte|embed_in|word_embeddings)\s*$", re.M)


class PlaceholderAttribute(placeholder.PlaceholderRule, Rule):
    kinds = ("read", "alias", "arg")

    def prefilter(self, data: bytes) -> bool:
        """A tied head (``tie_weights(``), or, in a file that builds placeholders, a read through a
        name that may hold one (``.embed_tokens.weight``) or an alias into ``lm_head``."""
        if b"tie_weights(" in data:
            return True
        if b"PPMissingLayer" not in data:
            return False
        for name in _NAMES:
            i = data.find(name)
            while i >= 0:
                end = i + len(name)
                if data[end:end + 1] == b"." and _IDENT_START.match(data, end + 1):
                    return True
                i = data.find(name, end)
        return _ALIAS.search(data) is not None

    def judge(self, ctx, rf, safe, kind, cls, fline, chain, attr, pos, guard, guarded, extra):
        from pp_attr_lint import ranks

        if kind == "read" and attr in safe:
            return None
        owners = rf.receiver_classes(chain[:-1], cls, fline)
        if not owners:
            return None
        conds, wheres = [], []
        for k in sorted(owners):
            pc = rf.placeholder_condition(k, chain[-1])
            if pc is None:
                return None  # some candidate never holds a placeholder there (or cannot be told)
            conds.append(pc[0])
            wheres.append(rf.where(pc[1]))
        cond = ranks.f_or(*conds)
        by_rank = bool(ranks.rank_atoms(cond))
        if not by_rank and ctx.summary_function_name(cls, fline) not in ("__init__", *F.ENGINE_METHODS):
            # the placeholder is chosen by a test that is not the rank's place (a feature flag, a
            # helper such as pp_stage_needs_embedding): judged only where every rank runs the line
            return None
        use_guard = ranks.f_and(guard, ranks.LAST) if kind == "alias" else guard
        env = rf.satisfying(ranks.f_and(use_guard, cond), guard, cls, fline)
        if env is None:
            return None
        recv = ".".join(chain)
        holder = " | ".join(k[1] for k in sorted(owners))
        rank = ranks.rank_words(env) if by_rank else f"the ranks where {ranks.describe(cond)}"
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
            f"`{'.'.join(chain[:-1])}` is a `{holder}`; its `{chain[-1]}` is a `PPMissingLayer` when "
            f"{ranks.describe(ranks.f_or(*conds))} (assigned at {where})",
            f"this line runs when {ranks.describe(guard)}" + (" and the model runs on the last rank" if kind == "alias" else ""),
            "both hold on " + rank + ranks.describe_env(env),
        ]
        row, col, end_row, end_col = pos
        return self.finding(ctx, row, col, end_row, end_col, message, explanation)


RULE = PlaceholderAttribute(
    code="PPA101",
    name="placeholder-attribute",
    summary="Attribute read on a value that is a PPMissingLayer on some pipeline-parallel rank",
    needles=("PPMissingLayer", "tie_weights", placeholder.REGISTER_NEEDLE),
    facts_key=placeholder.FACTS_KEY,
)

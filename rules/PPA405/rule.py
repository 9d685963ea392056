"""PPA405 config-layer-id-index: ``self.layers[i].attr`` (or ``self.model.layers[i].attr``) where the
list comes from ``make_layers`` and ``i`` walks a list of global layer ids of the model config
(``for i in config.engram_layer_ids``) or, in ``load_weights``, is parsed from a checkpoint name
(``int(name.split(".")[2])``): a rank that lacks such a layer reads a ``PPMissingLayer`` (README.md)."""

from __future__ import annotations

from pp_attr_lint.kinds.placeholder import FACTS_KEY, collect_facts, read_not_judged
from pp_attr_lint.rule_api import Rule


class ConfigLayerIdIndex(Rule):
    def prefilter(self, data: bytes) -> bool:
        # imported here, not at the top: a warm run loads the rules but none of the analysis
        from pp_attr_lint.engines.layer_ids import CONFIG_LAYERS, LONG_CHAIN

        from pp_attr_lint.semantic.layer_builders import NEEDLES

        return (any(n in data for n in NEEDLES) or LONG_CHAIN.search(data) is not None) \
            and (CONFIG_LAYERS.search(data) is not None or b".split(" in data)

    def collect(self, tree, lines):
        if not self.prefilter(lines.source.encode()):
            return None
        from pp_attr_lint.engines.layer_ids import config_id_reads

        return config_id_reads(tree, lines) or None

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.engines.layer_ids import position_gap
        from pp_attr_lint.semantic.model import RankFacts

        rf, out, fixed = RankFacts.of(ctx), [], set()  # fixed: one skip per loop fixes its other reads
        for cls, method, fline, chain, var, src, attr, line, col, end_line, end_col, at, unread, places, builder \
                in facts:
            if builder is not None and not rf.is_layer_builder(ctx.module, builder):
                continue  # `self.<list>` is assigned from a call that builds no make_layers list
            recv, lst, how = ".".join(chain[:-1]), chain[-1], f"`self.{chain[-1]}` is assigned from `make_layers` in `{cls}`"
            if len(chain) > 2:  # a list of another object: the semantic model tells whose
                owners, how = rf.list_owners(tuple(chain), cls, fline)
                if not owners:
                    out += [n for n in [read_not_judged(self.code, ctx, rf.owner_failure, chain, (line, col))] if n]
                    continue
                if not how.startswith("`") or rf.conditional_list_note(owners, lst) is not None:
                    at = None  # the range attributes of the owner are not established: help text only
            if unread is not None or places == "?":  # a helper on the way may skip the ids this rank lacks
                why = ("stage-guard", f"`{unread}` on the way to the read may test what this rank owns", None) \
                    if unread is not None else ("stage-guard", "a local flag on the way to the read, assigned a "
                                                "test of the pipeline position, is set twice or under a test: which "
                                                "ranks reach the read cannot be said", None)
                out += rf.unless_refused(self.code, cls, [read_not_judged(self.code, ctx, why, chain, (line, col))])
                continue
            fix, rng = None, f"{recv}.start_layer <= {var} < {recv}.end_layer"
            if at is not None and (at[0], at[1]) not in fixed:
                fixed.add((at[0], at[1]))
                unit = "\t" if "\t" in at[2] else "    "
                fix = self.make_fix("safe", f"Skip the ids this rank does not own (`{var}` outside "
                                            f"`[{recv}.start_layer, {recv}.end_layer)`)",
                                    [self.replace((at[0], at[1], at[0], at[1]), f"if not {rng}:\n{at[2]}{unit}"
                                                  f"continue  # another pipeline-parallel rank owns this layer\n{at[2]}")])
            parsed = src.startswith("int(")
            what = f"is `{src}`, a global layer id read from a checkpoint weight's name" if parsed else \
                f"walks `{src}`, global layer ids"
            ids = "that layer" if parsed else "one of those layers"
            message = (f"`{recv}.{lst}[{var}].{attr}` in `{cls}.{method}`: `{var}` {what}, but "
                       f"`{recv}.{lst}` comes from `make_layers`, whose slots outside `[start_layer, end_layer)` hold "
                       f"`PPMissingLayer`: AttributeError `{attr}` on every pipeline-parallel rank that lacks {ids}"
                       + (" (a test of the pipeline position on the way does not say which layers a rank owns)"
                          if places else "") + ".")
            explanation = [f"{how}: this rank's layers only", f"`{var}` takes every id of `{src}`"
                           + (" (every rank reads every checkpoint weight)" if parsed else "") + ", with no test of "
                           "`start_layer` / `end_layer` or `isinstance(..., PPMissingLayer)` on the way to the read",
                           "fails on any rank of a pipeline of size >= 2 that does not own " + (ids if parsed else
                           "one of the listed layers (rank 0 for a late one, the last rank for an early one)")]
            if places:
                explanation[-1:] = [position_gap(places), "fails there at pipeline_parallel_size >= 2 when "
                                    + (ids if parsed else "one of the listed layers") + " is among them"]
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation, fix=fix,
                help=f"Skip the ids this rank does not own: `if not {rng}: continue`"
                     + ("" if parsed else f" (or filter `{src}` to that range)"),
                witness={"ranks": f"every pipeline-parallel rank that does not own a layer of `{src}`"
                         + (f" and reaches the read ({', '.join(places)})" if places else ""), "config": {}})])
        return out


RULE = ConfigLayerIdIndex(
    code="PPA405",
    name="config-layer-id-index",
    summary="a global layer id from a config list indexes a make_layers list",
    fix_applicability="safe",
    version=7,
    uses_facts=((FACTS_KEY, collect_facts, 2),),
)

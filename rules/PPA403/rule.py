"""PPA403 stage-local-layer-id: a constant (global) layer id passed to an accessor that indexes a
pipeline stage's own layers by ``layer_id - self.start_layer`` (see README.md).

The rule works from the accessor's side: a file that holds such an accessor (its bytes hold
``- self.start_layer``, a rare test) is checked, and the tree is scanned for the calls of the
accessor's name (as :class:`pp_attr_lint.semantic.model.RankFacts` scans for a method's callers).  A call
in another file is reported at the accessor's index, naming the call; a call in the same file is
reported at the call.  So a file's findings depend only on its own bytes and the tree it lies in,
never on which files are named or which rules are selected.

The contract (what an accessor is, which classes are built with a stage's range) is
:mod:`pp_attr_lint.engines.layer_ids`; the calls and their guards, :mod:`pp_attr_lint.semantic.callsites`
with the stage tests of :mod:`pp_attr_lint.semantic.stage`; the receivers' classes,
:mod:`pp_attr_lint.semantic.constructions`.
"""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule


class StageLocalLayerId(Rule):
    def prefilter(self, data: bytes) -> bool:
        """A file that subtracts ``self.start_layer`` (``[layer_id - self.start_layer]``, or
        ``local = layer_id - self.start_layer``): the only shapes of accessor the rule reads; the
        calls of an accessor are found by scanning the tree when its file is checked."""
        from pp_attr_lint.engines.layer_ids import INDEX

        return b"self.start_layer" in data and INDEX.search(data) is not None

    def collect(self, tree, lines):
        # runs on every parsed file: one whose text does not subtract `self.start_layer` has no
        # accessor (the same test as the prefilter, so most files cost one search)
        from pp_attr_lint.engines import layer_ids

        if not layer_ids.may_hold_accessor(lines.source):
            return None
        return layer_ids.accessors(tree, lines) or None

    def check(self, ctx):
        """The findings of ``ctx``'s file: each call in the tree that passes a constant layer id to
        one of the file's accessors (reported at the accessor's index, or at the call when it is
        in this file), and a :class:`~pp_attr_lint.model.NotJudged` record for each such call
        whose receiver cannot be established, or for all of them when a file of the tree that may
        hold one cannot be read or parsed."""
        import ast

        from pp_attr_lint.engines.layer_ids import accessor_of, layer_id_constant
        from pp_attr_lint.index.astutil import ref_chain
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic import guards as G
        from pp_attr_lint.semantic.callsites import argument, call_sites
        from pp_attr_lint.semantic.constructions import NotEstablished, Receivers
        from pp_attr_lint.semantic.model import RankFacts
        from pp_attr_lint.semantic.stage import opaque, stage_atom
        from pp_attr_lint.textio import display_path

        accessors = ctx.facts(self.code)
        if not accessors:
            return []
        rf = RankFacts.of(ctx)
        own = {(ctx.module, a[0], a[1]): a for a in accessors}
        names = frozenset(a[1] for a in accessors)
        files = rf.tree_files(*sorted(b"." + n.encode() for n in names))
        first = min(accessors, key=lambda a: (a[5], a[6]))
        if files is None:
            return [NotJudged(code=self.code, reason="syntax-error", path=ctx.file.path, row=first[5],
                              column=first[6] + 1,
                              detail=f"calls of `{first[0]}.{first[1]}`: a file of the tree that may call it cannot "
                                     f"be read or parsed")]
        receivers = Receivers(ctx, rf, self.code)
        out = []
        for path, module, tree, _lines in files:
            for call, cls, fn, guard, _caught in call_sites(tree, names, stage_atom):  # (an IndexError)
                m = call.func.attr
                shaped = [a for a in accessors if a[1] == m and layer_id_constant(argument(call, a[3], a[2]))]
                if not shaped:
                    continue
                first_only = G.implies(guard, G.FIRST)
                if first_only and all(argument(call, a[3], a[2]).value == 0 for a in shaped):
                    continue  # runs on the first stage only, which holds layer 0
                a0 = shaped[0]
                site = f"{display_path(path)}:{call.lineno}"
                text = ast.unparse(call)
                chain = ref_chain(call.func.value)
                try:
                    if chain is None:
                        raise NotEstablished("receiver-unresolved", f"the receiver of `{m}` is an expression")
                    classes, why = receivers.classes(chain, module, cls, fn)
                    hit = accessor_of(receivers, classes, m, own, lambda mod: ctx.facts(self.code, mod))
                except NotEstablished as e:
                    row, col = (call.lineno, call.col_offset) if path == ctx.file.path else (a0[5], a0[6])
                    out.append(NotJudged(code=self.code, reason=e.reason, path=ctx.file.path, row=row,
                                         column=col + 1,
                                         detail=f"`{text}` at {site}, a call of `{a0[0]}.{m}` when its receiver "
                                                f"is one: {e.detail}"))
                    continue
                if hit is None:
                    continue
                acc, holders, stages = hit
                why = why + list(dict.fromkeys(stages))
                arg = argument(call, acc[3], acc[2])
                if not layer_id_constant(arg):
                    continue
                if first_only or opaque(guard):
                    row, col = (call.lineno, call.col_offset) if path == ctx.file.path else (acc[5], acc[6])
                    out.append(NotJudged(code=self.code, reason="stage-guard", path=ctx.file.path, row=row,
                                         column=col + 1,
                                         detail=f"`{text}` at {site} passes layer {arg.value} to `{acc[0]}.{m}`, under "
                                                f"a test that names the pipeline stage in a way that does not tell "
                                                f"which stages run it"))
                    continue
                out.append(self._finding(ctx, acc, holders, call, arg, cls, fn, chain, why, path, site, text,
                                         _lines))
        return out

    def _finding(self, ctx, acc, holders, call, arg, cls, fn, chain, why, path, site, text, lines):
        import ast

        from pp_attr_lint.semantic.constructions import qual

        cname, m, param, _pos, buf, row, col, end_row, end_col, via, index = acc
        value = ast.unparse(arg)
        recv = ".".join(chain)
        same = path == ctx.file.path
        caller = qual(cls, fn)
        message = (f"`{caller}` passes the constant layer id {value} to `{cname}.{m}`{'' if same else f' ({site})'}, "
                   f"which reads `{index}`"
                   + (f" through `{via}`" if via else "")
                   + f": a pipeline stage's `{buf}` holds only its own layers, so on every stage whose "
                     f"`start_layer` is past layer {value} the index is negative (another layer's entry) or "
                     f"out of range (IndexError).")
        explanation = list(why) + [
            f"`{recv}` is a `{' | '.join(sorted(set(holders)))}`, whose `{m}` indexes `{index}`"
            + (f" (through `{via}`)" if via else "") + ": a global layer id minus the stage's first layer",
            f"{value} is a global layer id that is not adjusted to the stage: only the stage that holds layer "
            f"{value} has it",
        ]
        if not same:
            explanation.append(f"reported at the index in `{cname}`: the call is `{text}` at {site}")
        help = (f"Pass a layer this stage holds (a layer's own `layer_id`, or `start_layer + i`), or read what "
                f"you need from the model config instead of layer {value}'s entry (e.g. the head size: "
                f"`model_config.v_head_dim`)")
        if same:
            row, col = call.lineno, lines.col(call.lineno, call.col_offset)
            end_row, end_col = call.end_lineno, lines.col(call.end_lineno, call.end_col_offset)
        return self.finding(ctx, row, col, end_row, end_col, message, explanation, help=help,
                            witness={"ranks": f"every pipeline-parallel rank whose stage starts after layer {value} "
                                              f"(rank > 0)", "config": {},
                                     # an index past the stage's own layers (IndexError, not a silent
                                     # read of another layer as under an even split) needs a stage
                                     # that starts after more layers than it holds
                                     "layer_partition": "front-loaded"})


RULE = StageLocalLayerId(
    code="PPA403",
    name="stage-local-layer-id",
    summary="a constant global layer id passed to an accessor that indexes a stage's own layers",
    version=1,
)

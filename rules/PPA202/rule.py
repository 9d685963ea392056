"""PPA202 forward-drops-stage-input: a model the engine loads under pipeline parallelism whose
``forward`` takes no ``pp_proxy_tensors`` and calls an inner model that needs them on the ranks
after the first (see README.md)."""

from __future__ import annotations

from typing import NamedTuple

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule


class _Span(NamedTuple):
    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


def _unread(rf, key):
    """The :class:`~pp_attr_lint.resolve.Unresolved` that keeps the calls of entry class
    ``key``'s ``forward`` from being read, when the engine has no refusal, the class's own
    ``forward`` takes no ``pp_proxy_tensors`` and its MRO cannot be read (a base of another
    package: SGLang's `MultiModalityCausalLM(PreTrainedModel)`); else ``None``."""
    from pp_attr_lint.resolve import Unresolved
    from pp_attr_lint.semantic.entry import SGLANG_STAGE_INPUT

    if rf.pp_forward_requirement(key[0].split(".", 1)[0]) is not None \
            or rf.forward_accepts(key, SGLANG_STAGE_INPUT) is not False:
        return None
    try:
        rf.r.mro(key)
    except Unresolved as e:
        return e
    except Exception:  # noqa: BLE001  (cannot tell: nothing said of it)
        return None
    return None


class ForwardDropsStageInput(Rule):
    def check(self, ctx):
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic import guards as G
        from pp_attr_lint.semantic.entry import forward_failure
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        out = []
        for key in rf.entry_classes(ctx.module) or ():
            if key[0] != ctx.module:
                continue
            try:
                ff = forward_failure(rf, key)
            except Exception:  # noqa: BLE001  (cannot tell: nothing said of it)
                ff = None
            if ff is None:
                unread = _unread(rf, key)
                if unread is not None:  # the calls of a `forward` without the parameter are not read
                    cnode = rf.reader.class_node(key)
                    if cnode is not None:
                        out.append(NotJudged(code=self.code, reason=unread.reason, path=ctx.file.path,
                                             row=cnode.lineno, column=cnode.col_offset + 1, dep_path=unread.path,
                                             detail=f"`{key[1]}.forward` takes no `pp_proxy_tensors`; whether it "
                                                    f"calls an inner model that needs them is not read: "
                                                    f"{unread.detail}"))
                continue
            node, callee = ff.site.node, ff.site.callee[0]
            definer = rf.entry.definer(key, "forward") or key
            lines = rf.reader.module_parsed(ctx.module)[3]  # the checked file: character columns
            inherited, at = "", f"line {ff.site.row}"
            if definer[0] != ctx.module:
                # `forward` comes from a base in another file: the finding sits on the class
                cnode = rf.reader.class_node(key)
                if cnode is None:
                    continue
                at = f"{definer[0].rsplit('.', 1)[-1]}.py:{ff.site.row}"
                inherited = f" (inherited from `{definer[1]}`, {at})"
                node = _Span(cnode.lineno, cnode.col_offset, cnode.lineno, cnode.col_offset + len(f"class {key[1]}"))
            col, end_col = lines.col(node.lineno, node.col_offset), lines.col(node.end_lineno, node.end_col_offset)
            if any(w in key[1] for w in F.DRAFTER_NAME_WORDS):
                if rf.refused_under_pp(key[0], key[1]):
                    continue  # the engine lets no speculative decoding run under PP
                # a speculative draft model: whether the engine runs it under PP is its settings'
                out.append(NotJudged(code=self.code, reason="engine-fact-unknown", path=ctx.file.path,
                                     row=node.lineno, column=col + 1,
                                     detail=f"`{key[1]}` is named as a speculative draft model; whether the engine "
                                            f"runs it under pipeline parallelism is not in the analysed code"))
                continue
            ranks = (G.LATER_RANKS_WORDS if G.implies(G.f_not(G.FIRST), ff.ranks)
                     else G.rank_words(G.satisfying(ff.ranks) or {}))
            where = f"{ff.module.rsplit('.', 1)[-1]}.py:{ff.row}"
            handed = "".join(f", which hands its `None` on to `{s.callee[0][1]}.forward`" for s in ff.chain)
            when = "" if ff.condition == G.TRUE else f" when `{G.describe(ff.condition)}`"
            message = (f"`{key[1]}.forward`{inherited} takes no `{ff.param}`, so the engine never hands it what a "
                       f"rank after the first receives, and it calls `{callee[1]}.forward` without it{when}"
                       f"{handed}; there `{ff.text}` ({where}) "
                       f"fails on {ranks}: the model cannot run under pipeline parallelism.")
            steps = "".join(f" -> {s.how} (line {s.row}) -> `{s.callee[0][1]}.forward`" for s in ff.chain)
            explanation = [
                f"the engine loads `{key[1]}` (its module's `EntryClass`) and does not refuse it under pipeline "
                f"parallelism: no model-runner check that `forward` takes `{ff.param}` is in the analysed code",
                f"path: the engine calls `{key[1]}.forward` on every rank -> {ff.site.how} ({at}) -> "
                f"`{callee[1]}.forward`{steps}, line {ff.row}: `{ff.text}`",
                f"`{ff.param}` is `None` there: nothing passes it on this path",
            ]
            if ff.condition != G.TRUE:
                explanation.append(f"the calls run {G.when(ff.condition)}: a test of `forward`'s own arguments, "
                                   f"which the engine's calls can make hold")
            env = G.satisfying(G.f_and(ff.condition, ff.ranks)) or {}
            out.append(self.finding(ctx, node.lineno, col, node.end_lineno, end_col, message, explanation,
                                    help=f"Take `{ff.param}=None` in `{definer[1]}.forward` and pass it on: "
                                         f"`{ff.param}={ff.param}`",
                                    witness=G.witness(env, ranks)))
        return out


RULE = ForwardDropsStageInput(
    code="PPA202",
    name="forward-drops-stage-input",
    summary="forward takes no pp_proxy_tensors and calls an inner model that needs them after the first rank",
    needles=("EntryClass",),
)

"""PPA415 unsupported-model-under-pp: the engine's worker reads the stage output off what a
model's ``forward`` returned on the ranks before the last, and the engine does not refuse, under
pipeline parallelism, the models whose ``forward`` takes no ``pp_proxy_tensors`` (see README.md)."""

from __future__ import annotations

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule

# how many of the models a message names (the `= why:` lines name them all, up to _LISTED)
_NAMED, _LISTED = 3, 20


def _sends_nothing(ctx, rf, key, depth: int = 3) -> bool:
    """Whether no code that the ``forward`` of class ``key`` runs can build the stage output: the
    files of the ``forward`` it has and of every method its calls reach (at most ``depth`` calls
    down, :meth:`~pp_attr_lint.semantic.calls.CallContext.sites`) never name ``PPProxyTensors``.
    A wrapper around a model that does (SGLang's LLaVA) is PPA202's; ``False`` when a file cannot
    be read."""
    cc = rf.call_context
    seen, todo = set(), [(tuple(key), "forward", 0)]
    while todo:
        k, m, d = todo.pop()
        if (k, m) in seen:
            continue
        seen.add((k, m))
        got = cc.method_node(k, m)
        if got is None:
            continue
        path = ctx.project.path(got[0][0])
        data = rf.reader.read_bytes(path) if path else None
        if data is None or b"PPProxyTensors" in data:
            return False
        if d < depth:
            todo += [(s.callee[0], s.callee[1], d + 1) for s in cc.sites(k, m) or ()]
    return True


def _embedding_only(rf, key) -> bool:
    """Whether the ``forward`` of class ``key`` serves embeddings only: it takes ``get_embedding``
    with the default ``True``, or asserts it.  SGLang's runner passes ``get_embedding=True`` to a
    model served as an embedding model (sglang/srt/model_executor/model_runner.py), whose batches
    the worker runs through ``forward_batch_embedding``, which reads no stage output."""
    import ast

    got = rf.call_context.method_node(key, "forward")
    if got is None:
        return False
    fn = got[2]
    args = fn.args.posonlyargs + fn.args.args
    defaults = dict(zip([a.arg for a in args][len(args) - len(fn.args.defaults):], fn.args.defaults))
    default = defaults.get("get_embedding")
    if isinstance(default, ast.Constant) and default.value is True:
        return True
    return any(isinstance(n, ast.Assert) and "get_embedding" in {x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)}
               for n in ast.walk(fn))


class UnsupportedModelUnderPP(Rule):
    def prefilter(self, data: bytes) -> bool:
        """A file that reads ``.tensors`` and hands ``pp_proxy_tensors`` on: where a worker reads
        the stage output off a model's result."""
        return b".tensors" in data and b"pp_proxy_tensors" in data

    def check(self, ctx):
        from pp_attr_lint.semantic.entry import SGLANG_STAGE_INPUT
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        top = ctx.module.split(".", 1)[0]
        reads = [r for r in rf.stage_output_reads(top) if r[0] == ctx.module]
        if not reads or rf.pp_forward_requirement(top) is not None:
            return []  # no such read here, or the engine refuses those models under PP
        models = [k for k in rf.models_without(top, SGLANG_STAGE_INPUT)  # (a drafter: another worker's)
                  if not any(w in k[1] for w in F.DRAFTER_NAME_WORDS) and _sends_nothing(ctx, rf, k)
                  and not _embedding_only(rf, k)]
        if not models:
            return []
        lines = rf.reader.module_parsed(ctx.module)[3]
        named = ", ".join(f"`{k[1]}`" for k in models[:_NAMED]) + (", ..." if len(models) > _NAMED else "")
        listed = [f"`{k[1]}` ({k[0].rsplit('.', 1)[-1]}.py): its `forward` takes no `{SGLANG_STAGE_INPUT}`, and "
                  f"no code it runs builds a `PPProxyTensors`" for k in models[:_LISTED]]
        if len(models) > _LISTED:
            listed.append(f"and {len(models) - _LISTED} more entry classes of the same kind")
        out = []
        for _module, node, qual, call in reads:
            text = f"{node.value.id}.tensors"
            message = (f"`{qual}` reads `{text}` on every rank but the last, the stage output it expects "
                       f"`{call}(...)` to return, but the engine does not refuse under pipeline parallelism "
                       f"the {f'{len(models)} models' if len(models) != 1 else 'model'} whose `forward` takes no "
                       f"`{SGLANG_STAGE_INPUT}` ({named}): what their `forward` returns has no `tensors`, so "
                       f"this line raises AttributeError on every rank but the last, on the first batch.")
            explanation = [
                f"no model-runner check that `forward` takes `{SGLANG_STAGE_INPUT}` is in the analysed code "
                f"(SGLang 0.5.15 and later assert it under pipeline parallelism: `support_pp`)",
                f"`{text}` runs on every rank but the last: `{call}(...)` returns what the model's `forward` "
                f"returns",
                *listed,
            ]
            out.append(self.finding(ctx, node.lineno, lines.col(node.lineno, node.col_offset), node.end_lineno,
                                    lines.col(node.end_lineno, node.end_col_offset), message, explanation,
                                    help=f"Refuse such a model under pipeline parallelism (assert, when "
                                         f"`pp_size > 1`, that `forward` takes `{SGLANG_STAGE_INPUT}`, as SGLang "
                                         f"0.5.15's model runner does), or give its `forward` pipeline support",
                                    witness={"ranks": "every pipeline-parallel rank but the last", "config": {}}))
        return out


RULE = UnsupportedModelUnderPP(
    code="PPA415",
    name="unsupported-model-under-pp",
    summary="the worker reads the stage output of models whose forward takes no pp_proxy_tensors, unrefused",
    needles=(".tensors",),
)

"""PPA411 draft-layer-id-from-stage: a speculative draft head numbers its layers after the target's
(``start_layer_id=...``) with the number of target layers on this pipeline stage
(``model_config.get_num_layers(parallel_config)``) instead of the target's total: on the last
stage, which builds the drafter, the draft's layer names repeat those of the target layers held
there (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

# the keyword a draft model's backbone takes for the global id of its first layer (vLLM's
# llama_eagle.py and the EAGLE heads built on it: `LlamaModel(..., start_layer_id=...)`)
_KEYWORD = "start_layer_id"
# vLLM's ModelConfig (vllm/config/model.py): `get_num_layers(parallel_config)` is `end - start` of
# this rank's `get_layers_start_end_indices`; `get_total_num_hidden_layers()` the whole model's
_STAGE_COUNT = "get_num_layers"
_TOTAL = "get_total_num_hidden_layers"


def _stage_count(node) -> bool:
    import ast

    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == _STAGE_COUNT


def _collect(tree, lines) -> list:
    """``[[class, method, line, col, end_line, end_col, receiver text or None, use line]]``: each
    ``get_num_layers(...)`` call that a ``start_layer_id=`` keyword of a call in the same method
    takes, directly or through a local name bound once (``n = ...get_num_layers(...)``);
    ``receiver`` is the text before ``.get_num_layers`` when it ends in ``model_config`` (the
    call a fix may replace)."""
    import ast

    out = []
    for cls in module_classes(tree):
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            bound = {}  # local name -> its one binding's value
            counts: dict = {}
            for st in ast.walk(fn):
                if isinstance(st, ast.Name) and isinstance(st.ctx, ast.Store):
                    counts[st.id] = counts.get(st.id, 0) + 1
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    bound[st.targets[0].id] = st.value
            for call in ast.walk(fn):
                if not isinstance(call, ast.Call):
                    continue
                for kw in call.keywords:
                    if kw.arg != _KEYWORD:
                        continue
                    value = kw.value
                    if isinstance(value, ast.Name) and counts.get(value.id) == 1:
                        value = bound.get(value.id)
                    if not _stage_count(value):
                        continue
                    receiver = ast.get_source_segment(lines.source, value.func.value)
                    out.append([cls.name, fn.name, value.lineno, lines.col(value.lineno, value.col_offset),
                                value.end_lineno, lines.col(value.end_lineno, value.end_col_offset),
                                receiver if receiver and receiver.endswith("model_config") else None, kw.lineno])
    return out


class DraftLayerIdFromStage(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"start_layer_id=" in data and b".get_num_layers(" in data

    def collect(self, tree, lines):
        text = lines.source
        if "start_layer_id=" not in text or ".get_num_layers(" not in text:
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LAST_RANK_WORDS
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        out = []
        for cls, method, line, col, end_line, end_col, receiver, use in ctx.facts(self.code) or ():
            message = (f"`{cls}.{method}` numbers the draft model's layers from `{_STAGE_COUNT}(...)` (line {use}, "
                       f"`{_KEYWORD}=`), the number of target layers on this pipeline stage, not the target's "
                       f"total: on the last stage, which builds the drafter, the draft's layer ids repeat those of "
                       f"the target layers held there when that stage holds at least half of them "
                       f"(pipeline_parallel_size=2, an even number of target layers), and the engine rejects the "
                       f"second attention layer of the same name (`Duplicate layer name`).")
            explanation = [f"`{_STAGE_COUNT}(parallel_config)` is `end - start` of this rank's layers (vLLM's "
                           f"ModelConfig), the same as the total only without pipeline parallelism",
                           f"`{_KEYWORD}` names the draft's layers `layers.{{{_KEYWORD} + i}}` after the "
                           f"target's, in the same forward context as the target's layers",
                           "the engine builds the drafter on the last pipeline-parallel rank only"]
            fix = None
            if receiver is not None:
                fix = self.make_fix("unsafe", f"Number the draft's layers after all target layers: "
                                              f"`{receiver}.{_TOTAL}()`",
                                    [self.replace((line, col, end_line, end_col), f"{receiver}.{_TOTAL}()")])
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation, fix=fix,
                help=f"Use the target's total layer count (`model_config.{_TOTAL}()`) for `{_KEYWORD}`",
                witness={"ranks": f"{LAST_RANK_WORDS} (pipeline_parallel_size=2, an even number of "
                                  "target layers)", "config": {}})])
        return out


RULE = DraftLayerIdFromStage(
    code="PPA411",
    name="draft-layer-id-from-stage",
    summary="a draft head numbers its layers from this stage's layer count, not the target's total",
    fix_applicability="unsafe",
    version=1,
)

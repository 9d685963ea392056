"""PPA410 unallocated-proxy-key: an SGLang model's ``forward`` reads a key of the proxy tensors it
receives (``pp_proxy_tensors["k"]``) on a rank after the first, and the model runner allocates no
buffer of that key for the proxies it builds when it captures its graphs and warms up: the
forward raises ``KeyError`` there (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

_PARAM = "pp_proxy_tensors"


def _collect(tree, lines) -> dict | None:
    """``{"engine": top-level package of the ``PPProxyTensors`` import (``None`` when not
    imported), "reads": [[class, method, key, line, col, end_line, end_col, guard], ...]}``: the
    hard reads (:func:`pp_attr_lint.semantic.boundary.received_reads`) of the ``pp_proxy_tensors``
    parameter whose guard can hold on a rank after the first."""
    import ast

    from pp_attr_lint.semantic import boundary as B
    from pp_attr_lint.semantic import guards as G
    from pp_attr_lint.semantic.flow import FunctionGuards

    engine = next((n.module.split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
                   and any(a.name == "PPProxyTensors" for a in n.names)), None)
    reads = []
    for cls in module_classes(tree):
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            hard = [(k, n) for k, n, is_hard, p in B.received_reads(fn) if is_hard and p == _PARAM]
            if not hard:
                continue
            guards = FunctionGuards(fn, lines, cls=cls.name)
            for key, node in hard:
                guard = guards.of(node)
                if guard is None or G.satisfying(G.f_and(guard, G.f_not(G.FIRST))) is None:
                    continue  # not reached, or only on the first rank (which receives nothing)
                reads.append([cls.name, fn.name, key, node.lineno, lines.col(node.lineno, node.col_offset),
                              node.end_lineno, lines.col(node.end_lineno, node.end_col_offset), guard])
    return {"engine": engine, "reads": reads} if reads else None


class UnallocatedProxyKey(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"pp_proxy_tensors[" in data or b"pp_proxy_tensors.tensors[" in data

    def collect(self, tree, lines):
        text = lines.source
        if "pp_proxy_tensors[" not in text and "pp_proxy_tensors.tensors[" not in text:
            return None
        return _collect(tree, lines)

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.model import NotJudged
        from pp_attr_lint.semantic import guards as G
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        top = facts["engine"] or ctx.module.split(".", 1)[0]
        contract = rf.proxy_contract(top)
        out = []
        for cls, method, key, line, col, end_line, end_col, guard in facts["reads"]:
            if contract is None:
                out.append(NotJudged(code=self.code, reason="engine-fact-unknown", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"whether the model runner of `{top}` allocates a "
                                     f"proxy buffer `\"{key}\"` (no allocation of `pp_proxy_tensors` is read)"))
                continue
            how = contract["keys"].get(key)
            if how == "always":
                continue
            if how == "when":
                # allocated on some configurations: which ones this model is on is not read (and
                # nothing is listed for a class the engine never runs under PP)
                out += rf.unless_refused(self.code, cls, [NotJudged(
                    code=self.code, reason="config-condition", path=ctx.file.path, row=line, column=col + 1,
                    detail=f"whether the model runner of `{top}` allocates the proxy buffer `\"{key}\"` for "
                           f"this model: it does only {G.when(contract['conditions'][key])}")])
                continue
            module, site = contract["sites"][0]
            allocated = ", ".join(f"`\"{k}\"`" for k in sorted(contract["keys"]))
            message = (f"`{cls}.{method}` reads `pp_proxy_tensors[\"{key}\"]` on a rank after the first, but the "
                       f"model runner allocates no proxy buffer `\"{key}\"` (it allocates {allocated}): when the "
                       f"runner captures its graphs and warms up there, the forward raises `KeyError`.")
            explanation = [G.runs_when(guard),
                           f"the runner builds the proxies it passes at capture and warm-up from its allocated "
                           f"buffers ({module}, line {site})",
                           f"no allocation of `{top}` names `\"{key}\"`"]
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help=f"Send and read only keys the runner allocates, or allocate `\"{key}\"` in the runner's "
                     f"proxy buffers; read an optional key with `pp_proxy_tensors.tensors.get(\"{key}\")`",
                witness={"ranks": LATER_RANKS_WORDS, "config": {}})])
        return out


RULE = UnallocatedProxyKey(
    code="PPA410",
    name="unallocated-proxy-key",
    summary="a model reads a proxy-tensor key the runner never allocates for a later stage",
    version=1,
)

"""PPA406 stage-carried-value: a value threaded from layer to layer through the loop over this
rank's layers is restarted (``topk_indices = None``) on every rank, and the pipeline-parallel
payload (``IntermediateTensors`` / ``PPProxyTensors``) does not carry it: the first layer of every
stage after the first gets the restart value instead of the previous layer's (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes

def _ast():
    import ast

    return ast


def _is_none(node) -> bool:
    ast = _ast()
    return isinstance(node, ast.Constant) and node.value is None


def _collect(tree, lines) -> list:
    """``[[class, method, name, line, col, end_line, end_col, loop line, payload line, layer class,
    slot, given]]``: ``given`` as :func:`pp_attr_lint.semantic.boundary.taken_as_given` for a layer class of this module, ``None``
    when the class is elsewhere (or not known), read then by the check."""
    ast = _ast()
    from pp_attr_lint.semantic import boundary as B

    out = []

    def text(node) -> str:
        return lines.span(node)

    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for cls in module_classes(tree):
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body_text = text(fn)
            if not any(p in body_text for p in B.PAYLOADS) or "start_layer" not in body_text:
                continue
            payloads = B.payload_calls(fn)
            strings = {n.value for n in B.fast_walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            if not payloads:
                continue
            # only the method's own top-level statements: a restart there runs on every rank
            restarts: dict[str, ast.Assign] = {}
            loops = {id(st) for st in B.layer_loops(fn, text)}
            for st in B.flat(fn.body):
                if id(st) in loops:
                    after = B.read_before_payload(fn.body, st, payloads)
                    for name, slot in B.carried(st):
                        first = restarts.get(name)
                        if first is None or name in strings or name in after:
                            continue  # never restarted here, named by the payload or a read, or folded in
                        layer = B.layer_class(cls)
                        given = B.taken_as_given(classes[layer], slot) if layer in classes else None
                        if given is False:
                            continue  # the layer tests or replaces what it gets
                        out.append([cls.name, fn.name, name, first.lineno,
                                    lines.col(first.lineno, first.col_offset), first.end_lineno,
                                    lines.col(first.end_lineno, first.end_col_offset), st.lineno,
                                    payloads[0].lineno, layer, slot, given])
                        restarts.pop(name)
                    continue
                for name in B.stores(st):
                    restarts.pop(name, None)  # set again, maybe from what the rank received
                if isinstance(st, ast.Assign) and _is_none(st.value) and len(st.targets) == 1 \
                        and isinstance(st.targets[0], ast.Name):
                    restarts[st.targets[0].id] = st
    return out


class StageCarriedValue(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"start_layer" in data and b"None" in data and (b"IntermediateTensors(" in data
                                                                or b"PPProxyTensors(" in data)

    def collect(self, tree, lines):
        text = lines.source
        if "start_layer" not in text or not any(p + "(" in text for p in ("IntermediateTensors", "PPProxyTensors")):
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic import guards
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        out = []
        for cls, method, name, line, col, end_line, end_col, loop, payload, layer, slot, given in facts:
            if given is None:
                given = self._given_elsewhere(ctx, rf, layer, slot)
                if given is False:
                    continue
                if given is None:
                    from pp_attr_lint.model import NotJudged

                    out.append(NotJudged(code=self.code, reason="receiver-unresolved", path=ctx.file.path, row=line,
                                         column=col + 1, detail=f"whether the layers of `{cls}` use `{name}` as "
                                         f"they get it (their class{f' `{layer}`' if layer else ''} is not read)"))
                    continue
            message = (f"`{name}` is carried from layer to layer by the loop over this rank's layers (line {loop}) "
                       f"and restarted as `None` here on every rank, but the pipeline-parallel payload (line "
                       f"{payload}) does not carry it: the first layer of every stage after the first gets `None` "
                       f"where a single-rank run hands it the previous layer's `{name}`.")
            explanation = [f"in `{cls}.{method}`, a layer call of the loop at line {loop} takes `{name}` and "
                           f"returns the next `{name}`",
                           f"no key `\"{name}\"` is sent or read in `{method}`: the value stops at the stage "
                           f"boundary",
                           f"{guards.rank_words({'@first': False, '@last': True})}, and every middle rank, starts "
                           f"its first layer from `None`"]
            out += rf.unless_refused(self.code, cls, [self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help=f"Send `{name}` in the payload when the next stage needs it, and on ranks that are not first "
                     f"start the loop from the received value (`pp_proxy_tensors.tensors.get(\"{name}\")`)",
                witness={"ranks": LATER_RANKS_WORDS, "config": {}})])
        return out

    @staticmethod
    def _given_elsewhere(ctx, rf, layer, slot):
        """:func:`pp_attr_lint.semantic.boundary.taken_as_given` for a layer class defined in another module of the tree; ``None``
        when it cannot be found there."""
        if layer is None:
            return None
        try:
            sym = ctx.resolver.resolve_dotted(ctx.module, layer)
        except Exception:  # noqa: BLE001  (not resolved: not judged)
            return None
        if sym is None or sym[0] != "class":
            return None
        for _path, module, tree, _lines in rf.tree_files(f"class {sym[2]}".encode()) or ():
            if module == sym[1]:
                ast = _ast()
                from pp_attr_lint.semantic.boundary import taken_as_given

                node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == sym[2]), None)
                return None if node is None else taken_as_given(node, slot)
        return None


RULE = StageCarriedValue(
    code="PPA406",
    name="stage-carried-value",
    summary="a value carried through the layer loop does not cross the pipeline stage boundary",
    version=1,
)

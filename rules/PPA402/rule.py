"""PPA402 unowned-parameter-load: ``load_weights`` looks a checkpoint name up in this rank's
parameters without skipping the names of layers another pipeline-parallel rank owns (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.rule_api import Rule

_PARAMS_DICT = re.compile(rb"dict\(\s*self\.(?:\w+\.)?named_parameters\(")


class UnownedParameterLoad(Rule):
    def prefilter(self, data: bytes) -> bool:
        """The file builds a parameter dict of ``self`` or a submodule (``dict(self.named_parameters(...))``,
        ``dict(self.model.named_parameters())``): its class may build a ``make_layers`` list or
        hold a model (of any module) that does."""
        return _PARAMS_DICT.search(data) is not None

    def collect(self, tree, lines):
        # the collector runs on every parsed file: a file this rule's prefilter turns down holds
        # nothing it reports (its facts are its own file's only), so skip the walk there
        if "named_parameters(" not in lines.source:
            return None
        from pp_attr_lint.semantic.loader import parameter_lookups

        return parameter_lookups(tree, lines)

    def check(self, ctx):
        facts = ctx.facts(self.code)
        if not facts or not facts["lookups"]:
            return []
        from pp_attr_lint.resolve import Unresolved
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        builds = {cls: any(rf.is_layer_builder(ctx.module, c) for c in callees)
                  for cls, callees in facts["layered"].items()}
        local = dict(builds)  # the classes that build or hold a list of this module
        for cls in {rec[0] for rec in facts["lookups"] if rec[-1] is None} - {c for c, b in builds.items() if b}:
            # no list of this module: a model it holds, of another module, may build one
            builds[cls] = rf.holds_layer_list((ctx.module, cls))
        for rec in facts["lookups"]:  # a submodule's dict: that submodule must build or hold the list
            if rec[-1] is not None and (rec[0], rec[-1]) not in builds:
                builds[rec[0], rec[-1]] = rf.attribute_holds_layer_list((ctx.module, rec[0]), rec[-1])

        def held(rec):  # True, False, or the Unresolved that keeps a submodule's class from being told
            return builds.get(rec[0] if rec[-1] is None else (rec[0], rec[-1]))

        def layered(rec) -> bool:
            return held(rec) is True

        if not any(layered(rec) or isinstance(held(rec), Unresolved) for rec in facts["lookups"]):
            return []  # no lookup of a class with a make_layers list
        try:
            if not rf.module_runs_under_pp(ctx.module):
                return []  # a registered model that does not support pipeline parallelism
        except Unresolved:
            raise  # whether the engine refuses the model is not known: the file is not judged
        except Exception:  # noqa: BLE001  (cannot tell: judge it)
            pass
        from pp_attr_lint.model import NotJudged

        out = []
        for rec in facts["lookups"]:
            (cls, line, col, end_line, end_col, dname, key, func, quant, qcalls, opaque, via, kind, masked,
             conditions, picked, delegates, of) = rec
            if isinstance(held(rec), Unresolved):  # whose parameters the dict holds is not told
                e = held(rec)
                out += rf.unless_refused(self.code, cls, [NotJudged(
                    code=self.code, reason=e.reason, path=ctx.file.path, row=line, column=col + 1, dep_path=e.path,
                    detail=f"`{dname}` holds the parameters of `self.{of}`, whose class cannot be told: whether it "
                           f"builds a `make_layers` list is not read ({e.detail})")])
                continue
            if not layered(rec):
                continue  # the call that would build the list is not a make_layers builder
            # the helpers handed the dict that would cover the lookup if each tested what it returns
            verdicts = {(c[0], c[1], tuple(c[2])): _verdict(rf, cls, c) for s in via for c in s}
            sets = [[(c, verdicts[c[0], c[1], tuple(c[2])]) for c in s] for s in via]
            if any(all(v[0] == "tests" for _c, v in s) for s in sets):
                continue
            unread = next((s for s in sets if all(v[0] in ("tests", "unread") for _c, v in s)), None)
            if delegates and not local.get(cls):
                # a wrapper of a model of another module that hands that model's names to its loader
                out.append(NotJudged(code=self.code, reason="branch-unread", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"`load_weights` of `{cls}` hands part of the checkpoint "
                                     f"to `{delegates[0]}(...)` (line {delegates[1]}): whether the names it looks up "
                                     f"itself include a weight of a layer another rank owns is not read"))
                continue
            if picked:  # only names that hold a literal reach it: whether a layer's weight can is not read
                lits = " or ".join(f"`{lit!r}`" for lit in picked)
                out.append(NotJudged(code=self.code, reason="branch-unread", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"the lookup runs only for checkpoint names that hold "
                                     f"{lits}: whether a weight of a layer another rank owns can is not read"))
                continue
            if masked is not None:  # an earlier `self.get_submodule` of the same name fails first
                out.append(NotJudged(code=self.code, reason="masked-by", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"`self.get_submodule(...)` at line {masked} fails "
                                     f"first for the same checkpoint names (AttributeError on a rank whose slot of "
                                     f"that layer is a placeholder), on every path to this line"))
                continue
            if opaque:  # the function decides on the rank with a name not read here
                out.append(NotJudged(code=self.code, reason="stage-guard", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"`{func}` decides on the rank with `{opaque[0]}` "
                                     f"(line {opaque[1]}) in a way not read: whether it skips `{key}` on the ranks "
                                     f"that lack the layer cannot be told"))
                continue
            missing = [(m, at) for m, at in qcalls if rf.defines_method(m) is False]
            if missing:  # the key's own computation raises first, on every rank: the lookup never runs
                m, at = missing[0]
                out.append(NotJudged(code=self.code, reason="masked-by", path=ctx.file.path, row=line,
                                     column=col + 1, detail=f"`self.quant_config.{m}(...)` at line {at} raises "
                                     f"AttributeError first, on every rank: no class of the analysed tree (the "
                                     f"engine's quantization configs included) defines `{m}`"))
                continue
            if unread is not None:  # covered if a helper whose body is not read tests what it returns
                c, v = next((c, v) for c, v in unread if v[0] == "unread")
                detail = (f"the range skip at line {c[3]} skips the other ranks' layers only when "
                          f"`hasattr({c[1]}, \"{c[2][0]}\")`, and {v[1]}" if c[0] == "hasattr" else
                          f"`{key}` comes from `{c[1]}(...)` (line {c[3]}), handed `{dname}`: the lookup is covered "
                          f"only if it tests every name it returns against it, and {v[1]}")
                out.append(NotJudged(code=self.code, reason=v[2], path=ctx.file.path, row=line, column=col + 1,
                                     detail=detail))
                continue
            untested = [f"the range skip at line {c[3]} never skips: `hasattr({c[1]}, \"{c[2][0]}\")` is False, "
                        f"{v[1]}" if c[0] == "hasattr" else
                        f"`{c[1]}(...)` (line {c[3]}) is handed `{dname}` but does not test every name it returns "
                        f"against it: {v[1]}" for s in sets for c, v in s if v[0] == "untested"]
            dead_skip = any(c[0] == "hasattr" and v[0] == "untested" for s in sets for c, v in s)
            where = "`load_weights`" if func == "load_weights" else f"`{func}`, reached from `load_weights`"
            if kind == "submodule":
                message = (f"`{dname}` in {where} of `{cls}` resolves a checkpoint name to a submodule without "
                           f"skipping the layers another pipeline-parallel rank owns: `make_layers` builds only "
                           f"this rank's slice, the other slots are placeholders with no submodules, so it raises "
                           f"AttributeError on every rank that does not own the layer.")
                tested = f"`is_pp_missing_parameter({key}, self)` or membership test of `{key}`"
            else:
                message = (f"`{dname}[{key}]` in {where} of `{cls}` looks a checkpoint name up in this rank's "
                           f"parameters without skipping the layers another pipeline-parallel rank owns: "
                           f"`make_layers` builds only this rank's slice, so the other layers' weights are not "
                           f"in `named_parameters()`, and the lookup raises KeyError on every rank that does not "
                           f"own the layer.")
                tested = f"`is_pp_missing_parameter({key}, self)` or `{key} in {dname}` test"
            config = {"checkpoint holds the tensors the quantization config maps (per-layer KV-cache scales)": True} \
                if quant else {}
            config.update((t, v) for t, v in conditions)
            explanation = [f"`{cls}` builds (or holds) a `make_layers` list, and its `load_weights` reads every "
                           f"weight of the checkpoint",
                           *([f"`{func.split('.<locals>.')[0]}` runs from `load_weights` only when "
                              + " and ".join(f"`{t}`" if v else f"not `{t}`" for t, v in conditions)]
                             if conditions else []),
                           f"no {tested} covers this lookup on every path from `load_weights`",
                           *dict.fromkeys(untested),
                           "fails on any rank of a pipeline of size >= 2 that does not own the weight's layer "
                           "(rank 0 for the last layers, rank > 0 for the first)"]
            out += rf.unless_refused(self.code, cls, [self.finding(ctx, line, col, end_line, end_col, message, explanation,
                                    help=(f"Make the range skip's `hasattr` test the model that holds "
                                          f"`start_layer`, or skip with `if is_pp_missing_parameter({key}, self): "
                                          f"continue`" if dead_skip else
                                          f"Skip the names of layers another rank owns before the lookup: "
                                          f"`if is_pp_missing_parameter({key}, self): continue` (`return` in a "
                                          f"helper)"),
                                    witness={"ranks": "every pipeline-parallel rank that does not own the weight's "
                                                      "layer",
                                             "config": config})])
        return out


def _verdict(rf, cls: str, c) -> tuple:
    """``(verdict, clause, reason)`` of one condition a covering skip needs (an entry of a
    lookup's ``via``): a helper handed the dict (:meth:`RankFacts.helper_tests_keys`), or a
    ``hasattr(receiver, attribute)`` of a range skip (``["hasattr", receiver, [attribute, first
    line of the function], line]``), decided on the receiver's class (``stage-guard`` when it
    cannot be told)."""
    if c[0] != "hasattr":
        return rf.helper_tests_keys(cls, c)
    attr, fline = c[2]
    got, what = rf.has_attribute(tuple(c[1].split(".")), attr, cls, fline)
    if got is None:
        return "unread", what, "stage-guard"
    return ("tests" if got else "untested"), what, None


RULE = UnownedParameterLoad(
    code="PPA402",
    name="unowned-parameter-load",
    summary="load_weights indexes a parameter that another pipeline-parallel rank owns",
    version=10,
)

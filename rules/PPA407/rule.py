"""PPA407 runner-unpacks-intermediate: a runner hands what its model returned to a helper that
accepts only final output (it raises for every type it does not test for, and does not test for
``IntermediateTensors``) on a path that ranks other than the last take: those ranks' models return
``IntermediateTensors`` (see README.md)."""

from __future__ import annotations

from pp_attr_lint.rule_api import Rule, module_classes
from pp_attr_lint.rule_api import fast_walk as _fast_walk

_PAYLOADS = ("IntermediateTensors", "PPProxyTensors")


def _ast():
    import ast

    return ast

def _guards():
    from pp_attr_lint.semantic import guards

    return guards


def _rejecter(fn) -> tuple | None:
    """``(parameter, tested types, raise line)`` when ``fn`` (a method) tests its first parameter
    only with ``isinstance`` at its top level, returns from each such test, and ends with an
    unconditional ``raise``: what it does not test for is rejected."""
    ast = _ast()
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
    if not params or not fn.body or not isinstance(fn.body[-1], ast.Raise):
        return None
    p, types = params[0], []
    for st in fn.body[:-1]:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue
        if not (isinstance(st, ast.If) and not st.orelse and isinstance(st.body[-1], ast.Return)):
            return None
        t = st.test
        if not (isinstance(t, ast.Call) and getattr(t.func, "id", None) == "isinstance" and len(t.args) == 2
                and isinstance(t.args[0], ast.Name) and t.args[0].id == p):
            return None
        types += [ast.unparse(e) for e in (t.args[1].elts if isinstance(t.args[1], ast.Tuple) else [t.args[1]])]
    if not types or any(x.rsplit(".", 1)[-1] in _PAYLOADS + ("object",) for x in types):
        return None
    return p, types, fn.body[-1].lineno


def _model_call(value) -> str | None:
    """The text of ``self.model(...)`` / ``self.model.forward(...)`` (any ``self`` attribute
    naming a model), else ``None``."""
    ast = _ast()
    if not isinstance(value, ast.Call):
        return None
    f = value.func
    if isinstance(f, ast.Attribute) and f.attr == "forward":
        f = f.value
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
            and "model" in f.attr.lower():
        return f"self.{f.attr}"
    return None


def _collect(tree, lines) -> list:
    """``[[class, method, helper, model, line, col, end_line, end_col, raise line, types, env]]``:
    the guard of each call is the flow walker's (:class:`pp_attr_lint.semantic.flow.FunctionGuards`)."""
    ast, guards = _ast(), _guards()
    from pp_attr_lint.semantic.flow import FunctionGuards

    compound = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
                 ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, getattr(ast, "TryStar", ast.Try),
                 getattr(ast, "Match", ast.If))
    out = []
    for cls in module_classes(tree):
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        helpers = {name: got for name, m in methods.items() if (got := _rejecter(m)) is not None}
        if not helpers:
            continue
        for m in methods.values():
            text = lines.span(m)
            if "is_last_rank" not in text or not any(f"self.{h}(" in text for h in helpers):
                continue
            outputs: dict[str, str] = {}  # local name -> the model it holds the output of
            flow = FunctionGuards(m, lines)
            for st, _ in flow.reached_statements():
                if isinstance(st, compound):
                    continue  # their blocks come as statements of their own
                for n in _fast_walk(st):
                    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                            and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                            and n.func.attr in helpers and n.args and isinstance(n.args[0], ast.Name)
                            and n.args[0].id in outputs):
                        continue
                    guard = flow.of(n)
                    env = None if guard is None else guards.satisfying(guards.f_and(guard, guards.f_not(guards.LAST)))
                    if env is None:
                        continue  # only the last rank gets here, or nothing does
                    p, types, raise_line = helpers[n.func.attr]
                    out.append([cls.name, m.name, n.func.attr, outputs[n.args[0].id], n.lineno,
                                lines.col(n.lineno, n.col_offset), n.end_lineno,
                                lines.col(n.end_lineno, n.end_col_offset), raise_line, types,
                                {k: v for k, v in env.items()}])
                if isinstance(st, ast.Assign):
                    model = _model_call(st.value)
                    for t in st.targets:
                        if isinstance(t, ast.Name):
                            if model is None:
                                outputs.pop(t.id, None)
                            else:
                                outputs[t.id] = model
    return out


class RunnerUnpacksIntermediate(Rule):
    def prefilter(self, data: bytes) -> bool:
        return b"is_last_rank" in data and b"isinstance(" in data and b"raise" in data \
            and (b"IntermediateTensors" in data or b"PPProxyTensors" in data)

    def collect(self, tree, lines):
        text = lines.source
        if "is_last_rank" not in text or not any(p in text for p in _PAYLOADS):
            return None
        return _collect(tree, lines) or None

    def check(self, ctx):
        guards = _guards()
        out = []
        for cls, method, helper, model, line, col, end_line, end_col, at, types, env in ctx.facts(self.code) or ():
            accepted = " or ".join(f"`{t}`" for t in types)
            where = guards.rank_words(env)
            message = (f"`{cls}.{method}` hands what `{model}` returned to `self.{helper}()`, which accepts only "
                       f"{accepted} and raises for anything else (line {at}), on a path that {where} takes: "
                       f"there the model returns `IntermediateTensors`, and the runner raises before it hands "
                       f"them on.")
            explanation = [f"`{helper}` tests its argument for {accepted} only and raises at line {at}",
                           f"the call's guard does not imply `is_last_rank`: {where} reaches it",
                           "a pipeline-parallel model returns `IntermediateTensors` on every rank but the last"]
            out.append(self.finding(
                ctx, line, col, end_line, end_col, message, explanation,
                help="Hand a non-last rank's `IntermediateTensors` on before unpacking: put the `if not "
                     "get_pp_group().is_last_rank: return ...` branch above this call",
                witness=guards.witness(env, where)))
        return out


RULE = RunnerUnpacksIntermediate(
    code="PPA407",
    name="runner-unpacks-intermediate",
    summary="a runner treats what a non-last pipeline-parallel rank returns as final output",
    version=1,
)

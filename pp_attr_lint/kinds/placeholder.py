"""The placeholder rules' shared part (PPA101-PPA103), kept light: the rule folders import it when
rules are listed or a warm run replays its cached result, and only a real analysis imports
:mod:`pp_attr_lint.semantic`."""

from __future__ import annotations

from .. import facts as F
from ..model import Finding
from ..index.spec import RANK_FACTS_KEY as FACTS_KEY  # the key of the collector's facts in a summary
# a file that registers a model (a plugin's `ModelRegistry.register_model(...)`) is read too: its
# registrations tell which models refuse PP (each placeholder rule adds it to its needles)
REGISTER_NEEDLE = f".{F.REGISTER_METHOD}("


def collect_facts(tree, lines):
    """The shared collector (:func:`pp_attr_lint.semantic.values.collect`), imported when a file is
    parsed; also run for a rule that names it in ``uses_facts`` (PPA405)."""
    from ..semantic.values import collect

    return collect(tree, lines)


class PlaceholderRule:
    """Mixin of the placeholder rules: one shared collector (:func:`pp_attr_lint.semantic.values.collect`;
    pass ``facts_key=FACTS_KEY`` to the rule's constructor) and the walk over the recorded uses of
    the kinds a rule judges (:meth:`judge`, called with a :class:`~pp_attr_lint.semantic.model.RankFacts`)."""

    kinds: tuple[str, ...] = ()  # the use kinds of collect() that the rule judges

    def collect(self, tree, lines):
        return collect_facts(tree, lines)

    def check(self, ctx):
        from ..semantic.model import RankFacts

        mf = ctx.facts(FACTS_KEY)
        if not mf:
            return []
        rf = RankFacts.of(ctx)
        if not rf.module_runs_under_pp(ctx.module):
            return []  # a registered model that does not support pipeline parallelism
        safe = rf.placeholder_safe_attrs()
        dynamic = None
        if safe is None:  # the tree's PPMissingLayer may answer any attribute (`__getattr__`)
            safe, dynamic = rf.placeholder_dynamic()
        out = []
        for use in mf["uses"]:
            if use[0] in self.kinds and not use[7]:
                flag = F.FEATURE_ONLY_METHODS.get(ctx.summary_function_name(use[1], use[2]) or "")
                refused = rf.feature_refuses_pp(flag) if flag else False
                if refused or rf.refused_by_platform(use[6], flag):
                    continue  # only a feature that PP (or the plugin's platform) refuses runs the line
                f = self.judge(ctx, rf, safe, *use[:9])
                fname = ctx.summary_function_name(use[1], use[2]) if f is not None and use[1] else None
                if fname and fname not in F.RANK_OF_METHOD and not fname.startswith("__"):
                    rank = rf.caller_rank(use[1], fname)  # every caller runs on one rank
                    if rank is not None:
                        from ..semantic.guards import f_and

                        f = self.judge(ctx, rf, safe, *use[:6], f_and(use[6], rank), *use[7:9])
                if isinstance(f, Finding) and use[9] is not None:
                    f = deferred_verdict(self.code, ctx, rf, use[9], use[1], fname or ctx.summary_function_name(
                        use[1], use[2]), f)
                if f is not None and refused is None:
                    from ..model import NotJudged

                    f = NotJudged(code=self.code, reason="module-not-found", path=ctx.file.path,
                                  row=use[5][0], column=use[5][1] + 1,
                                  detail=f"whether `{flag}` refuses pipeline parallelism: no parallel configuration "
                                  f"module of `{ctx.module.split('.', 1)[0]}` was found")
                if isinstance(f, Finding) and dynamic is not None:
                    from ..model import NotJudged

                    # it fails unless the placeholder's `__getattr__` answers the name: not judged
                    f = NotJudged(code=self.code, reason="dynamic-class", path=ctx.file.path, row=f.row,
                                  column=f.column, detail=f"`{'.'.join(use[3])}.{use[4]}`: {dynamic}")
                if isinstance(f, Finding):
                    out += rf.unless_refused(self.code, use[1], [f])  # none for a model run without PP
                elif f is not None:
                    out.append(f)
        return out

    def judge(self, ctx, rf, safe, kind, cls, fline, chain, attr, pos, guard, guarded, extra):  # pragma: no cover
        raise NotImplementedError

    def not_judged(self, ctx, why, chain, pos):
        """The :class:`~pp_attr_lint.model.NotJudged` record of a read at ``pos`` (``(row, col,
        ...)``) through ``chain`` whose receiver leads into code the run does not have (``why``:
        ``(reason, detail, path)``, e.g. a plugin checked without vLLM installed), or ``None`` when
        ``why`` is ``None``."""
        return read_not_judged(self.code, ctx, why, chain, pos)


def deferred_verdict(code: str, ctx, rf, deferred, cls, fname, f):
    """What becomes of finding ``f`` of rule ``code`` on a read in a body that runs only when a
    stored lambda or nested function is called (``deferred``: ``(row, "lambda" or its name, lazy
    attr)``, see :func:`pp_attr_lint.semantic.values.collect`) that function ``fname`` of class
    ``cls`` builds (``rf``: the :class:`~pp_attr_lint.semantic.model.RankFacts`).  When the lambda
    is stored in a ``LazyValue`` that methods of the class read (``self.attr.value`` runs it:
    SGLang's sglang/srt/utils/common.py), ``f`` itself, its path naming those methods; otherwise
    the :class:`~pp_attr_lint.model.NotJudged` record (reason ``branch-unread``) at its place: the
    enclosing function does not run that line, and who calls the body is not read."""
    from ..model import NotJudged

    row, what, attr = deferred
    where = f"`{cls}.{fname}`" if cls and fname else f"`{fname or '?'}`"
    readers = rf.lazy_readers((ctx.module, cls), attr) if attr and cls else []
    if readers:
        names = ", ".join(f"`{r}`" for r in readers)
        f.explanation = [*f.explanation, f"path: {names} reads `self.{attr}.{F.LAZY_VALUE_READ}`, whose first read "
                         f"runs the lambda that {where} stores at line {row} (`{F.LAZY_VALUE_CLASS}`) -> line {f.row}"]
        outside = _outside_readers(ctx, rf, cls, readers)
        if outside is not None:
            f.explanation.append(outside)
        return f
    body = f"the lambda at line {row}" if what == "lambda" else f"the nested function `{what}` (line {row})"
    return NotJudged(code=code, reason="branch-unread", path=ctx.file.path, row=f.row, column=f.column,
                     detail=f"the line is in {body}, which {where} only builds (stores or hands out); "
                            f"it runs when something calls it, and who does is not read")


def _outside_readers(ctx, rf, cls: str, readers: list) -> str | None:
    """When no engine call of the model reaches any of ``readers`` (``Class.method``) of class
    ``cls``: that condition in words, with the first places outside the file that name one of
    those methods (SGLang's expert-location updater reads ``routed_experts_weights_of_layer``
    only under EPLB); ``None`` when one is reached."""
    from ..semantic.entry import engine_path

    methods = sorted({r.rsplit(".", 1)[-1] for r in readers})
    if any(engine_path(rf, ctx.module, (ctx.module, cls), m) is not None for m in methods):
        return None
    places = []
    for path, module in rf.reader.tree_file_paths(*(f".{m}".encode() for m in methods)) or ():
        if path == ctx.file.path:
            continue
        text = (rf.reader.read_bytes(path) or b"").decode("utf-8", "replace").splitlines()
        row = next((i for i, t in enumerate(text, 1) if any(f".{m}" in t for m in methods)), None)
        if row is not None:
            places.append(f"`{module}` line {row}")
        if len(places) == 2:
            break
    where = f"; it is named at {', '.join(places)}" if places else "; no other file of the analysed tree names it"
    return (f"when: no call the engine makes on the model reaches {', '.join(f'`{r}`' for r in readers)}: the line runs "
            f"only when other code reads it{where}")


def read_not_judged(code: str, ctx, why, chain, pos):
    """:meth:`PlaceholderKind.not_judged` for rule ``code``, for rules that are not a placeholder
    kind (PPA405)."""
    if why is None:
        return None
    from ..model import NotJudged

    reason, detail, dep = why
    return NotJudged(code=code, reason=reason, path=ctx.file.path, row=pos[0], column=pos[1] + 1,
                     detail=f"`{'.'.join(chain)}`: {detail}", dep_path=dep)

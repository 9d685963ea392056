"""PPA103 placeholder-in-loop: a loop over every slot of a ``make_layers`` list that reads an
attribute of the element without a guard (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.kinds import placeholder
from pp_attr_lint.rule_api import Rule


_WHOLE_LIST = re.compile(rb"\.layers\s*[:)]")


# group 1: the indent, group 2: the loop variable (the last name of `for i, v in`)
_FOR_LINE = re.compile(rb"([ \t]*)(?:async[ \t]+)?for[ \t]+(?:\w+[ \t]*,[ \t]*)?(\w+)[ \t]+in[ \t]")


def _loop_may_read(data: bytes, i: int) -> bool:
    """Whether the loop whose iterable ends at byte ``i`` may read an attribute of its element
    (see :meth:`PlaceholderInLoop.prefilter`): bytes only, the body being the lines below the
    ``for`` line indented deeper than it."""
    start = data.rfind(b"\n", 0, i) + 1
    m = _FOR_LINE.match(data, start)
    eol = data.find(b"\n", i)
    if m is None or not data[i:len(data) if eol < 0 else eol].split(b"#")[0].rstrip().endswith(b":"):
        return True  # not a `for` statement on one line (a comprehension): let the parser judge it
    var, indent = m.group(2), len(m.group(1))
    body: list[bytes] = []
    pos = eol + 1
    while 0 < pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = data[pos:end]
        stripped = line.lstrip()
        if stripped and not stripped.startswith(b"#"):
            if len(line) - len(stripped) <= indent:
                break
            body.append(stripped)
        pos = end + 1
    if not body or body[0].startswith(b"if isinstance(" + var + b", PPMissingLayer)"):
        return False
    # `v.attr`, a call `v(...)`, or a slot `x[v].attr` / `x[v](...)` of `range(len(x))`
    return re.search(rb"\b" + var + rb"(?:\s*\.\s*\w|\s*\(|\s*\]\s*[.(])", b"\n".join(body)) is not None


# a local that aliases a list, `layers = self.model.layers`, looped over later
_ALIAS = re.compile(rb"^[ \t]*(\w+)[ \t]*=[ \t]*[\w.]+\.layers[ \t]*(?:#[^\n]*)?$", re.M)


def _alias_looped(data: bytes) -> bool:
    """Whether ``data`` aliases a ``.layers`` list in a local and loops over it or its length.
    Only the lines that hold ``.layers`` can alias one, so only those are matched."""
    seen = -1
    i = data.find(b".layers")
    while i >= 0:
        start = data.rfind(b"\n", 0, i) + 1
        end = data.find(b"\n", i)
        end = len(data) if end < 0 else end
        i = data.find(b".layers", end)
        if start == seen:
            continue
        seen = start
        m = _ALIAS.match(data, start, end)
        if m is None:
            continue
        name = re.escape(m.group(1))
        if re.search(rb"\bin\s+(?:enumerate\(\s*)?" + name + rb"\b|\blen\(\s*" + name + rb"\s*\)", data):
            return True
    return False


# a config's layer count (semantic/guards.py LAYER_COUNT_NAMES): `range(config.num_hidden_layers)`
_COUNT = re.compile(rb"\b(?:num_hidden_layers|num_layers|n_layers?|num_layer)\b")


def _counted(data: bytes) -> bool:
    """Whether ``data`` may index a ``.layers`` list by the ids of a loop over a config's layer
    count (``for i in range(n)``, ``n`` one of those counts or a local assigned one)."""
    return b".layers[" in data and b"range(" in data and _COUNT.search(data) is not None


class PlaceholderInLoop(placeholder.PlaceholderRule, Rule):
    kinds = ("loop",)

    def prefilter(self, data: bytes) -> bool:
        """The file has ``in ... .layers:`` / ``in enumerate(... .layers)`` / ``in
        range(len(... .layers))`` where the loop may read an attribute of the element or call it:
        a ``for`` statement counts unless its body never reads ``var.``, calls ``var(`` or reads a
        slot ``[var].`` / ``[var](``, or opens with ``if isinstance(var, PPMissingLayer)``; any other
        shape (a generator expression) counts, and so does a local aliasing a ``.layers`` list that
        is looped over (``layers = self.model.layers``), and a ``.layers[`` subscript in a file
        that loops over a config's layer count (``range(config.num_hidden_layers)``).  The list
        may come from ``make_layers`` in another file (a wrapper looping over
        ``self.model.layers``), so ``make_layers`` need not occur."""
        i = data.find(b".layers")
        while i >= 0:
            if _WHOLE_LIST.match(data, i) and data.rfind(b" in ", max(0, i - 120), i) >= 0 \
                    and _loop_may_read(data, i):
                return True
            i = data.find(b".layers", i + 7)
        return b".layers" in data and (_alias_looped(data) or _counted(data))

    def check(self, ctx):
        # one finding per loop (its first unguarded read): the fix rewrites the loop once
        seen: set = set()
        out = []
        for f in super().check(ctx):
            fix_data = getattr(f, "fix_data", None)  # a NotJudged record has none
            key = tuple(fix_data["iter"]) if fix_data else ("not-judged", f.row, f.column)
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    def judge(self, ctx, rf, safe, kind, cls, fline, chain, attr, pos, guard, guarded, extra):
        from pp_attr_lint.semantic import guards

        if attr in safe:
            return None
        var, iter_pos, enumerated, simple = extra
        owners, how = rf.list_owners(chain, cls, fline)
        if not owners:
            # a receiver whose class leads into code the run does not have: listed as not judged
            return self.not_judged(ctx, rf.owner_failure, chain, pos)
        env = rf.satisfying(guard, guard, cls, fline)
        if env is None:
            return None
        recv, lst = ".".join(chain[:-1]), chain[-1]
        if attr == "()":  # `h, r = layer(...)`: a placeholder returns its first argument
            message = (f"The loop calls every slot of `{recv}.{lst}`, which `make_layers` fills with `PPMissingLayer` "
                       f"outside `[start_layer, end_layer)`; a placeholder returns its first argument, so unpacking "
                       f"what `{var}(...)` returns fails on the first placeholder, on every pipeline-parallel rank "
                       f"when pipeline_parallel_size >= 2.")
        else:
            message = (f"The loop walks every slot of `{recv}.{lst}`, which `make_layers` fills with `PPMissingLayer` "
                       f"outside `[start_layer, end_layer)`; `{var}.{attr}` raises AttributeError on the first "
                       f"placeholder, on every pipeline-parallel rank when pipeline_parallel_size >= 2.")
        explanation = [how, f"no `isinstance({var}, PPMissingLayer)` / `hasattr` guard, slice or "
                            f"`range(start_layer, end_layer)` limits the loop"]
        fix = None
        conditional = rf.conditional_list_note(owners, chain[-1])
        if conditional is not None:
            explanation.append(conditional)
        if simple and how.startswith("`") and conditional is None:
            sliced = f"{recv}.{lst}[{recv}.start_layer:{recv}.end_layer]"
            new = f"enumerate({sliced}, start={recv}.start_layer)" if enumerated else sliced
            fix = self.make_fix("safe", f"Loop over this rank's own layers: `{new}`", [self.replace(iter_pos, new)])
        help = (f"Loop over this rank's own layers only (`{recv}.{lst}[{recv}.start_layer:{recv}.end_layer]`), "
                f"or skip the slots that are `PPMissingLayer` (`isinstance({var}, PPMissingLayer)`)")
        row, col, end_row, end_col = pos
        return self.finding(ctx, row, col, end_row, end_col, message, explanation, fix=fix,
                            fix_data={"iter": list(iter_pos)}, help=help,
                            witness=guards.witness(env, "every pipeline-parallel rank of a pipeline of size >= 2"))


RULE = PlaceholderInLoop(
    code="PPA103",
    name="placeholder-in-loop",
    summary="Loop over every slot of a make_layers list reads an attribute of a PPMissingLayer",
    fix_applicability="safe",
    needles=("make_layers", placeholder.REGISTER_NEEDLE),
    facts_key=placeholder.FACTS_KEY,
    version=3,  # the collector reads loops over a config's layer count
)

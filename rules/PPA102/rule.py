"""PPA102 placeholder-by-index: a fixed slot of a ``make_layers`` list (``layers[0]``,
``layers[-1]``, ``layers[num_hidden_layers - 1]``) followed by an attribute read (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint.kinds import placeholder
from pp_attr_lint.rule_api import Rule



# attributes that name one layer: the fix's slot is another layer on the ranks where the old index
# fails, so its value changes there (a key into per-layer data such as attention metadata)
_IDENTITY = frozenset({"layer_name", "layer_idx", "layer_id", "layer_index", "layer_number", "prefix", "name"})
_CHAIN_TAIL = re.compile(r"(?:\s*\.\s*([A-Za-z_]\w*))")


def _chain_tail(path: str, pos) -> list[str]:
    """The attribute names read after the span ``pos`` (``(row, col, end_row, end_col)``) on its
    last line (``.attn.layer_name`` after ``self.layers[-1].self_attn``); ``[]`` when the file
    cannot be read."""
    from pp_attr_lint.textio import read_source

    try:
        line = read_source(path).text.splitlines()[pos[2] - 1]
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        return []
    out, i = [], pos[3]
    while True:
        m = _CHAIN_TAIL.match(line, i)
        if m is None:
            return out
        out.append(m.group(1))
        i = m.end()


_INDEXED = re.compile(rb"\.layers\[\s*(?:-?\s*\d+|[\w.()]+\s*-\s*1)\s*\]\s*\.")
# `.layers[name].`: an index that may be a parameter with a constant value (`def f(layer_id=0)`)
_BY_NAME = re.compile(rb"\.layers\[\s*([A-Za-z_]\w*)\s*\]\s*\.")


class PlaceholderByIndex(placeholder.PlaceholderRule, Rule):
    kinds = ("index",)

    def prefilter(self, data: bytes) -> bool:
        """``.layers[<constant>].`` or ``.layers[<n> - 1].`` occurs, or ``.layers[<name>].`` where
        ``<name>`` is also given an integer somewhere in the file (``name=0``, ``name: int = 0``)."""
        i = data.find(b".layers[")
        while i >= 0:
            if _INDEXED.match(data, i):
                return True
            m = _BY_NAME.match(data, i)
            if m is not None and re.search(rb"\b" + m.group(1) + rb"\s*(?::[^=\n]*)?=\s*-?\d", data):
                return True
            i = data.find(b".layers[", i + 8)
        return False

    def judge(self, ctx, rf, safe, kind, cls, fline, chain, attr, pos, guard, guarded, extra):
        from pp_attr_lint.semantic import guards

        if attr in safe:
            return None
        index_kind, index_pos, via = extra
        owners, how = rf.list_owners(chain, cls, fline)
        if not owners:
            # a receiver whose class leads into code the run does not have: listed as not judged
            return self.not_judged(ctx, rf.owner_failure, chain, pos)
        # slot 0 is a placeholder on every rank but the first, the last slot on every rank but the
        # last, another constant slot on every rank that does not own it
        fails_when = {"first": guards.f_not(guards.FIRST), "last": guards.f_not(guards.LAST), "const": guards.TRUE}
        env = rf.satisfying(guards.f_and(guard, fails_when[index_kind]), guard, cls, fline)
        if env is None:
            return None
        recv, lst = ".".join(chain[:-1]), chain[-1]
        row, col, end_row, end_col = pos
        slot = {"first": "slot 0", "last": "the last slot"}.get(index_kind, "a fixed slot")
        rank = guards.rank_words(env) if index_kind != "const" else "every pipeline-parallel rank that does not own that layer"
        message = (f"`{recv}.{lst}` comes from `make_layers`, which fills every slot outside "
                   f"`[start_layer, end_layer)` with `PPMissingLayer`; {slot} is a placeholder on {rank}, "
                   f"and `PPMissingLayer` has no attribute `{attr}`: AttributeError there.")
        explanation = [how, guards.runs_when(guard)]
        if via is not None:
            explanation.append(f"`{via[0]}` is `{via[1]}` at every call of the nested function that reads it")
        fix = None
        conditional = rf.conditional_list_note(owners, chain[-1])
        if conditional is not None:
            explanation.append(conditional)
        if index_kind in ("first", "last") and how.startswith("`") and conditional is None and via is None:
            new = f"{recv}.start_layer" if index_kind == "first" else f"{recv}.end_layer - 1"
            which = "first" if index_kind == "first" else "last"
            # safe only when the value read is the same whichever layer gives it: a name of the
            # layer (gemma4's `layers[-1].self_attn.attn.layer_name`) becomes another layer's on the
            # ranks where the old index fails, so the edit would change behaviour there: help only
            identity = next((n for n in [attr, *_chain_tail(ctx.file.path, pos)] if n in _IDENTITY), None)
            if identity is not None:
                explanation.append(f"no fix: `{identity}` names one layer; on every rank but the {which}, "
                                   f"`{lst}[{new}]` is this rank's own {which} layer, whose `{identity}` is not the "
                                   f"one meant")
            else:
                fix = self.make_fix("safe", f"Index with `{new}` (this rank's own {which} layer)",
                                    [self.replace(index_pos, new)])
        help = (f"Index with this rank's own layers (`{recv}.{lst}[{recv}.start_layer]` to "
                f"`{recv}.{lst}[{recv}.end_layer - 1]`), or skip the slot when it is a `PPMissingLayer`")
        return self.finding(ctx, row, col, end_row, end_col, message, explanation, fix=fix, help=help,
                            witness=guards.witness(env, rank))


RULE = PlaceholderByIndex(
    code="PPA102",
    name="placeholder-by-index",
    summary="Attribute read on a fixed slot of a make_layers list, a PPMissingLayer on some rank",
    fix_applicability="safe",
    needles=(".layers[", placeholder.REGISTER_NEEDLE),
    facts_key=placeholder.FACTS_KEY,
    version=2,  # the collector records whether a read lies in a deferred body
)

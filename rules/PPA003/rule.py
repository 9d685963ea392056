"""PPA003 layer-range-on-self: ``self.start_layer`` / ``self.end_layer`` read in a class that never
sets them, while no subclass of it does either (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule


# a statement that assigns `self.NAME` (alone or in a tuple of `self.` targets): `self.x = ...`,
# `self.start_layer, self.end_layer, self.layers = make_layers(...)`
_SELF_STORE = re.compile(rb"[ \t]*\(?[ \t]*(self\.\w+[ \t]*,[ \t]*)*\*?self\.(\w+)([ \t]*,[ \t]*\*?self\.\w+)*[ \t]*,?[ \t]*\)?[ \t]*=(?!=)")
_NESTED_CLASS = re.compile(rb"\n[ \t]+class[ \t]")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _occurrences(data: bytes, attr: bytes):
    """The start of every occurrence of ``attr`` as a whole word in ``data`` (bytes.find: much
    faster than a regular expression with a look-behind)."""
    n = len(attr)
    i = data.find(attr)
    while i >= 0:
        end = i + n
        if (i == 0 or data[i - 1] not in _WORD) and (end >= len(data) or data[end] not in _WORD):
            yield i
        i = data.find(attr, end)


def _read_at(data: bytes, i: int, end: int) -> bool:
    """Whether the name at ``data[i:end]`` is an attribute (``x.attr``, ``x . attr``) or a quoted
    name (``getattr(self, "attr")``): a bare name (a parameter, a local) is no read."""
    prev = data[i - 1:i]
    if prev in (b'"', b"'") and data[end:end + 1] == prev:
        return True
    j = i
    while j > 0 and data[j - 1] in b" \t\\\n\r":
        j -= 1
    return data[j - 1:j] == b"."


# where a chunk starts: after a newline, a line that starts in column 0 with code (not a blank, not
# a comment, not a closing bracket)
_CHUNK_START = re.compile(rb"\n(?=[^ \t\r\n\f#)\]}])")


def _chunk_bounds(data: bytes) -> list[int]:
    """Where the chunks of ``data`` start: ``data`` cut before every line that starts in column 0
    with code, so that every top-level class lies in one chunk or is cut into several (by a
    column-0 line of a multi-line string), never merged with other code."""
    return [0] + [m.end() for m in _CHUNK_START.finditer(data)]


def _stored(chunk: bytes, attr: bytes) -> bool:
    """Whether a statement of ``chunk`` assigns ``self.attr`` (alone or among ``self.`` targets)."""
    for i in _occurrences(chunk, attr):
        start = chunk.rfind(b"\n", 0, i) + 1
        end = chunk.find(b"\n", i + len(attr))
        line = chunk[start:len(chunk) if end < 0 else end]
        st = _SELF_STORE.match(line)
        if st is not None and attr in re.findall(rb"self\.(\w+)", line[:st.end()]):
            return True
    return False


class LayerRangeOnSelf(Rule):
    def prefilter(self, data: bytes) -> bool:
        """Some chunk of the file (:func:`_chunk_bounds`: a top-level class, or a part of one)
        reads ``start_layer`` / ``end_layer`` (``x.start_layer``, ``getattr(x, "start_layer")``)
        and has no statement that assigns ``self.`` that name: a class that assigns it itself
        never reads it unset.  A chunk with a nested class counts whenever it reads it (the
        assignment may be the outer class's)."""
        if b"start_layer" not in data and b"end_layer" not in data:
            return False
        from bisect import bisect_right

        bounds = None
        for attr in (b"start_layer", b"end_layer"):
            if attr not in data:
                continue
            seen = set()
            for i in _occurrences(data, attr):
                if not _read_at(data, i, i + len(attr)):
                    continue
                if bounds is None:
                    bounds = _chunk_bounds(data)
                k = bisect_right(bounds, i) - 1
                if k in seen:
                    continue
                seen.add(k)
                chunk = data[bounds[k]:bounds[k + 1] if k + 1 < len(bounds) else len(data)]
                if _NESTED_CLASS.search(chunk) is not None or not _stored(chunk, attr):
                    return True
        return False

    def check(self, ctx):
        from pp_attr_lint.resolve import EXTERNAL, Unresolved
        r = ctx.resolver
        out = []
        from pp_attr_lint.index.summary import scopes_by_line

        scopes = scopes_by_line(ctx.summary)
        for read in ctx.summary["reads"]:
            if read["attr"] not in F.RANGE_ATTRIBUTES or read.get("guards") or not read["class"]:
                continue
            scope = scopes.get((read["class"], read["function"]))
            if scope is None or not read["chain"] or tuple(read["chain"]) != (scope.get("self"),):
                continue
            key = (ctx.module, read["class"])
            rec = ctx.summary["classes"].get(read["class"])
            if rec is None or _abstract(rec):
                continue
            try:
                r.check_resolved(key)
                if r.attribute_status(key, read["attr"]) != "absent":
                    continue
                mro = r.mro(key)
            except Unresolved:
                continue
            if self._subclass_sets(ctx, key, read["attr"]):
                continue
            attr = read["attr"]
            message = (f"`{read['class']}` reads `self.{attr}`, but neither it nor any class on its MRO sets "
                       f"`{attr}` (only the models built with `make_layers` and the pools given a layer range do), "
                       f"and no subclass in the analysed tree sets it: AttributeError on every call.")
            explanation = [f"MRO: {' -> '.join(e[1] if e[0] != EXTERNAL else e[1].rsplit('.', 1)[-1] for e in mro)}",
                           f"`{read['class']}()` runs {', '.join(o[1] + '.__init__' for o, _ in r.executed_inits(key)) or 'no project __init__'}"]
            help = (f"Set `self.{attr}` in `{read['class']}.__init__` (from `make_layers(...)`, or from the layer "
                    f"range of the module that builds the layers), or read `{attr}` on that module instead")
            out.append(self.finding(ctx, read["line"], read["col"], read["end_line"], read["end_col"], message,
                                    explanation, help=help,
                                    witness={"ranks": "every rank the method runs on", "config": {}}))
        return out

    def _subclass_sets(self, ctx, key, attr) -> bool:
        from pp_attr_lint.resolve import Unresolved
        r = ctx.resolver
        for st in ctx.checked:
            if st.module != ctx.module and not ctx.accepts(st, self):
                continue  # a file its prefilter turns down: the same in every run, named or not
            for cname, crec in st.summary["classes"].items():
                sub = (st.module, cname)
                if sub == key or not _may_set(crec, attr):
                    continue
                if not r.may_derive(sub, key):
                    continue  # e.g. a config class on an uninstalled package's base
                try:
                    if key in r.mro(sub) and r.attribute_status(sub, attr) != "absent":
                        return True
                except Unresolved:
                    return True  # cannot tell: a subclass may set it
        rec = r.class_record(key)
        if any(b not in (None, "object") for b in rec["bases"]) or "__init__" in rec["methods"]:
            return False  # a class of its own, built directly: a subclass that sets it does not help
        return self._tree_subclass_sets(ctx, key, attr)

    def _tree_subclass_sets(self, ctx, key, attr) -> bool:
        """Whether a subclass of mixin ``key`` (a class with no base and no ``__init__``, which
        only a host class is built with) anywhere in the analysed tree (the class headers of every
        file, read by :meth:`~pp_attr_lint.semantic.reader.TreeReader.class_graph`, whichever
        files were named) sets ``attr``: a mixin's ``self.start_layer`` is its host's
        (``ModelRunner(ModelRunnerKVCacheMixin)`` sets it in ``initialize``).  ``True`` (cannot
        tell) when the tree cannot be read or a subclass cannot be resolved."""
        from pp_attr_lint.resolve import Unresolved
        from pp_attr_lint.semantic.model import RankFacts

        reader = RankFacts.of(ctx).reader
        name = key[1].rsplit(".", 1)[-1]
        subs = reader.subclass_names(name)
        if subs is None:
            return True
        subs.discard(name)
        r = ctx.resolver
        for sub_name in sorted(subs):
            for item in reader.tree_file_paths(f"class {sub_name}".encode()) or ():
                sub = (item[1], sub_name)
                try:
                    rec = r.class_record(sub)
                    if not _may_set(rec, attr) or not r.may_derive(sub, key):
                        continue
                    if key in r.mro(sub) and r.attribute_status(sub, attr) != "absent":
                        return True
                except Unresolved:
                    return True
        return False


def _may_set(rec: dict, attr: str) -> bool:
    """Whether class record ``rec`` itself may set ``attr`` (or anything): only such a subclass
    can give the reading class the attribute; one that cannot (``class Z(Unknown): pass``) is
    never a reason to stay silent, however its bases resolve."""
    if attr in rec["body_names"] or attr in rec.get("properties", ()) or attr in rec.get("annotations", ()):
        return True
    if any(s in rec["methods"] or s in rec["body_names"] for s in ("__getattr__", "__getattribute__", "__setattr__",
                                                                    "__new__", "__dict__", "__slots__")):
        return True
    return any(attr in m["assigns"] or m.get("dynamic") or m.get("passes_self") for m in rec["methods"].values())


def _abstract(rec: dict) -> bool:
    """A mixin, protocol or abstract base: what it reads, its subclasses set."""
    bases = [(b or "").rsplit(".", 1)[-1] for b in rec["bases"]]
    return any(b in ("Protocol", "ABC", "Generic") for b in bases) or any(
        "abstractmethod" in (d or "") for m in rec["methods"].values() for d in m.get("decorators", ()))


RULE = LayerRangeOnSelf(
    code="PPA003",
    name="layer-range-on-self",
    summary="self.start_layer / self.end_layer read in a class that never sets them",
    attributes=F.RANGE_ATTRIBUTES,  # their reads are what it judges
)

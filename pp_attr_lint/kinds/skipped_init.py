"""What the rules about skipped base ``__init__`` calls share (PPA301, and PPA201 for a hook that
only a skipped ``__init__`` assigns): the byte prefilter that finds an explicit base ``__init__``
call that may skip a base."""

from __future__ import annotations

import re

# `class Name(FirstBase` at any indent (group 1: the indent, 2: the name, 3: the first base, if any)
_CLASS_LINE = re.compile(rb"^([ \t]*)class[ \t]+(\w+)[ \t]*(?:\(\s*([\w.]+))?", re.M)
# the explicit calls the prefilter looks for, read backward from each `.__init__(`:
# `super(P, self)` (group 1: P) right before it, or a dotted name `X` (bytes of _NAME_BYTES, not
# after `)` or `]`) right before it and `self` as the first argument (_SELF_ARG) after it
_SUPER_CALL = re.compile(rb"super\(\s*([\w.]+)\s*,\s*self\s*\)")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_SELF_ARG = re.compile(rb"\s*self\s*[,)]")
_LOOK_BACK = 4096  # bytes before `.__init__(` searched for its `super(`


def enclosing_class(data: bytes, pos: int, indent: int):
    """The match of :data:`_CLASS_LINE` for the nearest ``class`` line above byte ``pos`` that is
    indented less than ``indent``, or ``None``."""
    k = data.rfind(b"class", 0, pos)
    while k >= 0:
        start = data.rfind(b"\n", 0, k) + 1
        m = _CLASS_LINE.match(data, start)
        if m is not None and m.start(2) - len(b"class") - 1 <= k <= m.start(2) and len(m.group(1)) < indent:
            return m
        k = data.rfind(b"class", 0, k)
    return None


def may_skip_base_init(data: bytes) -> bool:
    """An explicit ``X.__init__(self...)`` or ``super(P, self).__init__(`` that may skip a base:
    ``X`` is not the first base of the enclosing class, or ``P`` is not that class itself
    (``class C(nn.Module)`` calling ``nn.Module.__init__(self)``, or ``super(C, self)`` in ``C``,
    runs the same chain as ``super().__init__()`` and skips nothing).  The enclosing class is the
    nearest ``class`` line above with a smaller indent; a call whose class is not found counts as
    a hit."""
    if b".__init__(self" not in data and b", self).__init__(" not in data:
        return False
    i = data.find(b".__init__(")
    while i >= 0:
        # the call that ends here, found backward from each occurrence (a regular expression
        # run over the whole file tries its dotted-name branch at almost every byte)
        pos = name = None
        if data[i - 1:i] == b")":  # super(P, self).__init__(
            k = data.rfind(b"super(", max(0, i - _LOOK_BACK), i)
            m = _SUPER_CALL.fullmatch(data, k, i) if k >= 0 else None
            if m is not None:
                pos, name, against = k, m.group(1), 2
        else:  # X.__init__(self
            j = i
            while j > 0 and data[j - 1] in _NAME_BYTES:
                j -= 1
            if j < i and data[j - 1:j] not in (b")", b"]") and _SELF_ARG.match(data, i + len(b".__init__(")):
                pos, name, against = j, data[j:i], 3
        if pos is not None:
            line = data[data.rfind(b"\n", 0, pos) + 1:pos]
            indent = len(line) - len(line.lstrip())
            owner = enclosing_class(data, pos, indent)
            if owner is None or name != owner.group(against):
                return True  # P is not the class itself / X is not its first base
        i = data.find(b".__init__(", i + 1)
    return False

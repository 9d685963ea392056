"""The byte prefilter: which files can hold something the enabled rules want, decided from the
bytes alone (no decoding, no parsing), for every file of every run."""

from __future__ import annotations


def make_rule_prefilter(wanting: tuple, everything: bool = False):
    """A bytes -> int test with one bit per rule: bit ``k`` is set when ``wanting[k]``, a pair
    ``(prefilter, attrs)`` of one rule, accepts the file: its own ``prefilter`` (bytes -> bool)
    accepts it, or ``attrs`` is given and the file can read one of them on another object
    (:func:`attribute_read_hit`; computed once per set of names for all the rules that share it).
    A rule's bit depends on its own test alone, never on which other rules are enabled.
    ``everything``: every bit set for every file (no prefilter: for tests that check the
    prefilters' soundness).  0 means no rule wants the file."""
    if everything:
        full = (1 << len(wanting)) - 1 or 1
        return lambda data: full
    groups: dict[frozenset, int] = {}
    tests = []
    for pf, attrs in wanting:
        g = None
        if attrs:
            g = groups.setdefault(frozenset(attrs), len(groups))
        tests.append((pf, g))
    needles = [[a.encode() for a in sorted(attrs)] for attrs in groups]

    def hit(data: bytes) -> int:
        mask = 0
        reads: list = [None] * len(needles)
        for k, (pf, g) in enumerate(tests):
            if pf is not None and pf(data):
                mask |= 1 << k
            elif g is not None:
                if reads[g] is None:
                    reads[g] = _attrs_hit(data, needles[g])
                if reads[g]:
                    mask |= 1 << k
        return mask

    return hit


def attribute_read_hit(data: bytes, attrs) -> bool:
    """Whether ``data`` can hold a read of one of ``attrs`` (names) with a receiver other than
    plain ``self``: ``x.NAME``, ``a.b.NAME``, ``(...).NAME`` or ``getattr(x, "NAME")``."""
    return _attrs_hit(data, [a.encode() if isinstance(a, str) else a for a in attrs])


def _attrs_hit(data: bytes, needles) -> bool:
    for needle in needles:
        i = data.find(needle)
        n = len(needle)
        while i >= 0:
            end = i + n
            if (end >= len(data) or data[end] not in _WORD) and (i == 0 or data[i - 1] not in _WORD):
                prev = data[i - 1:i]
                if prev in (b'"', b"'") and data[end:end + 1] == prev:
                    return True  # getattr(x, "start_layer")
                if _other_receiver(data, i) and not _in_import(data, i):
                    return True
            i = data.find(needle, end)
    return False


def _in_import(data: bytes, i: int) -> bool:
    """Whether byte ``i`` lies in the module path of an import statement alone on its line
    (``from vllm.model_executor.layers.linear import ...``, ``import a.layers``): no attribute is
    read there.  A line joined to the one before by ``\\``, or holding a ``;``, is not taken as one."""
    start = max(data.rfind(b"\n", 0, i), data.rfind(b"\r", 0, i)) + 1
    j = start - 1
    while j > 0 and data[j - 1] == 0x0D:  # `\r`
        j -= 1
    if j > 0 and data[j - 1] == 0x5C:  # the line before ends with `\`
        return False
    head = data[start:i].lstrip(b" \t")
    return (head.startswith(b"from ") or head.startswith(b"import ")) and b";" not in head


_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


_BLANK = frozenset(b" \t\n\r\f\v\\")  # what may stand between a receiver, its dot and the name


_WINDOW = 256  # bytes before an attribute name read for its receiver


def _other_receiver(data: bytes, i: int) -> bool:
    """Whether the name at byte ``i`` follows a receiver other than plain ``self``: ``x.NAME``,
    ``a.b.NAME`` or ``(...).NAME`` (blanks and ``\\`` line joins allowed around the dots); not
    ``self.NAME``, a bare ``NAME`` or ``x[0].NAME``.  Reads at most :data:`_WINDOW` bytes backward."""
    lo = max(0, i - _WINDOW)
    j = i
    while j > lo and data[j - 1] in _BLANK:
        j -= 1
    if j == lo or data[j - 1] != 0x2E:  # `.`
        return False
    j -= 1
    while j > lo and data[j - 1] in _BLANK:
        j -= 1
    if j > lo and data[j - 1] == 0x29:  # `)`
        return True
    k = j
    while k > lo and data[k - 1] in _WORD:
        k -= 1
    if k == j:
        return False
    m = k
    while m > lo and data[m - 1] in _BLANK:
        m -= 1
    if m > lo and data[m - 1] == 0x2E:  # `a.b.NAME`
        return True
    return data[k:j] != b"self"


"""Reads that could not be judged: the reasons, what would help, and the one-line summary.

A rule *judges* a watched read when it either reports it or proves it fine.  When it can do
neither (a module it needs is missing, a file it depends on does not parse, a base class is
unknown, ...) the read becomes a :class:`pp_attr_lint.model.NotJudged` record with one of the
reason codes below, so that a run never passes in silence.  Any rule can use this module: raise
``Unresolved(reason, detail)`` in the resolver, turn it into a record with :func:`not_judged`.
"""

from __future__ import annotations

from collections import Counter

# reason code -> (what it means, what would help)
REASONS: dict[str, tuple[str, str]] = {
    "syntax-error": ("a file it depends on has a syntax error", "fix the syntax error (reported as invalid-syntax)"),
    "io-error": ("a file it depends on cannot be read or decoded (no permission, not a regular file, an encoding "
                 "error)", "make the file readable (reported as io-error)"),
    "file-vanished": ("a file it depends on was deleted (or moved) while the run read the tree",
                      "run again once the tree stands still"),
    "module-not-found": ("an imported module is in neither the checked tree nor the environment",
                         "`--src DIR`, installing the package, or `--python PATH`"),
    "relative-import": ("a relative import leaves the checked tree (a lone file outside its package)",
                        "`--as-module MODULE` or checking the whole package"),
    "unknown-base": ("a base class outside the analysed code may add attributes: its source is not read",
                     "`--src DIR` or installing the package that defines it"),
    "outside-code": ("the receiver's class is defined outside the analysed code",
                     "`--src DIR` or installing the package that defines it"),
    "receiver-unresolved": ("the receiver's class cannot be told (an unannotated parameter, a call result, "
                            "an expression)", "a class annotation on the parameter or attribute"),
    "dynamic-class": ("a class on the receiver's MRO sets attributes dynamically (`__getattr__`, a class "
                      "decorator, a metaclass, `setattr` with a computed name)", ""),
    "ambiguous": ("a name or module has more than one definition (bound twice, or in two folders)", ""),
    "recursion-limit": ("a class hierarchy or receiver chain too deep to follow", ""),
    "stage-guard": ("a test on the line's path names the pipeline stage in a way that is not read (which stages "
                    "run the line cannot be told)", "a test of `start_layer == 0` or `is_first_rank` around it"),
    "pp-refusal-unsure": ("the engine refuses pipeline parallelism for the model (its `forward` lacks the parameter "
                          "the engine requires under PP), but that it never runs under PP is not established (a test "
                          "can skip the check, for a speculative draft model; or other code names the class)", ""),
    "masked-by": ("a failure that always comes first on every path the engine takes to the line, on the same ranks "
                  "(named in the detail), keeps the line from ever failing on its own; it is a bug once the first "
                  "failure is fixed", "fix the first failure; the line is judged again then"),
    "engine-fact-unknown": ("a fact about the engine that decides the verdict is not in the analysed code (that "
                            "it refuses pipeline parallelism for a registered model without SupportsPP)",
                            "`--src DIR` with the engine's sources, or `--python PATH` with it installed"),
    "branch-unread": ("the line matters only on a branch picked by a test of what the code built (`x is not None`), "
                      "not of a setting, or in a block a call may skip (an exception handler, a loop's body), or in a body "
                      "that runs only when a stored lambda or nested function is called: whether any configuration "
                      "takes that branch, or who calls that body, is not read", ""),
    "config-condition": ("the engine provides what the line needs only under a condition of the model's "
                         "configuration (a proxy buffer its runner allocates for some models), and whether this "
                         "model meets it is not read", "handle every configuration: read a value the engine may not "
                         "provide as optional (`.get(key)`), pass a layer id the stage owns"),
    "fails-earlier": ("an earlier line always fails first: it imports a name that the engine release checked "
                      "against (or the file's own package) does not have, so the line is never reached",
                      "pair the plugin with the engine release it supports (`--src DIR`, `--python PATH`), or "
                      "stop importing the name"),
    "callee-unread": ("the line is safe only if a helper handed this rank's parameters (`maybe_remap_kv_scale_name("
                      "name, params_dict)`) tests every name it returns against them, and that helper is not found "
                      "or its body is not read (named in the detail)", "`--src DIR` with the helper's sources, or a "
                      "test `name in params_dict` before the lookup"),
}

# the order used when two reasons are equally common, and the fallback reason
ORDER = tuple(REASONS)
DEFAULT = "receiver-unresolved"
# a file the read depends on is there but cannot be used: it does not parse, cannot be read, or vanished
BROKEN_FILE = frozenset({"syntax-error", "io-error", "file-vanished"})
# the reasons that say the run lacks code a verdict needs (a module not found, a relative import
# that leaves the checked tree, an unknown base, a broken file), not that the code cannot be told
# apart: the rules list such a read as not judged rather than pass it
MISSING_CODE = frozenset({"module-not-found", "relative-import", "unknown-base"}) | BROKEN_FILE


def file_reason(message: str) -> str:
    """The reason code for a file whose read or decoding failed with ``message`` (the text of an
    ``io-error`` finding, ``cannot read file: No such file or directory``): ``file-vanished``
    when it no longer exists, else ``io-error``."""
    import errno
    import os

    return "file-vanished" if message == f"cannot read file: {os.strerror(errno.ENOENT)}" else "io-error"


def describe(reason: str) -> str:
    """What ``reason`` means, in words (the code itself when unknown)."""
    return REASONS.get(reason, (reason, ""))[0]


def helps(reason: str) -> str:
    """What would help for ``reason`` (empty when nothing would)."""
    return REASONS.get(reason, ("", ""))[1]


def counts(records) -> list[tuple[str, int]]:
    """``[(reason, count)]`` of ``records`` (objects with ``.reason``), most common first."""
    c = Counter(r.reason for r in records)
    order = {r: i for i, r in enumerate(ORDER)}
    return sorted(c.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)), kv[0]))


def summary_line(records, shown: bool = False, top: int = 3, given=frozenset()) -> str:
    """The one line a text report ends with when some reads were not judged, e.g.::

        12 reads not judged (7 module-not-found, 5 receiver-unresolved); list them with
        `--show-unresolved`; may help: `--src DIR`, installing the package, or `--python PATH`

    ``shown``: the list was printed (then the flag is not named again); ``given``: the options
    the run was given (``{"--src"}``), whose hints are left out when they name nothing else.
    Empty when ``records`` is empty."""
    if not records:
        return ""
    n = len(records)
    by = counts(records)
    parts = ", ".join(f"{k} {r}" for r, k in by[:top]) + (", ..." if len(by) > top else "")
    line = f"{n} read{'s' if n != 1 else ''} not judged ({parts})"
    if not shown:
        line += "; list them with `--show-unresolved`"
    hints = list(dict.fromkeys(_hint(r, given) for r, _ in by[:top] if _hint(r, given)))
    if hints:
        line += "; may help: " + "; ".join(hints)
    return line + "."


# code not found is still found by another folder or environment, even when `--src` or `--python`
# was given (`--src` takes several folders): the hint then says so
_MORE_CODE = frozenset({"module-not-found", "unknown-base", "outside-code"})


def _hint(reason: str, given) -> str:
    """What may help with ``reason``, for a run given the options ``given``; ``""`` when nothing
    the run lacks would (an engine fact not in the engine given)."""
    hint = helps(reason)
    if not hint or not _only_given(hint, given):
        return hint
    if reason in _MORE_CODE:
        return "another `--src DIR` with the missing package's sources, or `--python PATH` with it installed"
    return ""


def _only_given(hint: str, given) -> bool:
    """Whether every option ``hint`` names (```--src DIR```) is one the run was given: then the
    hint adds nothing (the engine was given and the fact is not in it)."""
    import re

    flags = re.findall(r"`(--[a-z-]+)", hint)
    return bool(flags) and all(f in given for f in flags)

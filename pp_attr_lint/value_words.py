"""What a value the resolver does not follow is, in words: the details of ``receiver-unresolved``
records whose receiver is (or is built from) such a value.

Input is a value descriptor of :mod:`pp_attr_lint.index.summary`, mostly an ``("unknown", why,
...)`` one (a parameter of a nested function or lambda, a name bound by unpacking or a loop, an
expression); output is a sentence fragment that names what the value is and, where one exists,
what would let it be judged.
"""

from __future__ import annotations

# how a name without a value of its own is bound -> (what it is, what may help)
_BOUND: dict[str, tuple[str, str]] = {
    "unpacked": ("is unpacked from a tuple or other iterable (`a, b = ...`)", "an annotation `{name}: Cls` before it"),
    "loop": ("is a loop variable", "an annotation `{name}: Cls` before the loop"),
    "with": ("is bound by `with ... as`", "an annotation `{name}: Cls` before it"),
    "except": ("is an exception bound by `except ... as`", ""),
    "augmented": ("is re-bound by an augmented assignment (`+=`)", ""),
    "global": ("is declared `global` or `nonlocal` in the function", ""),
}
GENERIC = "a value that is not a call, a name or an attribute chain"


def _why(desc) -> str | None:
    if desc and desc[0] == "import":  # `from m import X` in the function
        return "from"
    return desc[1] if desc and desc[0] == "unknown" and len(desc) > 1 else None


def _from(desc) -> str:
    return f"`from {'.' * desc[3]}{desc[1]} import {desc[2]}` in the function"


def _function(name: str) -> str:
    return f"nested function `{name}`" if name else "a lambda"


def value_text(desc) -> str:
    """What the value of descriptor ``desc`` is, as a noun phrase (``"the expression `x[0]`,
    whose class is not followed"``); :data:`GENERIC` for a descriptor that says no more."""
    why = _why(desc)
    if why == "expr":
        return f"the expression `{desc[2]}`, whose class is not followed"
    if why == "param":
        return f"a parameter of {_function(desc[2])}, which has no class annotation"
    if why == "import":
        return f"the module `{desc[2]}`, imported in the function"
    if why == "def":
        return f"`{desc[2]}`, a function or class defined in the function"
    if why == "from":
        return f"what {_from(desc)} binds, which is not followed to an instance"
    if why in _BOUND:
        return f"a name that {_BOUND[why][0]}"
    return GENERIC


def name_detail(name: str, desc) -> str:
    """The detail for a receiver whose first name ``name`` is a local bound to descriptor
    ``desc`` that cannot be followed, with what may help where something would (``"parameter
    `self` of a lambda has no class annotation; ..."``)."""
    why = _why(desc)
    if why == "param":
        if desc[2]:
            return (f"parameter `{name}` of nested function `{desc[2]}` has no class annotation; "
                    f"may help: `{name}: Cls` in its signature")
        return (f"parameter `{name}` of a lambda has no class annotation (a lambda's parameters cannot have one); "
                f"may help: a nested `def` with `{name}: Cls`")
    if why == "expr":
        return (f"`{name}` is the expression `{desc[2]}`, whose class is not followed; "
                f"may help: `{name}: Cls = ...`")
    if why in _BOUND:
        what, hint = _BOUND[why]
        return f"`{name}` {what}" + (f"; may help: {hint.format(name=name)}" if hint else "")
    if why == "from":
        return f"`{name}` is bound by {_from(desc)}"
    if why in ("import", "def"):
        return f"`{name}` is {value_text(desc)}"
    return f"`{name}` is {GENERIC}"


def call_detail(name: str, callee: str, inner: str) -> str:
    """The detail for a receiver whose first name ``name`` is the result of ``callee(...)``,
    whose returned value cannot be followed for the reason ``inner`` (a detail of this module):
    the receiver of ``callee`` when ``inner`` is about its first name."""
    head = callee.split(".", 1)[0] if "." in callee else None
    if head and inner.startswith(f"`{head}` is bound by `from "):  # `Cls.from_pretrained(...)`
        return (f"`{name}` is the result of `{callee}(...)`, called on what {inner.split(' is bound by ', 1)[1]} "
                f"binds: its result is not followed; may help: `{name}: Cls = ...`")
    if head and inner.startswith((f"`{head}` ", f"`{head}.", f"parameter `{head}` ")):
        return f"`{name}` is the result of `{callee}(...)`, whose receiver's class cannot be told: {inner}"
    inner = inner.split("; may help: ", 1)[0]  # what helps is said of the result, not of the callee's code
    return (f"`{name}` is the result of `{callee}(...)`, whose class cannot be told: {inner}; "
            f"may help: a return annotation on `{callee.rsplit('.', 1)[-1]}`, or `{name}: Cls = ...`")


def attribute_detail(owner: str, attr: str, desc) -> str:
    """The detail for an attribute ``owner.attr`` assigned the value of descriptor ``desc``
    that cannot be followed."""
    what = f"`{owner}.{attr}` {_BOUND[_why(desc)][0]}" if _why(desc) in _BOUND else \
        f"`{owner}.{attr}` is set to {value_text(desc)}"
    return f"{what}; may help: a class annotation `{attr}: Cls` on `{owner}`"

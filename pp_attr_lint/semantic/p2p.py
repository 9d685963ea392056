"""Point-to-point transfers between pipeline stages inside one function: a ``recv`` that no
``send`` of the same function answers on some rank, so that the rank waits there forever.

SGLang's tied head of Qwen2 / Qwen3 (sglang-usf 0.5.1.post6 qwen2.py:440-451) is the shape:

    if self.pp_group.is_first_rank:
        self.pp_group.send(weight, dst=self.pp_group.last_rank)
    else:
        w = self.pp_group.recv(size=..., dtype=..., src=self.pp_group.first_rank)

The first rank sends only to the last one; a middle rank (pipeline size >= 3) also takes the
``else`` branch and waits in ``recv`` for a tensor nobody sends it.  What the function does after
that ``recv`` never runs on such a rank: :func:`unanswered_recv` says so, for the message of a
finding on a later line.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from .guards import FIRST, LAST, evaluate, f_and, satisfying

# a process group's attributes naming a stage by its position (SGLang's and vLLM's GroupCoordinator)
RANK_NAMES = {"first_rank": FIRST, "last_rank": LAST}
_WORD = {FIRST: "first", LAST: "last"}
_SIMPLE = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)


class Unanswered(NamedTuple):
    """A ``recv`` at line ``row`` from the stage ``src`` (``"first"`` / ``"last"``) that the
    function's own ``send``s from that stage (their lines ``sends``, addressed to the stages
    ``dsts``) never address to the rank asked about."""

    row: int
    src: str
    sends: tuple
    dsts: tuple


def _transfers(st) -> list:
    """``[(kind, peer formula or None, call)]`` of the ``x.send(..., dst=...)`` / ``x.recv(...,
    src=...)`` calls of the simple statement ``st`` (``None``: a peer not named by position)."""
    out = []
    for node in ast.walk(st):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("send", "recv"):
            word = "dst" if node.func.attr == "send" else "src"
            peer = next((k.value for k in node.keywords if k.arg == word), None)
            rank = RANK_NAMES.get(peer.attr) if isinstance(peer, ast.Attribute) else None
            out.append((node.func.attr, rank, node))
    return out


def _holds(f, env: dict) -> bool | None:
    try:
        return evaluate(f, env)
    except KeyError:
        return None  # an atom the witness does not name


def unanswered_recv(guards, row: int, env: dict) -> Unanswered | None:
    """The first ``recv`` of the function walked by ``guards`` (a
    :class:`~.flow.FunctionGuards`) that runs before line ``row`` on the rank and configuration
    ``env`` (``@first`` / ``@last`` and the other atoms, as a witness gives them) and that no
    ``send`` of the same function answers there: it names the sending stage by position
    (``src=group.first_rank``), that stage's every ``send`` in the function names its receiver by
    position too, and none of them is this rank.  ``None`` when there is none, or when a guard
    needs an atom ``env`` does not give."""
    stmts = [(st, g) for st, g in guards.reached_statements() if isinstance(st, _SIMPLE)]
    here = next((st for st, _g in stmts if st.lineno <= row <= (st.end_lineno or st.lineno)), None)
    if here is None:
        return None
    sends = [(g, rank, call) for st, g in stmts for kind, rank, call in _transfers(st) if kind == "send"]
    for st, g in stmts:
        if st.lineno >= here.lineno or guards.may_skip(st) or _holds(g, env) is not True:
            continue
        for kind, src, _call in _transfers(st):
            if kind != "recv" or src is None:
                continue
            theirs = [(rank, call) for sg, rank, call in sends if satisfying(f_and(sg, src)) is not None]
            if not theirs or any(rank is None for rank, _c in theirs):
                continue  # the stage sends nothing here, or to a receiver not named by position
            if any(_holds(rank, env) is not False for rank, _c in theirs):
                continue  # one of them may address this rank
            return Unanswered(st.lineno, _WORD[src], tuple(c.lineno for _r, c in theirs),
                              tuple(dict.fromkeys(_WORD[r] for r, _c in theirs)))
    return None

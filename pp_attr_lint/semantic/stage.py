"""Tests that name the pipeline stage by its position (``self.start_layer == 0``, ``not pp_rank``,
``pp_group.is_first_rank``): what a test holding says of the stages that run a line, and an
``atom_of`` hook for :class:`~.flow.FunctionGuards` that turns such a test into the model's
``@first`` atom.

The words that name the stage are those of :mod:`.guards` (``STAGE_WORD_PARTS``,
``STAGE_POSITION_NAMES``); ``start_layer`` is 0 on the first stage in vLLM (``get_pp_indices``
in ``vllm/distributed/utils.py``, used by ``make_layers`` in ``vllm/model_executor/models/utils.py``)
and SGLang (``make_layers`` in ``sglang/srt/utils/common.py``, 0.5.23), as ``pp_rank`` and the
group's ``rank_in_group`` are.
"""

from __future__ import annotations

import ast

from .. import facts as F
from ..index.astutil import last_name
from . import guards as G

# what a test says of the pipeline stages that run what it guards
FIRST, LATER, UNKNOWN = "first", "later", "unknown"  # only the first; only stages after it (PP >= 2); not read
# a comparison with its sides swapped (`0 == self.start_layer`)
_MIRROR = {"Lt": "Gt", "Gt": "Lt", "LtE": "GtE", "GtE": "LtE", "Eq": "Eq", "NotEq": "NotEq"}


def names_stage(node: ast.AST) -> bool:
    """Whether a test names the stage (``self.start_layer == 0``, ``pp_group.is_first_rank``):
    a name or attribute in it holds one of :data:`~.guards.STAGE_WORD_PARTS`."""
    for n in ast.walk(node):
        word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if word and any(w in word.lower() for w in G.STAGE_WORD_PARTS):
            return True
    return False


def _flip(c):
    """What the negation of a test whose stage class is ``c`` says."""
    return {FIRST: LATER, LATER: FIRST}.get(c, c)


def stage_class(test: ast.AST) -> str | None:
    """What ``test`` holding says of the stage: :data:`FIRST` (only the first stage holds it:
    ``is_first_rank``, ``self.start_layer == 0``, ``not pp_rank``), :data:`LATER` (only the
    stages after the first: ``is_last_rank`` under PP >= 2, ``start_layer != 0`` / ``> 0``,
    ``not is_first_rank``), :data:`UNKNOWN` (it names the stage otherwise), ``None`` (it does not
    name the stage).  ``and`` holds where each part holds; ``or`` says something only when all
    its parts say the same."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flip(stage_class(test.operand))
    if isinstance(test, ast.BoolOp):
        parts = [stage_class(v) for v in test.values]
        if isinstance(test.op, ast.And):  # a conjunction holds only where each part holds
            if FIRST in parts:
                return FIRST
            if LATER in parts:
                return LATER
        elif None not in parts and len(set(parts)) == 1 and parts[0] != UNKNOWN:
            return parts[0]  # a disjunction of parts that all say the same
        return UNKNOWN if any(p is not None for p in parts) else None
    word = last_name(test)
    if word == F.FIRST_RANK_PREDICATE:
        return FIRST
    if word == F.LAST_RANK_PREDICATE:
        return LATER
    if word in G.STAGE_POSITION_NAMES:
        return LATER  # `if self.start_layer:`
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, type(test.ops[0]).__name__, test.comparators[0]
        if isinstance(left, ast.Constant) and op in _MIRROR:
            left, op, right = right, _MIRROR[op], left  # `0 == self.start_layer`
        if last_name(left) in G.STAGE_POSITION_NAMES and isinstance(right, ast.Constant) and type(right.value) is int:
            c = right.value
            if (op, c) in (("Eq", 0), ("LtE", 0), ("Lt", 1)):
                return FIRST
            if (op, c) in (("NotEq", 0), ("Gt", 0), ("GtE", 1)):
                return LATER
    return UNKNOWN if names_stage(test) else None


def stage_atom(test: ast.AST) -> tuple | None:
    """The atom of a test that names the pipeline stage (see :func:`stage_class`), an ``atom_of``
    for :class:`~.flow.FunctionGuards`: ``@first`` when only the first stage holds it, its
    negation when only the later ones do, an opaque ``stage?<text>`` atom when it names the stage
    otherwise (:func:`opaque`); ``None`` (the model's own naming) for a rank predicate or a test
    that does not name the stage."""
    if G.rank_predicate(test) is not None:
        return None  # `is_first_rank` / `is_last_rank`: the model's @first / @last
    c = stage_class(test)
    if c == FIRST:
        return G.FIRST
    if c == LATER:
        return G.f_not(G.FIRST)
    return ("a", OPAQUE + ast.unparse(test)) if c == UNKNOWN else None


# the prefix of the atom of a stage test that does not tell which stages hold it
OPAQUE = "stage?"


def opaque(guard: tuple) -> bool:
    """Whether ``guard`` names a stage test that does not tell which stages hold it."""
    return any(a.startswith(OPAQUE) for a in G.atoms(guard))

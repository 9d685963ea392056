"""Guards: when a line runs, as a boolean formula over *atoms*, and the one vocabulary of the
words that name a pipeline-parallel rank or the pipeline size.

Atoms: ``@first`` (``...is_first_rank``), ``@last`` (``...is_last_rank``) and any other test,
named by its last dotted component (``self.config.tie_word_embeddings`` and
``config.tie_word_embeddings`` are the same atom ``tie_word_embeddings``) or by its source text.
A formula is plain data (it survives ``marshal`` in a cached summary)::

    ("T",) | ("F",) | ("a", name) | ("not", f) | ("and", (f, ...)) | ("or", (f, ...))

A line fails on some rank when ``guard(line) and failure`` is satisfiable with at most one of
``@first``/``@last`` true (``pipeline_parallel_size >= 2``); other atoms are free
(:func:`satisfying`).
"""

from __future__ import annotations

import ast
import itertools
import re

from .. import facts as F
from ..index.astutil import ref_chain

TRUE = ("T",)
FALSE = ("F",)
FIRST = ("a", "@first")
LAST = ("a", "@last")
RANK_ATOMS = frozenset({"@first", "@last"})

# -- the vocabulary ----------------------------------------------------------------------------
# the properties of vLLM's / SGLang's pipeline group that say the rank's place
# (vllm/distributed/parallel_state.py GroupCoordinator.is_first_rank / is_last_rank)
RANK_PREDICATES = {F.FIRST_RANK_PREDICATE: FIRST, F.LAST_RANK_PREDICATE: LAST}
# names whose value is the pipeline size (``parallel_config.pipeline_parallel_size``,
# ``get_pp_group().world_size``, SGLang's ``server_args.pp_size``)
PP_SIZE_NAMES = frozenset({"pipeline_parallel_size", "pp_size", "world_size"})
# words whose presence in a test means it depends on the rank or its layer range (the stage):
# the predicates, the group, the layer range a rank owns and the placeholder of missing layers
STAGE_WORDS = frozenset({F.FIRST_RANK_PREDICATE, F.LAST_RANK_PREDICATE, "get_pp_group", "pp_group",
                         "start_layer", "end_layer", "get_pp_indices", F.PLACEHOLDER_CLASS})
# parts of a name that mark a test as naming the stage in some way (``self.start_layer``,
# ``pp_rank``, ``is_last_stage``, ``pipeline_...``): a test with one is read as a stage test
STAGE_WORD_PARTS = ("start_layer", "rank", "stage", "pp_", "pipeline")
# names of the stage's position: 0 on the first stage (``start_layer``, SGLang's ``pp_rank``,
# the group's ``rank_in_group``)
STAGE_POSITION_NAMES = frozenset({"start_layer", "pp_rank", "rank_in_group"})
# number-of-layers names: ``n - 1`` with one of them is the last layer's index
LAYER_COUNT_NAMES = frozenset({"num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_layer"})


# a test of global rank 0 (``facts.GLOBAL_FIRST_RANK_TESTS``, of any dotted receiver)
GLOBAL_FIRST_TEST = re.compile(r"^(\w+\.)*(" + "|".join(map(re.escape, F.GLOBAL_FIRST_RANK_TESTS)) + r")$")


def global_first_atom(node: ast.AST) -> tuple | None:
    """:data:`FIRST` when ``node`` is a test true only on global rank 0
    (``dist.is_global_first_rank()``, ``torch.distributed.get_rank() == 0``): global rank 0 is on
    the first stage.  ``None`` otherwise; an ``atom_of`` for :func:`formula` and
    :class:`~.flow.FunctionGuards`."""
    return FIRST if GLOBAL_FIRST_TEST.match(ast.unparse(node)) else None


def names_pp_size(text: str) -> bool:
    """Whether an expression's source text reads the pipeline size: it ends in
    ``pipeline_parallel_size`` or ``pp_size``, or in ``world_size`` of something named ``pp``
    (``get_pp_group().world_size``; a bare ``world_size`` may be the tensor-parallel one)."""
    return text.endswith(("pipeline_parallel_size", "pp_size")) or (text.endswith("world_size") and "pp" in text)


def rank_predicate(node: ast.AST) -> tuple | None:
    """:data:`FIRST` / :data:`LAST` when ``node`` reads ``is_first_rank`` / ``is_last_rank`` (of
    any receiver, also called); ``None`` otherwise."""
    chain = ref_chain(node.func) if isinstance(node, ast.Call) else ref_chain(node)
    last = chain[-1] if chain else (node.attr if isinstance(node, ast.Attribute) else None)
    return RANK_PREDICATES.get(last)


# -- formulas ----------------------------------------------------------------------------------
def f_and(*fs) -> tuple:
    """The conjunction of formulas (``TRUE`` for none)."""
    fs = tuple(f for f in fs if f != TRUE)
    if not fs:
        return TRUE
    return fs[0] if len(fs) == 1 else ("and", fs)


def f_or(*fs) -> tuple:
    """The disjunction of formulas (``FALSE`` for none)."""
    if any(f == TRUE for f in fs):
        return TRUE
    fs = tuple(f for f in fs if f != FALSE)
    if not fs:
        return FALSE
    return fs[0] if len(fs) == 1 else ("or", fs)


def f_not(f) -> tuple:
    """The negation of a formula."""
    if f == TRUE:
        return FALSE
    if f == FALSE:
        return TRUE
    return f[1] if f[0] == "not" else ("not", f)


def atoms(f, out: set | None = None) -> set:
    """The atom names of ``f``, added to ``out`` (a new set when omitted)."""
    out = set() if out is None else out
    if f[0] == "a":
        out.add(f[1])
    elif f[0] == "not":
        atoms(f[1], out)
    elif f[0] in ("and", "or"):
        for g in f[1]:
            atoms(g, out)
    return out


def evaluate(f, env: dict) -> bool:
    """The value of ``f`` under ``env`` (atom name -> bool); ``KeyError`` for an atom it lacks."""
    k = f[0]
    if k == "T":
        return True
    if k == "F":
        return False
    if k == "a":
        return env[f[1]]
    if k == "not":
        return not evaluate(f[1], env)
    if k == "and":
        return all(evaluate(g, env) for g in f[1])
    return any(evaluate(g, env) for g in f[1])


def satisfying(f) -> dict | None:
    """An assignment of the atoms that makes ``f`` true on a pipeline-parallel rank (never both
    ``@first`` and ``@last``), or ``None``.  At most 16 atoms are enumerated; a formula with more
    counts as unsatisfiable (silence over a guess)."""
    names = sorted(atoms(f) - RANK_ATOMS)
    if len(names) > 16:
        return None
    # the first and the last rank before a middle one (which needs pipeline_parallel_size >= 3)
    for first, last in ((True, False), (False, True), (False, False)):
        for values in itertools.product((False, True), repeat=len(names)):
            env = dict(zip(names, values), **{"@first": first, "@last": last})
            if evaluate(f, env):
                return env
    return None


def implies(f, g) -> bool:
    """Whether ``f`` implies ``g`` on every pipeline-parallel rank (``f and not g`` has no
    :func:`satisfying` assignment; more than 16 free atoms count as implied)."""
    return satisfying(f_and(f, f_not(g))) is None


def can_hold(f, rank: tuple | None = None) -> bool:
    """Whether ``f`` can hold on some pipeline-parallel rank (on ``rank``, :data:`FIRST` or
    :data:`LAST`, when given)."""
    return satisfying(f if rank is None else f_and(f, rank)) is not None


# the places a rank can have in a pipeline of size >= 2: first, last, or neither (size >= 3)
RANK_STATES = (f_and(FIRST, f_not(LAST)), f_and(LAST, f_not(FIRST)), f_and(f_not(FIRST), f_not(LAST)))


def rank_projection(f) -> tuple:
    """The ranks where ``f`` can hold for some value of its other atoms, as a formula over the
    rank atoms alone (``TRUE`` when on every rank, ``FALSE`` when on none)."""
    held = [state for state in RANK_STATES if satisfying(f_and(f, state)) is not None]
    return TRUE if len(held) == len(RANK_STATES) else f_or(*held)


def mentions_pp_size(text: str) -> bool:
    """Whether the source text of a test names the pipeline's size (a word of
    :data:`PP_SIZE_NAMES`): the same on every rank."""
    import re

    return any(w in PP_SIZE_NAMES for w in re.findall(r"\w+", text))


def rank_atoms(f) -> set:
    """The rank atoms (``@first``, ``@last``) a formula mentions."""
    return atoms(f) & RANK_ATOMS


# the words that open a finding's witness ranks (``Finding.witness["ranks"]``), in one place:
# masking reads them back (:func:`later_ranks_only`)
FIRST_RANK_WORDS = "the first pipeline-parallel rank"
LAST_RANK_WORDS = "the last pipeline-parallel rank"
MIDDLE_RANK_WORDS = "a middle pipeline-parallel rank"
LATER_RANKS_WORDS = "every pipeline-parallel rank but the first"


def later_ranks_only(words: str) -> bool:
    """Whether witness ranks ``words`` name only ranks after the first (the last, a middle one,
    or every one but the first)."""
    return words.startswith((LAST_RANK_WORDS, MIDDLE_RANK_WORDS, LATER_RANKS_WORDS))


def rank_words(env: dict) -> str:
    """Which pipeline-parallel rank an assignment of :func:`satisfying` describes."""
    if env.get("@first"):
        return FIRST_RANK_WORDS
    if env.get("@last"):
        return f"{LAST_RANK_WORDS} (rank > 0)"
    return f"{MIDDLE_RANK_WORDS} (pipeline_parallel_size >= 3)"


def describe(f) -> str:
    """A guard formula in words (``not is_first_rank and tie_word_embeddings``)."""
    k = f[0]
    if k == "T":
        return "always"
    if k == "F":
        return "never"
    if k == "a":
        return {"@first": "is_first_rank", "@last": "is_last_rank"}.get(f[1], f[1])
    if k == "not":
        return f"not {describe(f[1])}" if f[1][0] == "a" else f"not ({describe(f[1])})"
    joiner = " and " if k == "and" else " or "
    return joiner.join(describe(g) if g[0] in ("a", "not") else f"({describe(g)})" for g in f[1])


def when(f) -> str:
    """When a guard formula holds, as words that follow a verb: ``when not is_first_rank``, ``on
    every rank`` (always), ``on no rank`` (never)."""
    if f == TRUE:
        return "on every rank"
    if f == FALSE:
        return "on no rank"
    return f"when {describe(f)}"


def runs_when(guard) -> str:
    """``this line runs when ...`` / ``this line runs on every rank`` for a line's guard."""
    return f"this line runs {when(guard)}"


def witness(env: dict, rank: str) -> dict:
    """A finding's witness: the ranks it fails on (``rank``, words) and the values of the other
    tests of ``env`` (a :func:`satisfying` assignment: ``{"tie_word_embeddings": True}``), the
    configuration under which the failing line runs."""
    return {"ranks": rank, "config": {k: v for k, v in sorted(env.items()) if not k.startswith("@")}}


def describe_env(env: dict) -> str:
    """`` with a=True, b=False`` for the configuration atoms of an assignment (``""`` for none)."""
    other = [f"{k}={v}" for k, v in sorted(env.items()) if not k.startswith("@")]
    return f" with {', '.join(other)}" if other else ""


def rename(f, how) -> tuple:
    """``f`` with each atom name ``a`` replaced by ``how(a)``."""
    k = f[0]
    if k == "a":
        return ("a", how(f[1]))
    if k == "not":
        return ("not", rename(f[1], how))
    if k in ("and", "or"):
        return (k, tuple(rename(g, how) for g in f[1]))
    return f


def substitute(f, atom: str, by) -> tuple:
    """``f`` with the atom ``atom`` replaced by the formula ``by``."""
    k = f[0]
    if k == "a":
        return by if f[1] == atom else f
    if k == "not":
        return f_not(substitute(f[1], atom, by))
    if k == "and":
        return f_and(*(substitute(g, atom, by) for g in f[1]))
    if k == "or":
        return f_or(*(substitute(g, atom, by) for g in f[1]))
    return f


# -- tests as formulas -------------------------------------------------------------------------
def atom(node: ast.AST, names: dict | None = None) -> tuple:
    """The atom of a test that is not a boolean operation: a local flag's formula (``names``), a
    rank predicate, ``getattr(x, "name", ...)`` as ``name``, a dotted read by its last name, or
    the test's source text."""
    if names and isinstance(node, ast.Name) and node.id in names:
        return names[node.id]  # a local flag: `keep = pp.is_first_rank or tie` ... `if keep:`
    chain = ref_chain(node.func) if isinstance(node, ast.Call) else ref_chain(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return ("a", node.args[1].value)
    rank = rank_predicate(node)
    if rank is not None:
        return rank
    if chain is not None and not isinstance(node, ast.Call):
        return ("a", chain[-1])
    return ("a", ast.unparse(node))


def pp_size_test(node: ast.AST) -> tuple | None:
    """``pp_group.world_size == 1`` is false and ``> 1`` / ``!= 1`` true under pipeline
    parallelism (the only setting the rules judge); ``None`` for other tests."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value == 1):
        return None
    left = ast.unparse(node.left)
    if not (left.endswith("pipeline_parallel_size") or (left.endswith("world_size") and "pp" in left)):
        return None
    op = node.ops[0]
    if isinstance(op, (ast.Eq, ast.LtE)):
        return FALSE
    if isinstance(op, (ast.NotEq, ast.Gt)):
        return TRUE
    return None


def pp_only_test(node: ast.AST) -> bool:
    """``pp_size > 1``, ``pipeline_parallel_size != 1``, ``pp_size >= 2`` (any receiver): true only
    under pipeline parallelism."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)):
        return False
    left, op, value = ast.unparse(node.left), node.ops[0], node.comparators[0].value
    if not (left.endswith("pp_size") or left.endswith("pipeline_parallel_size")):
        return False
    return (isinstance(op, (ast.Gt, ast.NotEq)) and value == 1) or (isinstance(op, ast.GtE) and value == 2)


def formula(node: ast.AST, names: dict | None = None, atom_of=None) -> tuple:
    """The guard formula of a test (see the module docstring); ``names`` maps local variables to
    the formulas they were assigned (``keep = pp.is_first_rank or tie``); ``atom_of`` (node ->
    formula or ``None``) lets a caller name the atoms of the tests it reads itself (a rule that
    knows what ``self.x`` holds on each rank), before the default naming."""
    pp = pp_size_test(node)
    if pp is not None:
        return pp
    if isinstance(node, ast.BoolOp):
        parts = [formula(v, names, atom_of) for v in node.values]
        return f_and(*parts) if isinstance(node.op, ast.And) else f_or(*parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f_not(formula(node.operand, names, atom_of))
    if isinstance(node, ast.Constant):
        return TRUE if node.value else FALSE
    if atom_of is not None:
        got = atom_of(node)
        if got is not None:
            return got
    return atom(node, names)


# the ends of this rank's slice of the layers (vLLM's and SGLang's `make_layers`): an index below
# `start_layer` or at or above `end_layer` belongs to another pipeline-parallel rank
_SLICE_ENDS = {"start_layer": "below", "end_layer": "above"}
_FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def _slice_side(left, op, right) -> tuple | None:
    """The atom of one comparison of a layer index with an end of this rank's slice:
    ``("a", "@below i")`` for ``i < x.start_layer``, ``("a", "@above i")`` for
    ``i >= x.end_layer`` (their negations for ``>=`` / ``<``, either side), ``("a", "@id i")`` for
    ``i is not None`` (negated for ``is None``); ``None`` for any other comparison."""
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(left, ast.Name) \
            and isinstance(right, ast.Constant) and right.value is None:
        a = ("a", f"@id {left.id}")
        return a if isinstance(op, ast.IsNot) else f_not(a)
    if type(op) not in _FLIP:
        return None
    if isinstance(left, ast.Attribute) and isinstance(right, ast.Name):  # `x.start_layer > i`
        left, right, op = right, left, _FLIP[type(op)]()
    if not (isinstance(left, ast.Name) and isinstance(right, ast.Attribute) and right.attr in _SLICE_ENDS):
        return None
    side = _SLICE_ENDS[right.attr]
    a = ("a", f"@{side} {left.id}")
    if side == "below":  # i < start (outside) / i >= start (inside)
        out = {ast.Lt: True, ast.GtE: False}.get(type(op))
    else:  # i >= end (outside) / i < end (inside)
        out = {ast.GtE: True, ast.Lt: False}.get(type(op))
    if out is None:
        return None  # `i <= x.start_layer`, `i > x.end_layer`: not the slice's ends
    return a if out else f_not(a)


def layer_range_skip(test: ast.AST) -> tuple | None:
    """Whether ``test``, the test of an ``if`` whose body skips the item (``continue``), is
    true for every layer index outside this rank's ``[start_layer, end_layer)``: vLLM's and
    SGLang's loaders skip the checkpoint names of the layers another pipeline-parallel rank owns
    with ``if layer_id is not None and (layer_id < self.model.start_layer or layer_id >=
    self.model.end_layer): continue`` (SGLang 0.5.23 ``srt/models/*.py``), or ``not
    self.start_layer <= layer_id < self.end_layer``.

    Returns ``(index name, conditions)``: ``conditions`` is ``()`` when the test holds for every
    such index (given ``index is not None``), else the ``(receiver text, attribute)`` of each
    ``hasattr(receiver, "attribute")`` it needs as well (SGLang's ``hasattr(self.model,
    "start_layer")``, false when the inner model holds no range, which a caller decides).
    ``None`` when the test reads anything else it needs (``and not is_nextn``), compares more than
    one index, or names no end of the slice."""
    hasattrs: dict[str, tuple] = {}

    def atom_of(node):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            sides = [_slice_side(a, op, b) for a, op, b in zip(parts, node.ops, parts[1:])]
            return None if any(s is None for s in sides) else f_and(*sides)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr" \
                and len(node.args) == 2 and not node.keywords and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and ref_chain(node.args[0]) is not None:
            cond = (".".join(ref_chain(node.args[0])), node.args[1].value)
            name = f"@hasattr {cond[0]} {cond[1]}"
            hasattrs[name] = cond
            return ("a", name)
        return None

    f = formula(test, atom_of=atom_of)
    names = atoms(f)
    if len(names) > 8:
        return None
    index = {n.split(" ", 1)[1] for n in names if n.startswith(("@below ", "@above ", "@id "))}
    if len(index) != 1 or not any(n.startswith(("@below ", "@above ")) for n in names):
        return None
    i = index.pop()
    outside = f_and(*([("a", f"@id {i}")] if f"@id {i}" in names else []),
                    f_or(("a", f"@below {i}"), ("a", f"@above {i}")))
    if implies(outside, f):
        return i, ()
    if hasattrs and implies(f_and(outside, *(("a", n) for n in hasattrs)), f):
        return i, tuple(hasattrs[n] for n in sorted(hasattrs))
    return None

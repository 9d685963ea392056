"""The flow walker's guards (``semantic.flow.FunctionGuards``): every spelling of the same
condition gives the node the same guard, and the model's questions answer from it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from pp_attr_lint.semantic import guards as G
from pp_attr_lint.semantic.flow import FunctionGuards
from pp_attr_lint.semantic.model import RankFacts


def _guard(src: str, target: str = "self.work"):
    """The guard of the first call whose callee is ``target`` in the function ``src``."""
    fn = ast.parse(textwrap.dedent(src)).body[0]
    call = next(n for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == target)
    g = FunctionGuards(fn)
    return g.of(call), g.every_call(call)


LAST_SPELLINGS = {
    "if": """
        def f(self, s):
            if get_pp_group().is_last_rank:
                return self.work(s)
        """,
    "early return": """
        def f(self, s):
            if not get_pp_group().is_last_rank:
                return None
            return self.work(s)
        """,
    "else returns": """
        def f(self, s):
            if get_pp_group().is_last_rank:
                pass
            else:
                return None
            return self.work(s)
        """,
    "conditional expression": """
        def f(self, s):
            return self.work(s) if get_pp_group().is_last_rank else None
        """,
    "and": """
        def f(self, s):
            return get_pp_group().is_last_rank and self.work(s)
        """,
    "or not": """
        def f(self, s):
            return not get_pp_group().is_last_rank or self.work(s)
        """,
    "assert": """
        def f(self, s):
            assert get_pp_group().is_last_rank
            return self.work(s)
        """,
    "local flag": """
        def f(self, s):
            last = get_pp_group().is_last_rank
            if last:
                self.work(s)
        """,
    "while": """
        def f(self, s):
            while get_pp_group().is_last_rank:
                self.work(s)
        """,
    "comprehension filter": """
        def f(self, s):
            return [self.work(x) for x in s if get_pp_group().is_last_rank]
        """,
}


@pytest.mark.parametrize("name", sorted(LAST_SPELLINGS))
def test_every_spelling_of_the_last_rank_gives_the_same_guard(name):
    guard, _ = _guard(LAST_SPELLINGS[name])
    assert guard == G.LAST
    assert RankFacts.implies_rank(guard, G.LAST)
    assert not RankFacts.can_hold(guard, G.FIRST)


def test_every_call_tells_a_rank_test_from_an_argument_test():
    _, every = _guard(LAST_SPELLINGS["early return"])
    assert every == G.LAST  # on the last rank, on every call
    guard, every = _guard("""
        def f(self, s, get_embedding=False):
            if not get_embedding:
                return s
            return self.work(s)
        """)
    assert guard == ("a", "get_embedding") and every is None
    _, every = _guard("""
        def f(self, s):
            for x in s:
                self.work(x)
        """)
    assert every is None  # a loop may run no time
    guard, every = _guard("""
        def f(self, s):
            try:
                pass
            except ValueError:
                self.work(s)
        """)
    assert guard == G.TRUE and every is None  # a handler runs only after a raise


def test_code_after_a_return_never_runs():
    guard, _ = _guard("""
        def f(self, s):
            return s
            self.work(s)
        """)
    assert guard == G.FALSE and not RankFacts.can_hold(guard)


def test_a_node_the_walk_does_not_reach_has_no_guard():
    guard, every = _guard("""
        def f(self, s):
            def inner():
                return self.work(s)
            return inner
        """)
    assert guard is None and every is None


def test_the_pipeline_size_is_read_as_true_under_pp():
    guard, _ = _guard("""
        def f(self, s):
            if get_pp_group().world_size == 1:
                return s
            return self.work(s)
        """)
    assert guard == G.TRUE


def test_a_caller_names_its_own_atoms():
    src = textwrap.dedent("""
        def f(self, s):
            if self.sampler is not None:
                self.work(s)
        """)
    fn = ast.parse(src).body[0]
    call = next(n for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == "self.work")

    def atom_of(node):
        if isinstance(node, ast.Compare) and ast.unparse(node) == "self.sampler is not None":
            return G.f_not(("a", "sampler is None"))
        return None

    assert FunctionGuards(fn, atom_of=atom_of).of(call) == ("not", ("a", "sampler is None"))
    assert FunctionGuards(fn).of(call) == ("a", "self.sampler is not None")


def test_rank_projection_and_size_words():
    assert G.rank_projection(G.f_and(G.LAST, ("a", "x"))) == G.f_and(G.LAST, G.f_not(G.FIRST))
    assert G.rank_projection(("a", "x")) == G.TRUE
    assert G.rank_projection(G.f_and(G.LAST, G.FIRST)) == G.FALSE
    assert G.mentions_pp_size("self.pp_size > 2") and not G.mentions_pp_size("self.tp_rank > 0")


def _example_rule():
    """The example rule of docs/semantic-model.md, loaded from the document itself."""
    from helpers import REPO

    text = (REPO / "docs" / "semantic-model.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 100
    scope: dict = {}
    exec(compile(code, "semantic-model.md", "exec"), scope)
    return scope["RULE"]


def test_the_documented_example_rule_reads_guards():
    from pp_attr_lint.index.spec import LineIndex

    src = textwrap.dedent("""
        class Model:
            def forward(self, x):
                if get_pp_group().is_last_rank:
                    self.compute_logits(x)
                self.compute_logits(x)
                return get_pp_group().is_first_rank and self.embed_input_ids(x)

            def compute_logits(self, x):
                return self.compute_logits(x) if x else self.lm_head(x)
        """)
    got = _example_rule().collect(ast.parse(src), LineIndex(src))
    assert [(r[1], r[2], r[5]) for r in got] == [("forward", "compute_logits", 6)]
    assert got[0][3] == G.TRUE and got[0][4]["@last"] is False


def test_a_flag_set_after_an_assert_keeps_its_formula():
    """A local flag assigned in the function's own body after an ``assert`` (or an early
    ``return``) is read as its test; one assigned in a branch is opaque (SGLang 0.5.23
    bailing_moe_v3.py: ``assert ...`` then ``keep_word_embeddings = pp.is_first_rank or (tie and
    pp.is_last_rank)``)."""
    guard, _ = _guard("""
        def f(self, s):
            assert s.ok
            keep = get_pp_group().is_first_rank
            if keep:
                self.work(s)
        """)
    assert guard == G.f_and(("a", "ok"), G.FIRST)
    guard, _ = _guard("""
        def f(self, s):
            if s.ok:
                keep = get_pp_group().is_first_rank
            if keep:
                self.work(s)
        """)
    assert guard == ("a", "keep@4")


def test_an_if_test_is_read_with_the_flags_known_there_and_decides_its_statements():
    """``test_formula`` reads an ``if`` test through the local flags as they stand at the ``if``
    (a flag reassigned before it is opaque); ``deciding_tests`` gives the enclosing branches and
    the earlier ``if`` whose other branch exits, each with the truth value the statement needs."""
    fn = ast.parse(textwrap.dedent("""
        def f(self, s):
            first = get_pp_group().is_first_rank
            if first:
                return None
            other = get_pp_group().is_last_rank
            other = s is None
            if other:
                self.work(s)
            else:
                self.rest(s)
            self.tail(s)
        """)).body[0]
    g = FunctionGuards(fn)
    ifs = [n for n in fn.body if isinstance(n, ast.If)]
    assert g.test_formula(ifs[0]) == G.FIRST
    assert g.test_formula(ifs[1]) == ("a", "other@7")
    work, rest = ifs[1].body[0], ifs[1].orelse[0]
    assert g.deciding_tests(work) == ((ifs[0], False), (ifs[1], True))
    assert g.deciding_tests(rest) == ((ifs[0], False), (ifs[1], False))
    assert g.deciding_tests(fn.body[-1]) == ((ifs[0], False),)
    assert g.deciding_tests(fn.body[0]) == ()


def test_a_lambda_body_and_a_stored_nested_function_are_deferred():
    """``FlowWalker.deferred`` names the lambda whose body is walked (it runs when called, if at
    all); in the function's own statements it is ``None``; ``walk_deferred`` names its node."""
    from pp_attr_lint.semantic.flow import FlowWalker

    src = """
        def __init__(self):
            self.a = self.model.x
            self.lazy = LazyValue(lambda: self.model.y)
            def later():
                return self.model.z
            self.later = later
        """
    fn = ast.parse(textwrap.dedent(src)).body[0]

    class Reads(FlowWalker):
        def __init__(self):
            super().__init__(None, fn, "C")
            self.seen = {}

        def attribute(self, node, guard, guarded, protected, loops):
            d = self.deferred()
            self.seen[ast.unparse(node)] = None if d is None else (type(d).__name__, d.lineno)

    w = Reads()
    w.walk()
    assert w.seen["self.model.x"] is None
    assert w.seen["self.model.y"] == ("Lambda", 4)
    assert "self.model.z" not in w.seen  # a nested function is not walked with the body
    nested = w.nested["later"][0]
    w.walk_deferred(nested, nested.body, G.TRUE, frozenset(), False, {})
    assert w.seen["self.model.z"] == ("FunctionDef", 5) and w.deferred() is None


def test_a_statement_in_a_try_or_with_block_may_be_caught():
    """What a `try` (its body, handlers, `else`, `finally`) or a `with` holds may have what it
    raises caught or suppressed; a statement beside them, or in an `if`, may not."""
    fn = ast.parse(textwrap.dedent("""
        def f(self, ok):
            try:
                assert ok
            except AssertionError:
                assert not ok
            with self.lock:
                if ok:
                    assert self.a
            if ok:
                assert self.b
            def inner():
                assert self.c
        """)).body[0]
    fg = FunctionGuards(fn)
    asserts = [n for n in ast.walk(fn) if isinstance(n, ast.Assert)]
    got = {ast.unparse(a.test): fg.in_try_or_with(a) for a in asserts}
    assert got == {"ok": True, "not ok": True, "self.a": True, "self.b": False, "self.c": None}

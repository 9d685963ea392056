"""What a boolean helper's ``return``s imply about its result (``flow.truthy_only_when``): the
formulas take a helper's call (or an attribute only such calls assign) as implying it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from pp_attr_lint.semantic import calls, flow, guards
from pp_attr_lint.index.spec import LineIndex


def _need(src: str):
    src = textwrap.dedent(src)
    fn = ast.parse(src).body[0]
    return flow.truthy_only_when(fn, LineIndex(src))


def test_an_early_false_return_is_implied():
    need = _need("""
        def should_tie(config, quant_config):
            if not getattr(config, "tie_word_embeddings", False):
                return False
            if quant_config is None:
                return True
            return not quant_config.head_bits
    """)
    assert guards.satisfying(guards.f_and(need, guards.f_not(("a", "tie_word_embeddings")))) is None
    assert guards.satisfying(need) is not None


def test_names_local_to_the_helper_are_renamed():
    need = _need("""
        def h(flag, config):
            if not flag:
                return False
            return config.tied
    """)
    assert guards.atoms(need) == {"h@flag", "tied"}


@pytest.mark.parametrize("src", [
    # a return the walk does not see (inside a match) could return True anywhere
    """
    def h(config, mode):
        match mode:
            case 1:
                return True
        if not config.tie_word_embeddings:
            return False
        return True
    """,
    # a generator object is always truthy
    """
    def h(config):
        if not config.tie_word_embeddings:
            return False
        yield 1
    """,
    # it returns True whatever holds
    """
    def h(config):
        if config.tie_word_embeddings:
            config.x = 1
        return True
    """,
])
def test_no_condition_when_it_cannot_be_told(src):
    assert _need(src) is None


def test_the_value_is_read_where_it_is_returned():
    need = _need("""
        def h(config, ok):
            if ok:
                return ok
            ok = config.tie_word_embeddings
            return False
    """)
    # `return ok` returns the parameter, not the later `config.tie_word_embeddings`
    assert guards.satisfying(guards.f_and(need, guards.f_not(("a", "tie_word_embeddings")))) is not None


@pytest.mark.parametrize("call, ok", [
    ("x.sample(h, b)", True),
    ("x.sample(h, batch=b)", True),
    ("x.sample(h)", False),  # `batch` is required
    ("x.sample(h, b, c, d)", False),  # one argument too many
    ("x.sample(range(4), k=2)", False),  # no parameter `k`
    ("x.sample(*args)", True),  # cannot be told
    ("x.sample(num_requests=1, **kw)", False),  # `num_requests` is no parameter, whatever `kw` holds
])
def test_which_calls_can_bind_to_a_method(call, ok):
    fn = ast.parse("def sample(self, hidden_states, batch, grammar=None):\n    pass\n").body[0]
    assert calls.accepts(fn, ast.parse(call, mode="eval").body) is ok

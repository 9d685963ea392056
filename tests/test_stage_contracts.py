"""The public API that PPA403 and PPA201 ask: stage tests (``semantic.stage``), call sites with
their guards (``semantic.callsites``), the KV pool's layer-id contract (``engines.layer_ids``)
and the ``SupportsPP`` hook contract (``engines.pp_hook``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from pp_attr_lint.engines import layer_ids, pp_hook
from pp_attr_lint.index.spec import LineIndex
from pp_attr_lint.kinds.skipped_init import enclosing_class
from pp_attr_lint.semantic import guards as G
from pp_attr_lint.semantic.callsites import argument, call_sites
from pp_attr_lint.semantic.stage import FIRST, LATER, UNKNOWN, opaque, stage_atom, stage_class


@pytest.mark.parametrize("test, want", [
    ("self.start_layer == 0", FIRST),
    ("0 == self.start_layer", FIRST),
    ("self.start_layer < 1", FIRST),
    ("not pp_rank", FIRST),
    ("get_pp_group().is_first_rank", FIRST),
    ("self.start_layer > 0", LATER),
    ("self.start_layer", LATER),
    ("not get_pp_group().is_first_rank", LATER),
    ("get_pp_group().is_last_rank", LATER),
    ("self.start_layer == 0 and tie", FIRST),
    ("pp_rank == 0 or self.start_layer == 0", FIRST),
    ("pp_rank == 0 or tie", UNKNOWN),
    ("pp_rank == 2", UNKNOWN),
    ("self.pipeline_stage_id", UNKNOWN),
    ("config.tie_word_embeddings", None),
])
def test_what_a_stage_test_says(test, want):
    assert stage_class(ast.parse(test, mode="eval").body) == want


POOL_USER = """
class Backend:
    def __init__(self, runner):
        self.first = runner.pool.get_value_buffer(0)
        if runner.start_layer == 0:
            self.only_first = runner.pool.get_value_buffer(0)
        if runner.pp_rank == 2:
            self.third = runner.pool.get_value_buffer(5)

        def inner():
            return runner.pool.get_value_buffer(layer_id=1)
        self.later = inner
"""


def test_call_sites_carry_their_stage_guards():
    tree = ast.parse(POOL_USER)
    sites = call_sites(tree, frozenset({"get_value_buffer"}), stage_atom)
    assert [(s.call.lineno, s.cls.name, s.fn.name) for s in sites] == [
        (4, "Backend", "__init__"), (6, "Backend", "__init__"), (8, "Backend", "__init__"), (11, "Backend", "inner")]
    plain, first, third, nested = (s.guard for s in sites)
    assert plain == G.TRUE and nested == G.TRUE
    assert G.implies(first, G.FIRST) and not opaque(first)
    assert opaque(third) and not G.implies(third, G.FIRST)
    # what each call passes for the accessor's `layer_id` (position 0 after `self`)
    assert [ast.unparse(argument(s.call, 0, "layer_id")) for s in sites] == ["0", "0", "5", "1"]


def test_call_sites_say_whether_a_handler_catches_an_attribute_error():
    tree = ast.parse(textwrap.dedent("""
        def f(m):
            m.get_value_buffer(0)
            try:
                m.get_value_buffer(1)
            except AttributeError:
                pass
            with contextlib.suppress(AttributeError):
                m.get_value_buffer(2)
            try:
                m.get_value_buffer(3)
            except KeyError:
                pass
        """))
    sites = call_sites(tree, frozenset({"get_value_buffer"}))
    assert [(s.call.args[0].value, s.cls, s.catches_attribute_error) for s in sites] == [
        (0, None, False), (1, None, True), (2, None, True), (3, None, False)]


def test_argument_through_star_args_or_not_passed():
    call = ast.parse("pool.get(*ids)", mode="eval").body
    assert argument(call, 0, "layer_id") is ...
    call = ast.parse("pool.get(x=1)", mode="eval").body
    assert argument(call, 0, "layer_id") is None


POOL = """
class Pool:
    def __init__(self, layer_num, start_layer=0):
        self.start_layer = start_layer
        self.v_buffer = [None] * layer_num

    def get_value_buffer(self, layer_id):
        return self.v_buffer[layer_id - self.start_layer]

    def get_kv(self, layer_id):
        return self.get_value_buffer(layer_id)

    def get_local(self, layer_id):
        local = layer_id - self.start_layer
        return self.v_buffer[local]


class WholeModel:
    def __init__(self):
        self.start_layer = 0

    def get(self, layer_id):
        return self.buf[layer_id - self.start_layer]
"""


def test_accessors_of_the_layer_id_contract():
    text = textwrap.dedent(POOL)
    assert layer_ids.may_hold_accessor(text) and not layer_ids.may_hold_accessor("x = self.start_layer\n")
    got = {a[1]: a for a in layer_ids.accessors(ast.parse(text), LineIndex(text))}
    assert sorted(got) == ["get_kv", "get_local", "get_value_buffer"]  # none of WholeModel: start_layer is 0
    assert got["get_value_buffer"][9] is None and got["get_value_buffer"][10] == "self.v_buffer[layer_id - self.start_layer]"
    assert got["get_kv"][9] == "get_value_buffer" and got["get_kv"][5] == 8  # reported at the index it leads to
    assert got["get_local"][10] == "self.v_buffer[local]` with `local = layer_id - self.start_layer"
    assert [layer_ids.layer_id_constant(ast.parse(s, mode="eval").body) for s in ("0", "-1", "True", "n")] == [
        True, False, False, False]


@pytest.mark.parametrize("src, want", [
    (b"class M(nn.Module, SupportsPP):\n    def forward(self):\n        pass\n", True),
    (b"class M(nn.Module, SupportsPP):\n    def make_empty_intermediate_tensors(self, *a):\n        pass\n", False),
    (b"class M(nn.Module, SupportsPP):\n    def __init__(self):\n"
     b"        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors\n", False),
    (b"class M(nn.Module, SupportsPP):\n    make_empty_intermediate_tensors = None\n", False),
    (b"ModelRegistry.register_model('A', 'pkg.m:A')\n", True),
    (b"class M(nn.Module):\n    pass\n", False),
])
def test_a_class_that_lists_the_protocol_without_the_hook(src, want):
    assert pp_hook.lists_without_hook(src) is want


@pytest.mark.parametrize("src, want", [
    (b"class M(LlamaForCausalLM):\n    def __init__(self, c):\n        self.c = c\n", True),
    (b"class M(nn.Module):\n    def __init__(self, c):\n        self.c = c\n", False),
    (b"class M(LlamaForCausalLM):\n    def __init__(self, c):\n        super().__init__()\n", False),
])
def test_an_init_that_calls_no_base_init(src, want):
    assert pp_hook.init_calls_no_base(src, enclosing_class) is want


def test_how_the_protocol_itself_provides_the_hook():
    tree = ast.parse(textwrap.dedent("""
        class SupportsPP:
            def a(self):
                '''doc'''
                ...
            def b(self):
                raise NotImplementedError
            def c(self):
                return make()
        """))
    assert [pp_hook.stub_kind(f) for f in tree.body[0].body] == ["stub", "stub", "impl"]

"""The semantic model's stage boundary (:mod:`pp_attr_lint.semantic.boundary`, with the value flow of
:mod:`pp_attr_lint.semantic.dataflow`) and weight loader (:mod:`pp_attr_lint.semantic.loader`),
asked directly through their public API on small models: what PPA401 and PPA402 query."""

from __future__ import annotations

import ast
import textwrap

from pp_attr_lint.index.spec import LineIndex
from pp_attr_lint.semantic import boundary, dataflow, loader

OPAQUE = 10  # the place of `opaque` in a lookup record of parameter_lookups (`via` after it)

MODEL = textwrap.dedent('''
    class Model(nn.Module):
        def __init__(self, config):
            self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(config))
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["h", "residual"], 8)

        def forward(self, h, intermediate_tensors=None):
            if get_pp_group().is_first_rank:
                residual = None
            else:
                h = intermediate_tensors["h"]
                residual = intermediate_tensors["extra"]
            for layer in self.layers[self.start_layer:self.end_layer]:
                h = layer(h)
            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"h": h, "residual": residual})
            return h
''')


def _parse(source: str):
    tree = ast.parse(source)
    return tree, LineIndex(source)


def test_class_keys_reads_what_is_allocated_sent_and_read():
    tree, lines = _parse(MODEL)
    got = boundary.class_keys(tree.body[0], lines)
    assert [k for k, *_ in got["alloc"]] == ["h", "residual"]
    assert sorted(k for k, *_ in got["sent"]) == ["h", "residual"] and got["sent_known"]
    assert sorted(k for k, *_ in got["reads"]) == ["extra", "h"] and got["reads_known"]
    extra = next(p for k, *p in got["reads"] if k == "extra")
    assert extra[0] == MODEL.splitlines().index('            residual = intermediate_tensors["extra"]') + 1


def test_none_sends_follows_the_first_rank_only_where_the_value_is_none_there():
    tree, lines = _parse(MODEL)
    fwd = tree.body[0].body[1]
    got = boundary.none_sends(fwd, lines)
    # on the first rank `residual` is the literal None of its `if`; on a middle rank it is read
    assert [(k, scenario, sources) for k, scenario, sources, *_ in got] == [
        ("residual", "first", [["none", fwd.body[0].body[0].lineno]])]


def test_value_flow_joins_branches_a_scenario_does_not_decide():
    fn = ast.parse("def f(h, c):\n    x = None\n    if c.flag:\n        x = h\n    return x\n").body[0]
    flow = dataflow.ValueFlow(dict(dataflow.SCENARIOS)["first"])
    state = flow.block(fn.body[:2], {"h": dataflow.OTHER, "c": dataflow.OTHER})
    assert state["x"] == frozenset({("none", 2), "other"})
    assert dataflow.decided(ast.parse("get_pp_group().is_first_rank", mode="eval").body, {"@first": True}) is True
    assert dataflow.decided(ast.parse("c.flag", mode="eval").body, {"@first": True}) is None


def test_the_ppa401_prefilter_says_no_only_for_keys_that_agree():
    from pp_attr_lint.rule_registry import all_rules

    rule = next(r for r in all_rules() if r.code == "PPA401")
    agree = (b'x = make_empty_intermediate_tensors_factory(["h"], 8)\n'
             b'return IntermediateTensors(t)\ny = intermediate_tensors["h"]\n')
    assert not rule.prefilter(agree)
    assert rule.prefilter(agree.replace(b'(["h"]', b'(["g"]'))  # reads a key not allocated
    assert rule.prefilter(agree + b'IntermediateTensors({"h": None})\n')  # a literal send


LOADER = textwrap.dedent('''
    class Model(nn.Module):
        def __init__(self, config):
            self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(config))

        def load_weights(self, weights):
            params_dict = dict(self.named_parameters())
            for name, w in weights:
                if is_pp_missing_parameter(name, self):
                    continue
                params_dict[name].copy_(w)
            for key, w in weights:
                self._load_one(params_dict, key, w)

        def _load_one(self, params, name, w):
            params[name].copy_(w)
''')


def test_parameter_lookups_finds_the_lookup_no_skip_covers():
    tree, lines = _parse(LOADER)
    got = loader.parameter_lookups(tree, lines)
    assert got["layered"] == {"Model": ["make_layers"]}
    # the skipped lookup in load_weights is covered; the helper's, handed the dict, is not
    row = LOADER.splitlines().index("        params[name].copy_(w)") + 1
    assert [(cls, line, d, key, fn) for cls, line, _c, _el, _ec, d, key, fn, *_rest in got["lookups"]] == [
        ("Model", row, "params", "name", "_load_one")]


def test_a_function_that_decides_on_the_rank_itself_is_marked_opaque():
    """Its lookups carry where it decides on the rank (the rule lists them as not judged)."""
    source = LOADER.replace("        params[name].copy_(w)\n",
                            "        if name.startswith(self.start_layer):\n            params[name].copy_(w)\n")
    tree, lines = _parse(source)
    got = loader.parameter_lookups(tree, lines)["lookups"]
    assert got and all(rec[OPAQUE] and rec[OPAQUE][0] == "start_layer" for rec in got), got
    assert loader.decides_on_rank("start_layer") and loader.decides_on_rank("pp_missing_layer_names")
    assert not loader.decides_on_rank(loader.SKIP_CALL)


def _returned(source: str):
    from pp_attr_lint.semantic.key_helpers import returned_keys_tested

    tree, lines = _parse(textwrap.dedent(source))
    fn = tree.body[0]
    return returned_keys_tested(fn, {"params_dict"}, lines)[:2]


def test_a_helper_tests_the_keys_it_returns_only_on_every_path():
    """vLLM's ``maybe_remap_kv_scale_name`` shape: the remapped name is tested, the rest is
    returned untested; a loop that tests each candidate, a flag and ``while`` tests are read."""
    assert _returned('''
        def remap(name, params_dict):
            if name.endswith(".kv_scale"):
                remapped_name = name.replace(".kv_scale", ".attn.k_scale")
                if remapped_name not in params_dict:
                    return None
                return remapped_name
            return name
        ''') == ("untested", 8)
    assert _returned('''
        def remap(name, params_dict):
            found = name in params_dict
            if found:
                return name
            for suffix in (".k_scale", ".v_scale"):
                remapped_name = name.replace(suffix, ".attn" + suffix)
                if remapped_name not in params_dict:
                    continue
                return remapped_name
            return None
        ''')[0] == "tests"
    assert _returned('''
        def remap(name, params_dict):
            return name.replace("a", "b")
        ''') == ("untested", 3)


def test_a_helper_whose_returns_are_not_read_is_unread():
    """A name rebound after its test (in a loop around the return), a value picked by a test, a
    generator, a rebound dict: the verdict is ``unread``, never ``tests`` or ``untested``."""
    assert _returned('''
        def remap(name, params_dict):
            if name not in params_dict:
                return None
            while True:
                if name.endswith("x"):
                    return name
                name = name + "x"
        ''') == ("unread", 7)
    assert _returned('''
        def remap(name, params_dict):
            if name not in params_dict:
                return None
            name = name.lower()
            return name
        ''') == ("unread", 6)
    assert _returned('''
        def remap(name, params_dict):
            return name if name in params_dict else None
        ''') == ("unread", 3)
    assert _returned('''
        def remap(name, params_dict):
            yield name
        ''')[0] == "unread"
    assert _returned('''
        def remap(name, params_dict):
            params_dict = {}
            return None
        ''')[0] == "unread"


RANGE = "(layer_id < self.model.start_layer or layer_id >= self.model.end_layer)"


def test_a_range_skip_is_read_by_what_its_test_implies():
    """``guards.layer_range_skip``: a skip true for every index outside ``[start_layer,
    end_layer)`` covers; one that needs another test, or skips one end only, does not."""
    from pp_attr_lint.semantic.guards import layer_range_skip

    def read(test):
        return layer_range_skip(ast.parse(test, mode="eval").body)

    assert read(f"layer_id is not None and {RANGE}") == ("layer_id", ())
    assert read("layer_id is not None and not self.start_layer <= layer_id < self.end_layer") == ("layer_id", ())
    assert read("self.model.end_layer <= layer_id or self.model.start_layer > layer_id") == ("layer_id", ())
    assert read(f'layer_id is not None and hasattr(self.model, "start_layer") and {RANGE}') == (
        "layer_id", (("self.model", "start_layer"),))
    assert read(f"layer_id is not None and not is_nextn and {RANGE}") is None  # another test it needs
    assert read("layer_id is not None and layer_id < self.model.start_layer") is None  # one end only
    assert read(f"{RANGE.replace(' or ', ' and ')}") is None  # never true
    assert read("i < self.start_layer or j >= self.end_layer") is None  # two indices


def test_a_range_skip_covers_the_names_its_index_comes_from():
    source = textwrap.dedent(f'''
        class Model(nn.Module):
            def __init__(self, config):
                self.model = Inner()
                self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer(config))

            def load_weights(self, weights):
                params_dict = dict(self.named_parameters())
                for name, w in weights:
                    layer_id = get_layer_id(name)
                    if layer_id is not None and {RANGE}:
                        continue
                    params_dict[name].copy_(w)
    ''')
    tree, lines = _parse(source)
    assert loader.parameter_lookups(tree, lines)["lookups"] == []
    # with SGLang's `hasattr`, the lookup is covered only if the receiver has the attribute,
    # which `check` decides: the record names that condition
    sglang = source.replace("layer_id is not None and", 'layer_id is not None and hasattr(self.model, "start_layer") and')
    tree, lines = _parse(sglang)
    (rec,) = loader.parameter_lookups(tree, lines)["lookups"]
    assert rec[OPAQUE] is None and rec[OPAQUE + 1] == [[["hasattr", "self.model", ["start_layer", 7], 11]]]
    # a test on another name covers nothing
    tree, lines = _parse(source.replace("get_layer_id(name)", "get_layer_id(other)"))
    assert len(loader.parameter_lookups(tree, lines)["lookups"]) == 1

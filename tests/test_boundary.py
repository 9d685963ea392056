"""pp_attr_lint.semantic.boundary on small models: the layer loop and what it carries, what a
rank sends and reads, and what the vLLM runner allocates for it."""

from __future__ import annotations

import ast
import textwrap

from pp_attr_lint.semantic import boundary as B

MODEL = textwrap.dedent('''
    class Model:
        def __init__(self, config):
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                ["hidden_states", "residual"], config.hidden_size)

        def forward(self, positions, intermediate_tensors=None):
            if get_pp_group().is_first_rank:
                hidden_states, residual = positions, None
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                residual = intermediate_tensors.tensors.get("residual")
            topk = None
            for i in range(self.start_layer, self.end_layer):
                hidden_states, residual, topk = self.layers[i](hidden_states, residual, prev=topk)
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})


    class Hooked:
        def make_empty_intermediate_tensors(self, batch_size, dtype, device):
            return IntermediateTensors({"hidden_states": None})


    class Forwarded:
        def __init__(self):
            self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors
''')


def _classes():
    tree = ast.parse(MODEL)
    lines = MODEL.splitlines(True)
    return {c.name: c for c in tree.body}, (lambda n: "".join(lines[n.lineno - 1:n.end_lineno]))


def test_the_layer_loop_and_what_it_carries():
    classes, text = _classes()
    fwd = classes["Model"].body[1]
    loops = B.layer_loops(fwd, text)
    assert [lp.lineno for lp in loops] == [14]
    assert B.carried(loops[0]) == [("hidden_states", 0), ("residual", 1), ("topk", "prev")]


def test_what_a_rank_sends_and_reads():
    classes, _text = _classes()
    fwd = classes["Model"].body[1]
    assert [B.sent_keys(c) for c in B.payload_calls(fwd)] == [("hidden_states", "residual")]
    assert [(k, hard, p) for k, _n, hard, p in B.received_reads(fwd)] == [
        ("hidden_states", True, "intermediate_tensors"), ("residual", False, "intermediate_tensors")]


def test_what_the_runner_allocates():
    classes, _text = _classes()
    assert B.allocated_keys(classes["Model"]) == ("hidden_states", "residual")
    assert B.allocated_keys(classes["Hooked"]) == ("hidden_states",)
    assert B.allocated_keys(classes["Forwarded"]) is None

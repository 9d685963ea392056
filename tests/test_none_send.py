"""PPA401's `None` sends: only a value that is `None` on every path of a rank is reported; a path
through `try`, a `break` or an unknown rank test that may give another value keeps it silent."""

from __future__ import annotations

import textwrap

import pytest

from helpers import FIXTURES, check_json

STUBS = FIXTURES / "ppstub"

HEAD = '''
import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers
from vllm.sequence import IntermediateTensors


class NoneLayer(nn.Module):
    def forward(self, h, residual):
        return h, None


class Model(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: NoneLayer())
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["h", "residual"], 8)

    def forward(self, h, intermediate_tensors=None):
'''

BODIES = {
    "layers": ("residual = None\nfor layer in self.layers[self.start_layer:self.end_layer]:\n"
               "    h, residual = layer(h, residual)\n", True),
    "received_on_later_ranks": ("if get_pp_group().is_first_rank:\n    residual = None\nelse:\n"
                                "    residual = intermediate_tensors['residual']\n", True),
    "unknown_test": ("residual = None\nif self.config.flag:\n    residual = h\n", False),
    "try": ("residual = None\ntry:\n    residual = h\nexcept ValueError:\n    pass\n", False),
    "break": ("residual = None\nfor x in range(3):\n    residual = h\n    if x:\n        break\n"
              "    residual = None\n", False),
    "continue": ("for x in range(3):\n    residual = h\n    if x:\n        continue\n    residual = None\n", False),
    # None on the ranks after the first only: a middle rank (pipeline_parallel_size >= 3) sends it
    "only_on_later_ranks": ("residual = h\nif not get_pp_group().is_first_rank:\n    residual = None\n", "middle"),
    "walrus": ("residual = None\nif (residual := h) is not None:\n    pass\n", False),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_none_send(tmp_path, name):
    body, fires = BODIES[name]
    src = HEAD + textwrap.indent(body + "if not get_pp_group().is_last_rank:\n"
                                 "    return IntermediateTensors({'h': h, 'residual': residual})\nreturn h\n", " " * 8)
    (tmp_path / "m.py").write_text(src)
    _, found = check_json(tmp_path, "--select", "PPA401", "--src", str(STUBS))
    assert [f["code"] for f in found] == (["PPA401"] if fires else []), found
    if fires:
        assert ("middle pipeline-parallel rank" if fires == "middle" else "rank 1") in found[0]["message"]

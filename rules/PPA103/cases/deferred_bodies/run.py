"""Runtime oracle probes (tests/oracle.py): each model is built; no probe calls what the lazy one
stores (its lambda and nested function), so their bodies never run; the last two's lazy maps are
read, which runs their lambdas."""

from types import SimpleNamespace

from pkg.model import EagerForCausalLM, LazyForCausalLM, ReadForCausalLM, SubReadForCausalLM

CONFIG = SimpleNamespace()


def build_lazy():
    LazyForCausalLM(CONFIG)


def build_eager():
    EagerForCausalLM(CONFIG)


def read_lazy_map():
    ReadForCausalLM(CONFIG).routed_experts_weights_of_layer()


def read_inherited_reader():
    SubReadForCausalLM(CONFIG).routed_experts_weights_of_layer()


PROBES = [build_lazy, build_eager, read_lazy_map, read_inherited_reader]

"""Runtime oracle probes (tests/oracle.py): the runner sizes each rank's KV pool."""

from types import SimpleNamespace

from pkg.model import FixedForCausalLM, OPTForCausalLM
from pkg.runner import build_kv_pool

CONFIG = SimpleNamespace()
# the property that raises makes the runner size the pool for every layer
BLAME = {"pkg/model.py:34": "pkg/runner.py:14", "pkg/model.py:39": "pkg/runner.py:14"}


def opt_pool():
    build_kv_pool(OPTForCausalLM(CONFIG))


def fixed_pool():
    build_kv_pool(FixedForCausalLM(CONFIG))


PROBES = [opt_pool, fixed_pool]

"""Runtime oracle probes (tests/oracle.py): ranks > 0 allocate, receive and read."""

from types import SimpleNamespace

from pkg.model import AgreeingModel, UnallocatedKeyModel, UnsentKeyModel
from pkg.runner import execute

CONFIG = SimpleNamespace()
# the allocated key that is never sent makes the runner's copy of every allocated key fail; the key
# sent and not allocated is the one the next rank then fails to read
BLAME = {"pkg/model.py:23": "pkg/runner.py:27", "pkg/model.py:52": "pkg/model.py:49"}


def unsent():
    execute(UnsentKeyModel, CONFIG)


def unallocated():
    execute(UnallocatedKeyModel, CONFIG)


def agreeing():
    execute(AgreeingModel, CONFIG)


PROBES = [unsent, unallocated, agreeing]

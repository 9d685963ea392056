"""Runtime oracle probes (tests/oracle.py): the runner samples tokens and profiles the model on
every rank."""

import random
from types import SimpleNamespace

from pkg.model import ForCausalLM
from pkg.runner import Runner

CONFIG = SimpleNamespace()


def sample_tokens():
    Runner(ForCausalLM(CONFIG)).sample_tokens([0.0], None)


def profile():
    runner = Runner(ForCausalLM(CONFIG))
    runner.draw(random.Random(0))
    runner.profile()


PROBES = [sample_tokens, profile]

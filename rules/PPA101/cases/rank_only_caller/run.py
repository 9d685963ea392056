"""Runtime oracle probes (tests/oracle.py): the runner samples tokens and profiles the model on
every rank."""

import random
from types import SimpleNamespace

from pkg.model import ForCausalLM
from pkg.runner import ProfilingRunner, Runner

CONFIG = SimpleNamespace()


def sample_tokens():
    Runner(ForCausalLM(CONFIG)).sample_tokens([0.0], None)


def profile():
    runner = Runner(ForCausalLM(CONFIG))
    runner.draw(random.Random(0))
    runner.profile()


def profile_gather():
    ProfilingRunner(ForCausalLM(CONFIG)).profile_gather([0.0])


PROBES = [sample_tokens, profile, profile_gather]

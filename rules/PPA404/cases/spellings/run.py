"""Runtime oracle probes (tests/oracle.py): every spelling of the sampling step on every rank."""

from pkg.sampler import Sampler


def sample_if():
    Sampler().sample_if([0])


def sample_conditional():
    Sampler().sample_conditional([0])


def sample_and():
    Sampler().sample_and([0])


def sample_or_not():
    Sampler().sample_or_not([0])


def sample_early_return():
    Sampler().sample_early_return([0])


def sample_unguarded():
    Sampler().sample_unguarded([0])


PROBES = [sample_if, sample_conditional, sample_and, sample_or_not, sample_early_return, sample_unguarded]

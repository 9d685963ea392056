"""Runtime oracle probes (tests/oracle.py): four steps on each rank; a rank that collected events
must have reported them (the bug fails silently: the probe makes the loss visible)."""

from pkg.runner import EveryRankCounter, FixedProfiledRunner, ProfiledRunner

BLAME = {"pkg/runner.py:26": "run.py:13"}


def _check(runner):
    for _ in range(4):
        runner.execute_model([1.0, 2.0])
    collected = runner._steps
    assert not collected or runner.reports, f"{collected} steps collected, never reported"


def profile():
    _check(ProfiledRunner())


def profile_fixed():
    _check(FixedProfiledRunner())


def counter():
    c = EveryRankCounter()
    c.step([1.0])
    c.step([1.0, 2.0])


PROBES = [profile, profile_fixed, counter]

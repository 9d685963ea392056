"""Runtime oracle probes (tests/oracle.py): a step with nothing scheduled, then a normal step."""

from pkg.model_runner import ModelRunner


def empty_step():
    runner = ModelRunner(use_async_scheduling=True)
    runner.execute_model(0)
    runner.sample_tokens()


def normal_step():
    runner = ModelRunner(use_async_scheduling=True)
    runner.execute_model(4)
    runner.sample_tokens()


def fixed_steps():
    for n in (0, 4):
        runner = ModelRunner(use_async_scheduling=True)
        runner.execute_model(n)
        runner.sample_tokens_fixed()


PROBES = [empty_step, normal_step, fixed_steps]

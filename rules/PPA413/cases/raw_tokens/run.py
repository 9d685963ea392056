"""Runtime oracle probes (tests/oracle.py): one step of the runner on each rank, with the tokens
every rank has and what the rank before it sent."""

from rpkg.models.deepv.model import DeepVForConditionalGeneration
from rpkg.models.plain import PlainForCausalLM
from rpkg.worker.runner import FirstRankOnly, FixedGPUModelRunner, GPUModelRunner

# the drop makes the model raise on a later stage
BLAME = {"rpkg/worker/runner.py:16": "rpkg/models/deepv/model.py:8"}


def _step(runner_cls, model_cls=DeepVForConditionalGeneration):
    runner_cls(model_cls()).execute_model([1, 2], [0, 1], intermediate_tensors=[0.5, 0.5])


def runner():
    _step(GPUModelRunner)


def runner_fixed():
    _step(FixedGPUModelRunner)


def runner_fixed_plain():
    _step(FixedGPUModelRunner, PlainForCausalLM)


def first_rank_only():
    FirstRankOnly().step([1, 2])


PROBES = [runner, runner_fixed, runner_fixed_plain, first_rank_only]

"""Runtime oracle probes (tests/oracle.py): the scheduler builds the worker around the model the
server was started with and runs a generation batch on every rank."""

from mysgl.srt.managers.scheduler import make_worker
from mysgl.srt.models.plain import PlainForCausalLM
from mysgl.srt.models.staged import StagedForCausalLM


def unsupported_model():
    make_worker(PlainForCausalLM()).forward_batch_generation([1, 2])


def staged_model():
    make_worker(StagedForCausalLM()).forward_batch_generation([1, 2])


PROBES = [unsupported_model, staged_model]

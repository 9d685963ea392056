from vllm.distributed import get_pp_group

from mysgl.srt.managers.tp_worker import TpModelWorker
from mysgl.srt.model_executor.model_runner import ModelRunner


def make_worker(model):
    return TpModelWorker(ModelRunner(model, pp_size=get_pp_group().world_size))

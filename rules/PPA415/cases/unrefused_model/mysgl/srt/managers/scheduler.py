from mysgl.srt.managers.tp_worker import TpModelWorker
from mysgl.srt.model_executor.model_runner import ModelRunner


def make_worker(model):
    return TpModelWorker(ModelRunner(model))

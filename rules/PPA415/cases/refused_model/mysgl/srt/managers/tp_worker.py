from vllm.distributed import get_pp_group

from mysgl.srt.model_executor.forward_batch_info import PPProxyTensors


class TpModelWorker:
    """Runs one batch on this rank (SGLang 0.4.6 tp_worker.py): the last rank samples from what
    the model returns; the others send on its `tensors`."""

    def __init__(self, model_runner):
        self.model_runner = model_runner
        self.pp_group = get_pp_group()

    def forward_batch_generation(self, batch):
        pp_proxy_tensors = None
        if not self.pp_group.is_first_rank:
            pp_proxy_tensors = PPProxyTensors({"hidden_states": [0.5, 0.5]})
        if self.pp_group.is_last_rank:
            logits_output, _ = self.model_runner.forward(batch, pp_proxy_tensors=pp_proxy_tensors)
            return logits_output, None
        else:
            pp_proxy_tensors, _ = self.model_runner.forward(batch, pp_proxy_tensors=pp_proxy_tensors)
            # ok: PPA415
            return pp_proxy_tensors.tensors, None

"""The V2 GPU model runner's inputs for one step (vllm/v1/worker/gpu/model_runner.py, paraphrased)."""
from vllm.distributed import get_pp_group

from rpkg.models.interfaces import requires_raw_input_tokens


class GPUModelRunner:
    def __init__(self, model):
        self.model = model
        self.is_first_pp_rank = get_pp_group().is_first_rank

    def execute_model(self, input_ids, positions, intermediate_tensors=None):
        model_inputs = {"input_ids": input_ids, "positions": positions, "intermediate_tensors": None}
        if not self.is_first_pp_rank:
            # ruleid: PPA413
            model_inputs["input_ids"] = None
            model_inputs["intermediate_tensors"] = intermediate_tensors
        return self.model.forward(**model_inputs)


class FixedGPUModelRunner(GPUModelRunner):
    """vLLM 0.33.0 / vllm-backport PR 76: the flag is asked on later stages too."""

    def execute_model(self, input_ids, positions, intermediate_tensors=None):
        model_inputs = {"input_ids": input_ids, "positions": positions, "intermediate_tensors": None}
        if not self.is_first_pp_rank:
            if not requires_raw_input_tokens(self.model):
                # ok: PPA413
                model_inputs["input_ids"] = None
            model_inputs["intermediate_tensors"] = intermediate_tensors
        return self.model.forward(**model_inputs)


class FirstRankOnly:
    """Drops the ids where every rank runs the line: not a later-stage drop."""

    def step(self, input_ids):
        model_inputs = {"input_ids": input_ids}
        # ok: PPA413
        model_inputs["input_ids"] = None
        return model_inputs

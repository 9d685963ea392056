from vllm.distributed import get_pp_group
from vllm.sequence import IntermediateTensors


class OmniModelRunner:
    def __init__(self, model):
        self.model = model

    def _split_model_output(self, model_output):
        """Final output only: `(hidden_states, captures)` or bare hidden states."""
        if isinstance(model_output, tuple):
            return model_output
        if isinstance(model_output, list):
            return model_output, {}
        raise TypeError(f"Invalid hidden states type: {type(model_output).__name__}")

    def execute_model(self, input_ids, intermediate_tensors=None):
        model_output = self.model(input_ids, intermediate_tensors)
        # ruleid: PPA407
        hidden_states, captured = self._split_model_output(model_output)
        if not get_pp_group().is_last_rank:
            return hidden_states
        return {"hidden_states": hidden_states, "talker_inputs": captured}

    def execute_model_fixed(self, input_ids, intermediate_tensors=None):
        model_output = self.model(input_ids, intermediate_tensors)
        if not get_pp_group().is_last_rank:
            assert isinstance(model_output, IntermediateTensors)
            return model_output  # stays on the PP path; nothing to unpack yet
        # ok: PPA407
        hidden_states, captured = self._split_model_output(model_output)
        return {"hidden_states": hidden_states, "talker_inputs": captured}

    def dummy_run(self, input_ids):
        """Profiling on a single rank: the split is reached only without pipeline parallelism."""
        model_output = self.model(input_ids)
        if get_pp_group().world_size == 1:
            # ok: PPA407
            return self._split_model_output(model_output)
        return None

import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class ThinkerModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


class StagedForConditionalGeneration(nn.Module, SupportsPP):
    """A multi-stage model: the stage that does not run the language model gets a hook of no
    parameters, and the runner's call on a rank after the first raises TypeError there."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model_stage = config.model_stage
        self.thinker = ThinkerModel(config) if self.model_stage == "thinker" else None
        self.make_empty_intermediate_tensors = (
            self.thinker.make_empty_intermediate_tensors
            if self.model_stage == "thinker"
            # ruleid: PPA201
            else lambda: None
        )


class Token2WavForConditionalGeneration(nn.Module, SupportsPP):
    """A stage model whose hook is a local function of no parameters."""

    def __init__(self, config, prefix=""):
        super().__init__()

        # ruleid: PPA201
        def _empty_intermediate_tensors():
            return None

        self.make_empty_intermediate_tensors = _empty_intermediate_tensors


class TakesArgsForConditionalGeneration(nn.Module, SupportsPP):
    """The other stage's hook takes the runner's arguments."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model_stage = config.model_stage
        self.thinker = ThinkerModel(config) if self.model_stage == "thinker" else None
        self.make_empty_intermediate_tensors = (
            self.thinker.make_empty_intermediate_tensors
            if self.model_stage == "thinker"
            # ok: PPA201
            else lambda batch_size, dtype, device: {"hidden_states": [0.0] * batch_size}
        )


class ReplacedForConditionalGeneration(nn.Module, SupportsPP):
    """A placeholder replaced before the runner asks for it."""

    def __init__(self, config, prefix=""):
        super().__init__()
        # ok: PPA201
        self.make_empty_intermediate_tensors = lambda: None
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


class AnswersNoneForConditionalGeneration(nn.Module, SupportsPP):
    """The other stage's hook takes any arguments but answers `None`, as the protocol's stub."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model_stage = config.model_stage
        self.thinker = ThinkerModel(config) if self.model_stage == "thinker" else None
        self.make_empty_intermediate_tensors = (
            self.thinker.make_empty_intermediate_tensors
            if self.model_stage == "thinker"
            # ruleid: PPA201
            else lambda *args, **kwargs: None
        )

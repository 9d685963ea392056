import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class ThinkerModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


class ReturnsEarlyForConditionalGeneration(nn.Module, SupportsPP):
    """The thinker stage returns with its hook; every other stage goes on to a hook of no
    parameters, and the runner's call on a rank after the first raises TypeError there."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model_stage = config.model_stage
        if self.model_stage == "thinker":
            self.thinker = ThinkerModel(config)
            self.make_empty_intermediate_tensors = self.thinker.make_empty_intermediate_tensors
            return
        # ruleid: PPA201
        self.make_empty_intermediate_tensors = lambda: None


class ReturnsEarlyLocalForConditionalGeneration(nn.Module, SupportsPP):
    """The same with a local function defined after the early return."""

    def __init__(self, config, prefix=""):
        super().__init__()
        if config.model_stage == "thinker":
            self.make_empty_intermediate_tensors = ThinkerModel(config).make_empty_intermediate_tensors
            return

        # ruleid: PPA201
        def _no_buffers():
            return None

        self.make_empty_intermediate_tensors = _no_buffers


class FirstRankReturnsForConditionalGeneration(nn.Module, SupportsPP):
    """Every rank after the first returns with a hook that takes the runner's call; the lambda
    after the return is assigned on the first rank only, which the runner never asks."""

    def __init__(self, config, prefix=""):
        super().__init__()
        if not get_pp_group().is_first_rank:
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)
            return
        # ok: PPA201
        self.make_empty_intermediate_tensors = lambda: None


class InTryForConditionalGeneration(nn.Module, SupportsPP):
    """A local function of no parameters defined and assigned inside a `try`."""

    def __init__(self, config, prefix=""):
        super().__init__()
        try:
            self.thinker = ThinkerModel(config)

            # ruleid: PPA201
            def _empty_intermediate_tensors():
                return None

            self.make_empty_intermediate_tensors = _empty_intermediate_tensors
        finally:
            self.model_stage = config.model_stage


class ReplacedInTryElseForConditionalGeneration(nn.Module, SupportsPP):
    """A placeholder assigned inside a `try` and replaced by its `else` before the runner asks."""

    def __init__(self, config, prefix=""):
        super().__init__()
        try:
            self.thinker = ThinkerModel(config)
            # ok: PPA201
            self.make_empty_intermediate_tensors = lambda: None
        except ImportError as e:
            raise RuntimeError("no thinker") from e
        else:
            self.make_empty_intermediate_tensors = self.thinker.make_empty_intermediate_tensors

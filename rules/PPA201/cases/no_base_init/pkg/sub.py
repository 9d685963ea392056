from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory

from .base import BaseForCausalLM


# ruleid: PPA201
class NoInitCallForCausalLM(BaseForCausalLM):
    """Calls no base `__init__` at all: SupportsPP is inherited, the hook its base assigns is not."""

    def __init__(self, config, prefix=""):
        self.config = config


# ok: PPA201
class CallsInitForCausalLM(BaseForCausalLM):
    def __init__(self, config, prefix=""):
        super().__init__(config, prefix)
        self.extra = 1


# ok: PPA201
class OwnHookForCausalLM(BaseForCausalLM):
    def __init__(self, config, prefix=""):
        self.config = config
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


# ok: PPA201
class HelperInitForCausalLM(BaseForCausalLM):
    """Its `__init__` calls none, but a helper it calls runs the base `__init__`."""

    def __init__(self, config, prefix=""):
        self._setup(config, prefix)

    def _setup(self, config, prefix):
        BaseForCausalLM.__init__(self, config, prefix)

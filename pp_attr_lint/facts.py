"""What pp-attr-lint takes as given about vLLM (and SGLang, which shares the conventions), in one
place.  Every rule and the resolver read these; a rule file may add to the first three.

Sources (vLLM 0.21.0 / 0.32.0 unless said otherwise):

* ``make_layers`` in vllm/model_executor/models/utils.py returns ``(start_layer, end_layer,
  layers)``; ``layers`` keeps one slot per decoder layer of the whole model and holds a
  ``PPMissingLayer`` in every slot outside ``[start_layer, end_layer)``.  SGLang's
  ``make_layers`` (sglang/srt/utils/common.py) returns ``(layers, start_layer, end_layer)`` with the
  same padding.  Which tuple element is the list is therefore read from the target names.
* ``PPMissingLayer`` (vllm/model_executor/models/utils.py) is a ``torch.nn.Identity`` with a
  ``return_tuple`` attribute; a read of any other attribute than ``torch.nn.Module``'s raises
  ``AttributeError``.  Models assign it to ``embed_tokens`` / ``norm`` / ``lm_head`` on the ranks
  that do not own them (llama.py: ``embed_tokens`` when ``is_first_rank or (tie_word_embeddings
  and is_last_rank)``, ``norm`` and ``lm_head`` when ``is_last_rank``).
* ``get_pp_group()`` (vllm/distributed/parallel_state.py) returns a ``GroupCoordinator`` whose
  properties ``is_first_rank`` and ``is_last_rank`` tell the pipeline-parallel rank's place; with
  ``pipeline_parallel_size >= 2`` at most one of them is true.
* ``SupportsPP`` (vllm/model_executor/models/interfaces.py) is a ``Protocol`` that declares
  ``make_empty_intermediate_tensors`` with a ``...`` body: a class that lists the protocol as a base
  but neither defines nor assigns the hook gets ``None`` from it, and the model runner
  (vllm/v1/worker/gpu_model_runner.py) calls it on every rank but the first.
* ``torch.nn.Module.__init__`` calls no further ``__init__`` (``call_super_init`` is ``False`` by
  default, torch/nn/modules/module.py).
"""

from __future__ import annotations

from .settings import Factory, Settings

# bases known to add no instance attributes that a rule could be asked about (their packages are
# never read from the environment)
ATTRIBUTELESS_BASES = (
    "builtins.object",
    "torch.nn.Module",
    "torch.nn.modules.module.Module",
    "typing.Protocol",
    "typing.Generic",
    "typing_extensions.Protocol",
    "abc.ABC",
)
# vLLM's interface protocols (SupportsPP, HasInnerState, IsHybrid, ... in
# vllm/model_executor/models/interfaces.py and interfaces_base.py) are not listed: they are read from
# their source, found in the checked tree, a --src folder or the Python environment.

# class decorators that return the class they get, unchanged in its attributes
TRANSPARENT_DECORATORS = (
    "support_torch_compile",
    "MULTIMODAL_REGISTRY.register_processor",
    "register_processor",
    "runtime_checkable",
    "final",
    "typing.final",
    # the generated `__init__` stores exactly the fields, which are class-level annotations (read
    # as the attributes' classes, docs/design.md); the methods it adds set nothing else
    "dataclass",
    "dataclasses.dataclass",
)

# the model registry is found by its place in the analysed tree, for any top-level package name
# ``{top}``: vLLM keeps it at vllm/model_executor/models/registry.py, and forks that rename the
# package keep that shape (Aphrodite 0.24.1: aphrodite/model_executor/models/registry.py, the same
# table names, merged into `_APHRODITE_MODELS`).  `{top}` is the top-level package of the code that
# names the registry: of the module a factory is defined in (or imported from), of a model's module,
# of the `ModelRegistry` a plugin registers with.
REGISTRY_MODULE = "{top}.model_executor.models.registry"
MODELS_PACKAGE = "{top}.model_executor.models"
# calls that build a model from the registry: `init_vllm_registered_model` in
# vllm/model_executor/models/utils.py, `init_aphrodite_registered_model` in Aphrodite's (utils.py:537);
# the name is a glob, and the registry is the one of the package that defines the factory
FACTORIES = (
    Factory(name="init_*_registered_model", keyword="architectures",
            registry_module=REGISTRY_MODULE, tables="_*_MODELS", package=MODELS_PACKAGE),
)
# `ModelRegistry.register_model("Arch", Cls_or_"module:Class")` (vllm/model_executor/models/registry.py,
# `_ModelRegistry.register_model`): how an out-of-tree plugin adds or replaces an architecture; the
# engine checks the class like an in-tree one (`supports_pp`, vllm/config/model.py)
REGISTER_METHOD = "register_model"

PLACEHOLDER_CLASS = "PPMissingLayer"
MAKE_LAYERS = "make_layers"
# SGLang's lazy holder (sglang/srt/utils/common.py `LazyValue`): `LazyValue(creator)` stores the
# callable; the first read of its `value` property calls it (`self._value = self._creator()`).
# Models store `self._routed_experts_weights_of_layer = LazyValue(lambda: {...})` in `__init__` and
# read `.value` in a property, so the lambda runs when that property is read, not at construction
LAZY_VALUE_CLASS = "LazyValue"
LAZY_VALUE_READ = "value"
RANGE_ATTRIBUTES = ("start_layer", "end_layer")
FIRST_RANK_PREDICATE = "is_first_rank"
LAST_RANK_PREDICATE = "is_last_rank"
# both, for a text search (a rule's prefilter, before any parse)
RANK_PREDICATE_NAMES = (LAST_RANK_PREDICATE, FIRST_RANK_PREDICATE)
# tests true only on global rank 0, which is on the first pipeline stage: vLLM's
# `is_global_first_rank()` (vllm/distributed/parallel_state.py) and
# `torch.distributed.get_rank() == 0`; vLLM lays ranks out as (data, pipeline, tensor) with the
# tensor rank innermost, so global rank 0 is on the first stage
GLOBAL_FIRST_RANK_TESTS = ("is_global_first_rank()", "get_rank() == 0")
PP_PROTOCOL = "SupportsPP"
PP_HOOK = "make_empty_intermediate_tensors"

# torch.nn.Module's own ``forward`` is ``_forward_unimplemented(self, *input)`` (torch 2.x,
# torch/nn/modules/module.py): a subclass that defines none has a ``forward`` whose signature has
# no named parameter but ``input`` (a class ``__getattr__`` is never asked for it)
MODULE_CLASSES = ("torch.nn.Module", "torch.nn.modules.module.Module")
MODULE_FORWARD_PARAMETERS = ("input",)
# decorators whose wrapper keeps the function's signature for ``inspect.signature`` (they wrap with
# ``functools.wraps``, which sets ``__wrapped__``: torch/utils/_contextlib.py, torch 2.x), written
# as called decorators (``@torch.no_grad()``)
SIGNATURE_KEEPING_DECORATORS = ("torch.no_grad", "torch.inference_mode", "torch.enable_grad")

# attributes that every torch.nn.Module instance has (torch 2.x, torch/nn/modules/module.py), so
# reading them on a placeholder does not raise
MODULE_ATTRIBUTES = frozenset({
    "training", "forward", "parameters", "named_parameters", "buffers", "named_buffers", "children",
    "named_children", "modules", "named_modules", "train", "eval", "requires_grad_", "zero_grad",
    "to", "cpu", "cuda", "xpu", "half", "float", "double", "bfloat16", "type", "apply",
    "state_dict", "load_state_dict", "register_buffer", "register_parameter", "register_module",
    "add_module", "get_submodule", "get_parameter", "get_buffer", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "extra_repr", "to_empty",
    "share_memory", "_modules", "_parameters", "_buffers", "__class__", "__dict__", "__call__",
    "_get_name", "set_extra_state", "get_extra_state", "compile", "dump_patches",
    "return_tuple",  # PPMissingLayer's own (vllm/model_executor/models/utils.py)
})


# the calls of a model runner that build the registry's model: vLLM 0.5.x-0.10 worker/model_runner.py
# `load_model` (`self.model = get_model(...)`), vllm/v1/worker/gpu_model_runner.py (`get_model` or
# `get_model_loader(...).load_model(...)`), vllm/model_executor/model_loader/ (`initialize_model`);
# a runner that calls none of them loads another library's model (engines/executors.py)
MODEL_LOADER_CALLS = frozenset({"get_model", "get_model_loader", "initialize_model", "_initialize_model"})
# model methods the engine calls on one rank only (vllm/v1/worker/gpu_model_runner.py): logits are
# computed on the last pipeline-parallel rank, input embeddings are built on the first
RANK_OF_METHOD = {"compute_logits": "last", "embed_input_ids": "first", "get_input_embeddings": "first"}
# model methods the engine calls on every model it loads (load_weights by the model loader,
# vllm/model_executor/model_loader/; forward and compute_logits by the model runner)
ENGINE_METHODS = frozenset({"forward", "load_weights", "compute_logits", "embed_input_ids", "get_input_embeddings"})
# attributes the engine sets on a model from outside its class: a speculative-decoding drafter
# shares the target model's head (vllm/v1/spec_decode/eagle.py, `self.model.lm_head = ...`)
SET_BY_ENGINE = frozenset({"lm_head"})
# methods only speculative decoding calls, and only when the target model holds its input
# embedding (SGLang: sglang/srt/speculative/pp_draft_embedding.py re-opens the weights instead under
# pipeline parallelism; vLLM's drafters share the target's modules from outside): what they read on
# a placeholder is never reached on a rank that has one
SPEC_DECODE_ONLY_METHODS = frozenset({"get_embed_and_head", "set_embed_and_head", "get_embed", "set_embed",
                                      "get_embed_and_head_for_draft"})
# methods that only speculative decoding calls never run under PP (above)
NOT_RUN_UNDER_PP_METHODS = SPEC_DECODE_ONLY_METHODS
# methods that only a feature calls, with the config flag that turns the feature on: elastic expert
# parallelism calls update_physical_experts_metadata.  Whether the feature refuses pipeline
# parallelism is read from the analysed tree (engines.vllm.VllmEngine.feature_refuses_pp): vLLM 0.21.0+
# raise "Elastic EP is not supported with pipeline parallelism" in vllm/config/parallel.py
# (`if self.enable_elastic_ep: ... if self.pipeline_parallel_size > 1: raise`), and so does
# Aphrodite 0.24.1 (aphrodite/config/parallel.py:840); vLLM 0.10.0 has no such refusal (its
# vllm/config.py never names the flag), so there the method runs under PP like any other.
FEATURE_ONLY_METHODS = {"update_physical_experts_metadata": "enable_elastic_ep"}
# where a tree validates its parallel configuration ({top}: its top-level package), first found wins
PARALLEL_CONFIG_MODULES = ("{top}.config.parallel", "{top}.config")
# the registry table of speculative-decoding drafters (vllm/model_executor/models/registry.py): a
# drafter runs on one rank and never receives intermediate tensors
DRAFTER_TABLE = "_SPECULATIVE_DECODING_MODELS"
# the draft model's configuration: vLLM's SpeculativeConfig.draft_model_config (vllm/config/
# speculative.py), reached as `vllm_config.speculative_config.draft_model_config`; the
# speculative config is None without speculative decoding (VllmConfig.speculative_config), so
# a class whose __init__ reads it on every call is built only as a drafter (vLLM's EAGLE heads:
# `self.config = vllm_config.speculative_config.draft_model_config.hf_config`)
DRAFT_CONFIG_CHAIN = ("speculative_config", "draft_model_config")
# words in the class names of SGLang's speculative draft models, which its registry loads like any
# other model (sglang/srt/models/qwen3_moe_mtp.py `Qwen3MoeForCausalLMMTP`, deepseek_nextn.py
# `DeepseekV3ForCausalLMNextN`, llama_eagle3.py `LlamaForCausalLMEagle3`); whether the engine runs
# such a drafter under PP depends on its speculative-decoding settings
DRAFTER_NAME_WORDS = ("MTP", "NextN", "Eagle", "EAGLE", "Draft", "Medusa")


def default_settings() -> Settings:
    """The resolver facts above as :class:`~pp_attr_lint.settings.Settings`."""
    return Settings(attributeless_bases=ATTRIBUTELESS_BASES, transparent_decorators=TRANSPARENT_DECORATORS,
                    factories=FACTORIES)


def merged_settings(extra: list[Settings]) -> Settings:
    """The shared facts plus what rule files add (order kept, duplicates dropped)."""
    base = default_settings()
    return Settings(
        attributeless_bases=tuple(dict.fromkeys(base.attributeless_bases + tuple(
            b for s in extra for b in s.attributeless_bases))),
        transparent_decorators=tuple(dict.fromkeys(base.transparent_decorators + tuple(
            d for s in extra for d in s.transparent_decorators))),
        factories=tuple(dict.fromkeys(base.factories + tuple(f for s in extra for f in s.factories))),
    )


# The engines whose model code the rules judge, by top-level package.  Checked code that imports
# one (a plugin) is judged against the engine's own classes, so a run that cannot find the engine
# (not checked, no --src folder, not in the --python environment) judges none of what depends on
# it: that is an error of its own (see pp_attr_lint.engine.check.missing_engines), not a pass.
ENGINES = ("vllm", "sglang")


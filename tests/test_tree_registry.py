"""The model registry is read from the analysed tree by its shape: `<pkg>/model_executor/models/
registry.py` for any package name (a fork that renames vLLM's package), and the
`ModelRegistry.register_model(...)` calls of a plugin; what cannot be established is not judged."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"

TIED = """
    import torch.nn as nn
    from vllm.distributed import get_pp_group
    from vllm.model_executor.models.utils import PPMissingLayer
    {interfaces}


    class Embedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = [0.0]


    class Head(Embedding):
        def tie_weights(self, embed):
            self.weight = embed.weight
            return self


    class Inner(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.embed_tokens = Embedding() if get_pp_group().is_first_rank else PPMissingLayer()


    class {name}(nn.Module{bases}):
        def __init__(self, config):
            super().__init__()
            self.model = Inner(config)
            if get_pp_group().is_last_rank:
                self.lm_head = Head().tie_weights(self.model.embed_tokens)
            else:
                self.lm_head = PPMissingLayer()
"""
NO_PP = dict(interfaces="", bases="")
PP = dict(interfaces="from vllm.model_executor.models.interfaces import SupportsPP", bases=", SupportsPP")
DRAFTER = """
    import torch.nn as nn
    from vllm.model_executor.models.interfaces import SupportsPP


    class {name}(nn.Module, SupportsPP):
        def __init__(self, config):
            super().__init__()
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _check(folder: Path, target: str):
    r = run_cli("check", target, "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                cwd=folder)
    assert r.rc in (0, 1), r.stdout + r.stderr
    out = json.loads(r.stdout)
    return ({(Path(f["filename"]).name, f["code"]) for f in out if f.get("code")},
            {(Path(f["filename"]).name, f["rule"]) for f in out if f.get("name") == "not-judged"})


REFUSAL = """
    class ModelConfig:
        def verify_with_parallel_config(self, parallel_config):
            if parallel_config.pipeline_parallel_size > 1:
                if not self.registry.is_pp_supported_model(self.architectures):
                    raise NotImplementedError("Pipeline parallelism is not supported for this model.")
"""


def _fork(root: Path, refusal: bool) -> None:
    pkg = "myfork/model_executor/models"
    _write(root, {
        "myfork/__init__.py": "", "myfork/model_executor/__init__.py": "", f"{pkg}/__init__.py": "",
        "myfork/config.py": REFUSAL if refusal else "class ModelConfig:\n    pass\n",
        f"{pkg}/registry.py": """
            _TEXT_GENERATION_MODELS = {
                "NoPPForCausalLM": ("nopp", "NoPPForCausalLM"),
                "PPForCausalLM": ("pp", "PPForCausalLM"),
            }
            _SPECULATIVE_DECODING_MODELS = {
                "DraftModel": ("draft", "DraftModel"),
            }
        """,
        f"{pkg}/nopp.py": TIED.format(name="NoPPForCausalLM", **NO_PP),
        f"{pkg}/pp.py": TIED.format(name="PPForCausalLM", **PP),
        f"{pkg}/draft.py": DRAFTER.format(name="DraftModel"),
        f"{pkg}/listed.py": DRAFTER.format(name="ListedModel"),
    })


def test_a_renamed_package_keeps_its_registry(tmp_path):
    _fork(tmp_path, refusal=True)
    found, unjudged = _check(tmp_path, "myfork")
    # the engine refuses PP for a model without SupportsPP (its config says so, vLLM 0.10.0's
    # shape), and runs drafters with PP = 1
    assert found == {("pp.py", "PPA101"), ("pp.py", "PPA201"), ("listed.py", "PPA201")}
    assert not unjudged


def test_a_refusal_not_in_the_tree_is_not_taken_on_trust(tmp_path):
    """A registered model without SupportsPP whose engine shows no refusal: its tied-head read is
    neither reported nor passed as code that never runs under PP, but listed as not judged."""
    _fork(tmp_path, refusal=False)
    found, unjudged = _check(tmp_path, "myfork")
    assert found == {("pp.py", "PPA101"), ("pp.py", "PPA201"), ("listed.py", "PPA201")}
    assert unjudged == {("nopp.py", "PPA101")}
    r = run_cli("check", "myfork", "--src", STUBS, "--no-cache", "--show-unresolved", cwd=tmp_path)
    assert "engine-fact-unknown" in r.stdout and "SupportsPP" in r.stdout


LISTED_REFUSAL = """
    _PP_SUPPORTED_MODELS = [
        "ListedForCausalLM",
    ]


    class ModelConfig:
        def verify_with_parallel_config(self, parallel_config):
            architectures = getattr(self.hf_config, "architectures", [])
            if not all(arch in _PP_SUPPORTED_MODELS
                       for arch in architectures) and parallel_config.pipeline_parallel_size > 1:
                raise NotImplementedError("Pipeline parallelism is only supported for the following "
                                          f" architectures: {_PP_SUPPORTED_MODELS}.")
"""


def _old_release(root: Path, config: str, extra: dict | None = None) -> None:
    """vLLM 0.5.x's shape: no ``SupportsPP``; the config refuses PP for every architecture
    missing from ``_PP_SUPPORTED_MODELS``."""
    pkg = "oldvllm/model_executor/models"
    _write(root, {
        "oldvllm/__init__.py": "", "oldvllm/model_executor/__init__.py": "", f"{pkg}/__init__.py": "",
        "oldvllm/config.py": config,
        f"{pkg}/registry.py": """
            _TEXT_GENERATION_MODELS = {
                "ListedForCausalLM": ("listed", "ListedForCausalLM"),
                "UnlistedForCausalLM": ("unlisted", "UnlistedForCausalLM"),
            }
        """,
        f"{pkg}/listed.py": TIED.format(name="ListedForCausalLM", **NO_PP),
        f"{pkg}/unlisted.py": TIED.format(name="UnlistedForCausalLM", **NO_PP),
        f"{pkg}/stray.py": TIED.format(name="StrayForCausalLM", **NO_PP),
        **(extra or {}),
    })


@pytest.mark.parametrize("how", ["list", "imported", "any-not-in", "extended", "no-list"])
def test_an_architecture_list_refuses_the_others(tmp_path, how):
    """vLLM 0.5.1 to 0.6.0 refuse PP for an architecture missing from `_PP_SUPPORTED_MODELS`: the
    tied-head read of an unlisted model, or of a module no registry lists and nothing imports, never
    runs under PP; a module a listed model imports does. A list something extends (a plugin's
    `append`) or no list at all leaves the old answers (an unlisted model without a refusal read is
    not judged)."""
    config, extra = LISTED_REFUSAL, {}
    if how == "imported":
        extra = {"oldvllm/model_executor/models/listed.py":
                 "from .unlisted import UnlistedForCausalLM\n"
                 + textwrap.dedent(TIED.format(name="ListedForCausalLM", **NO_PP))}
    elif how == "any-not-in":
        config = config.replace("if not all(arch in _PP_SUPPORTED_MODELS", "if any(arch not in _PP_SUPPORTED_MODELS")
    elif how == "extended":
        extra = {"oldvllm/plugin.py": "from oldvllm.config import _PP_SUPPORTED_MODELS\n"
                                      "_PP_SUPPORTED_MODELS.append('UnlistedForCausalLM')\n"}
    elif how == "no-list":
        config = "class ModelConfig:\n    pass\n"
    _old_release(tmp_path, config, extra)
    found, unjudged = _check(tmp_path, "oldvllm")
    if how in ("list", "any-not-in"):
        assert found == {("listed.py", "PPA101")} and not unjudged
    elif how == "imported":
        assert found == {("listed.py", "PPA101"), ("unlisted.py", "PPA101")} and not unjudged
    else:  # no list read: the SupportsPP question, which these models cannot answer
        assert found == {("stray.py", "PPA101")}
        assert unjudged == {("listed.py", "PPA101"), ("unlisted.py", "PPA101")}


PINNED_ENGINE = """
    class LLMEngine:
        @classmethod
        def _get_executor_cls(cls, engine_config):
            backend = engine_config.parallel_config.distributed_executor_backend
            if {test}:
                from oldvllm.executor.cpu_executor import CPUExecutor
                executor_class = CPUExecutor
            elif backend == "ray":
                from oldvllm.executor.ray_gpu_executor import RayGPUExecutor
                executor_class = RayGPUExecutor
            else:
                from oldvllm.executor.gpu_executor import GPUExecutor
                executor_class = GPUExecutor
            return executor_class
"""
EXECUTOR = """
    class {name}:
        def _init_worker(self):
            worker_module_name = "oldvllm.worker.{worker}"
            worker_class_name = "{worker_class}"
            return self._create(worker_module_name, worker_class_name)
"""
WORKER = """
    from oldvllm.worker.{runner} import {runner_class}


    class {name}:
        def __init__(self, model_config):
            self.model_runner = {runner_class}(model_config)

        def load_model(self):
            self.model_runner.load_model()
"""


@pytest.mark.parametrize("how", ["other-library", "loads", "not-pinned", "unnamed-value", "second-engine",
                                 "second-engine-unimportable"])
def test_an_engine_pinned_to_an_executor_that_builds_no_model(tmp_path, how):
    """A fork that pins its executor selection (`if True: executor_class = CPUExecutor`, vllm-xft
    0.5.5.4) to an executor whose runner loads another library's model never builds a registry
    model: nothing of the registry's package runs, on any rank.  A runner that calls the model
    loader, a selection a test still decides, or a bound value this reading cannot name leave the
    old answers (the listed model's tied head is reported)."""
    cpu_load = "self.model = get_model(self.model_config)" if how == "loads" else \
        "self.model = xfastertransformer.AutoModel.from_pretrained(self.model_config)"
    test = "engine_config.device_config.device_type == 'cpu'" if how == "not-pinned" else "True"
    engine = PINNED_ENGINE.format(test=test)
    if how == "unnamed-value":
        engine = engine.replace("executor_class = CPUExecutor", "executor_class = pick(CPUExecutor)")
    gpu_runner = """
        from oldvllm.model_executor.model_loader import get_model


        class ModelRunner:
            def __init__(self, model_config):
                self.model_config = model_config

            def load_model(self):
                self.model = get_model(self.model_config)
    """
    extra = {
        "oldvllm/engine/__init__.py": "", "oldvllm/executor/__init__.py": "", "oldvllm/worker/__init__.py": "",
        "oldvllm/engine/llm_engine.py": engine,
        "oldvllm/executor/cpu_executor.py": EXECUTOR.format(name="CPUExecutor", worker="cpu_worker",
                                                             worker_class="CPUWorker"),
        "oldvllm/executor/gpu_executor.py": EXECUTOR.format(name="GPUExecutor", worker="worker", worker_class="Worker"),
        "oldvllm/executor/ray_gpu_executor.py": EXECUTOR.format(name="RayGPUExecutor", worker="worker",
                                                                 worker_class="Worker"),
        "oldvllm/worker/cpu_worker.py": WORKER.format(name="CPUWorker", runner="cpu_model_runner",
                                                      runner_class="CPUModelRunner"),
        "oldvllm/worker/worker.py": WORKER.format(name="Worker", runner="model_runner", runner_class="ModelRunner"),
        "oldvllm/worker/model_runner.py": gpu_runner,
        "oldvllm/worker/cpu_model_runner.py": gpu_runner.replace("ModelRunner", "CPUModelRunner").replace(
            "self.model = get_model(self.model_config)", cpu_load).replace(
            "from oldvllm.model_executor", "import xfastertransformer\n        from oldvllm.model_executor"),
        "oldvllm/model_executor/model_loader.py": "def get_model(model_config):\n    return None\n",
    }
    if how.startswith("second-engine"):
        # another engine's selection that a test decides (vLLM V1's `Executor.get_class`), in a
        # module that imports what its package lacks (it never imports) or one that imports
        second = PINNED_ENGINE.format(test="backend == 'mp'").replace("cpu_executor import CPUExecutor",
                                                                       "gpu_executor import GPUExecutor")
        second = second.replace("executor_class = CPUExecutor", "executor_class = GPUExecutor")
        head = "from oldvllm.config import VllmConfig\n" if how.endswith("unimportable") else ""
        extra["oldvllm/v1/__init__.py"] = ""
        extra["oldvllm/v1/engine.py"] = head + textwrap.dedent(second)
    _old_release(tmp_path, LISTED_REFUSAL, extra)
    found, unjudged = _check(tmp_path, "oldvllm")
    if how in ("other-library", "second-engine-unimportable"):
        assert not found and not unjudged
    else:
        assert found == {("listed.py", "PPA101")} and not unjudged


@pytest.mark.parametrize("imports", ["from oldvllm.config import VllmConfig",
                                     "from .interfaces import SupportsPP",
                                     "from .interfaces import SupportsPP as Flag  # noqa"])
def test_a_file_that_imports_what_its_package_lacks_fails_first(tmp_path, imports):
    """A model file left from another release imports a name its own package does not bind (vLLM
    0.5.5's `config` has no `VllmConfig`, its `interfaces` no `SupportsPP`): the import raises
    `ImportError`, so nothing after it runs; its finding is listed (`fails-earlier`), not reported.
    A name the module does bind, or one it may bind (a star import), fails nothing."""
    body = textwrap.dedent(TIED.format(name="StrayForCausalLM", **NO_PP))
    extra = {"oldvllm/model_executor/models/interfaces.py": "class SupportsLoRA:\n    pass\n",
             "oldvllm/model_executor/models/stray.py": f"{imports}\n{body}"}
    _old_release(tmp_path, "class ModelConfig:\n    pass\n", extra)
    found, unjudged = _check(tmp_path, "oldvllm")
    assert ("stray.py", "PPA101") not in found and ("stray.py", "PPA101") in unjudged
    r = run_cli("check", "oldvllm", "--src", STUBS, "--no-cache", "--show-unresolved", cwd=tmp_path)
    assert "fails-earlier" in r.stdout and ("VllmConfig" in r.stdout or "SupportsPP" in r.stdout)
    extra["oldvllm/model_executor/models/interfaces.py"] = "from .protocols import *\n"
    extra["oldvllm/config.py"] = "VllmConfig = object\n"
    _old_release(tmp_path, "VllmConfig = object\n", extra)
    found, _ = _check(tmp_path, "oldvllm")
    assert ("stray.py", "PPA101") in found


def test_plugin_registrations(tmp_path):
    _write(tmp_path, {
        "plugin/__init__.py": """
            def register():
                from vllm import ModelRegistry

                ModelRegistry.register_model("NoPPForCausalLM", "plugin.nopp:NoPPForCausalLM")
                ModelRegistry.register_model("PPForCausalLM", "plugin.pp:PPForCausalLM")
                ModelRegistry.register_model("EagleLlamaForCausalLM", "plugin.draft:Draft")
        """,
        "plugin/nopp.py": TIED.format(name="NoPPForCausalLM", **NO_PP),
        "plugin/pp.py": TIED.format(name="PPForCausalLM", **PP),
        "plugin/draft.py": DRAFTER.format(name="Draft"),
    })
    found, unjudged = _check(tmp_path, "plugin")
    assert found == {("pp.py", "PPA101"), ("pp.py", "PPA201")}
    assert not unjudged


def test_a_registration_with_an_unknown_registry_is_not_judged(tmp_path):
    _write(tmp_path, {
        "plugin/__init__.py": """
            def register():
                from otherengine import ModelRegistry

                ModelRegistry.register_model("EagleLlamaForCausalLM", "plugin.draft:Draft")
        """,
        "plugin/draft.py": DRAFTER.format(name="Draft"),
    })
    found, unjudged = _check(tmp_path, "plugin")
    assert not found
    assert unjudged == {("draft.py", "PPA201")}


def test_a_package_entry_names_its_submodules_class(tmp_path):
    """vLLM 0.33.0 names packages in its registry (`vllm.models.glm5next`); the class lives in a
    submodule that the package's `__init__` re-exports."""
    pkg = "myfork/model_executor/models"
    _write(tmp_path, {
        "myfork/__init__.py": "", "myfork/model_executor/__init__.py": "", f"{pkg}/__init__.py": "",
        "myfork/models/__init__.py": "",
        "myfork/models/nopp/__init__.py": "from .common.model import NoPPForCausalLM\n",
        "myfork/models/nopp/common/__init__.py": "",
        "myfork/models/nopp/common/model.py": TIED.format(name="NoPPForCausalLM", **NO_PP),
        "myfork/models/nopp/other/__init__.py": "",
        "myfork/models/nopp/other/model.py": TIED.format(name="NoPPForCausalLM", **NO_PP),
        f"{pkg}/registry.py": """
            _TEXT_GENERATION_MODELS = {
                "NoPPForCausalLM": ("myfork.models.nopp", "NoPPForCausalLM"),
            }
        """,
    })
    r = run_cli("check", "myfork", "--src", STUBS, "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert r.rc in (0, 1), r.stdout + r.stderr
    # the re-exported class is refused PP; the other submodule's class of the same name is not registered
    assert {(Path(f["filename"]).parent.name, f["code"]) for f in json.loads(r.stdout)} == {("other", "PPA101")}


PLUGIN_MODEL = """
    import torch.nn as nn
    from vllm.distributed import get_pp_group
    from vllm.model_executor.models.utils import PPMissingLayer

    import hostengine


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = [0.0]


    class PluginForCausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.lm_head = Head() if get_pp_group().is_last_rank else PPMissingLayer()

        def compute_logits_sharded(self, hidden_states):
            return self.lm_head.weight


    class Runner:
        def __init__(self, model):
            self.model = model
            self.is_last_pp_rank = get_pp_group().is_last_rank

        def step(self, hidden_states):
            if not self.is_last_pp_rank:
                return None
            return self.model.compute_logits_sharded(hidden_states)
"""


def test_callers_in_the_engine_a_plugin_imports_count(tmp_path):
    """A plugin's method whose callers in the plugin run on the last rank is judged there, unless
    the engine it imports (found in --src, outside the checked tree) calls it too."""
    for calls, found in ((False, set()), (True, {("model.py", "PPA101")})):
        root = tmp_path / str(calls)
        engine = "def profile(model):\n    return model.compute_logits_sharded(None)\n" if calls else ""
        _write(root, {"plugin/__init__.py": "", "plugin/model.py": PLUGIN_MODEL,
                      "src/hostengine/__init__.py": engine})
        r = run_cli("check", "plugin", "--src", STUBS, "--src", root / "src", "--no-cache", "--output-format", "json",
                    cwd=root)
        assert r.rc in (0, 1), r.stdout + r.stderr
        assert {(Path(f["filename"]).name, f["code"]) for f in json.loads(r.stdout)} == found


RUNNER = """
    import inspect


    class ModelRunner:
        def __init__(self, model, pp_size, is_draft_worker=False, pp_spec=False):
            self.model = model
            self.pp_size = pp_size
            self.support_pp = "pp_proxy_tensors" in inspect.signature(self.model.forward).parameters
            if self.pp_size > 1:
{check}
"""
ENTRY_REGISTRY = """
    import importlib
    import pkgutil


    def import_model_classes(package_name):
        out = {}
        package = importlib.import_module(package_name)
        for _, name, ispkg in pkgutil.iter_modules(package.__path__, package_name + "."):
            module = importlib.import_module(name)
            if hasattr(module, "EntryClass"):
                out[module.EntryClass.__name__] = module.EntryClass
        return out
"""
FORWARD = """

        def forward(self, input_ids, positions{extra}):
            return input_ids


    EntryClass = {name}
"""


def _sglang_shaped(root: Path, check: str, extra: dict | None = None) -> None:
    """An engine whose model runner asserts, under PP, that the model's ``forward`` takes
    ``pp_proxy_tensors`` (SGLang's ``support_pp``) and whose registry loads each model module's
    ``EntryClass``; one model without that parameter, one with it."""
    models = "mysgl/srt/models"
    _write(root, {
        "mysgl/__init__.py": "", "mysgl/srt/__init__.py": "", "mysgl/srt/model_executor/__init__.py": "",
        f"{models}/__init__.py": "",
        "mysgl/srt/managers/__init__.py": "",
        "mysgl/srt/managers/tp_worker.py": """
            from mysgl.srt.model_executor.model_runner import ModelRunner


            def start(model, pp_size):
                return ModelRunner(model, pp_size)
        """,
        "mysgl/srt/model_executor/model_runner.py": RUNNER.format(check=textwrap.indent(textwrap.dedent(check).strip("\n"), " " * 16)),
        f"{models}/registry.py": ENTRY_REGISTRY,
        f"{models}/refused.py": TIED.format(name="RefusedForCausalLM", **NO_PP)
        + FORWARD.format(name="RefusedForCausalLM", extra=", **kwargs"),
        f"{models}/accepted.py": TIED.format(name="AcceptedForCausalLM", **NO_PP)
        + FORWARD.format(name="AcceptedForCausalLM", extra=", pp_proxy_tensors=None"),
        **(extra or {}),
    })


def test_a_model_whose_forward_the_engine_refuses_under_pp_is_not_judged_as_one(tmp_path):
    """SGLang 0.5.15's shape: the assert holds on every PP run, so a model whose ``forward`` takes
    no ``pp_proxy_tensors`` never runs under PP (its tied-head read is no PP bug); the model that
    takes it is judged as before."""
    _sglang_shaped(tmp_path, 'assert self.support_pp, "Pipeline Parallel is not compatible with this model."')
    found, unjudged = _check(tmp_path, "mysgl")
    assert found == {("accepted.py", "PPA101")}
    assert not unjudged


def test_a_refusal_that_a_test_can_lift_leaves_the_model_not_judged(tmp_path):
    """SGLang 0.5.23's shape: the assert is skipped for a draft worker under a flag, so that the
    model never runs under PP is not established: not reported, and listed as not judged."""
    _sglang_shaped(tmp_path, """
        if not (pp_spec and is_draft_worker):
            assert self.support_pp
    """)
    found, unjudged = _check(tmp_path, "mysgl")
    assert found == {("accepted.py", "PPA101")}
    assert unjudged == {("refused.py", "PPA101")}
    r = run_cli("check", "mysgl", "--src", STUBS, "--no-cache", "--show-unresolved", cwd=tmp_path)
    assert "pp-refusal-unsure" in r.stdout and "pp_proxy_tensors" in r.stdout


def test_a_refusal_in_a_try_block_is_not_taken(tmp_path):
    """An assert that a handler around it may swallow refuses nothing: the model is judged."""
    _sglang_shaped(tmp_path, """
        try:
            assert self.support_pp
        except AssertionError:
            pass
    """)
    found, _ = _check(tmp_path, "mysgl")
    assert found == {("accepted.py", "PPA101"), ("refused.py", "PPA101")}


PLAIN_ASSERT = 'assert self.support_pp, "Pipeline Parallel is not compatible with this model."'


def test_a_refused_class_that_other_code_names_is_not_judged(tmp_path):
    """A PP-capable entry class of another module subclasses the refused one: the refused class's
    `__init__` runs under PP there, so its tied-head read is not passed (listed as not judged)."""
    _sglang_shaped(tmp_path, PLAIN_ASSERT, {"mysgl/srt/models/sub.py": """
        from .refused import RefusedForCausalLM


        class SubForCausalLM(RefusedForCausalLM):
            def forward(self, input_ids, positions, pp_proxy_tensors=None):
                return input_ids


        EntryClass = SubForCausalLM
    """})
    found, unjudged = _check(tmp_path, "mysgl")
    assert found == {("accepted.py", "PPA101")}
    assert unjudged == {("refused.py", "PPA101")}


@pytest.mark.parametrize("how", ["append", "branch", "early-return", "flag-rebound", "instance-forward",
                                 "decorated-forward", "other-model", "runner-never-built"])
def test_a_refusal_the_tree_does_not_establish_is_not_taken(tmp_path, how):
    """Ways the refusal does not hold (or cannot be read): the entry attribute extended or bound
    in a branch, a `return` before the assert or the flag bound again (not judged), a `forward`
    bound on the instance or wrapped by a decorator, a signature test of another object's
    `forward`, a runner that no code builds (judged as a PP model)."""
    check, extra = PLAIN_ASSERT, {}
    refused = "mysgl/srt/models/refused.py"
    body = TIED.format(name="RefusedForCausalLM", **NO_PP) + FORWARD.format(name="RefusedForCausalLM",
                                                                              extra=", **kwargs")
    if how == "append":
        body += "\n    EntryClass += []\n"
    elif how == "branch":
        body += "\n    if __debug__:\n        EntryClass = RefusedForCausalLM\n"
    elif how == "early-return":
        check = "if is_draft_worker:\n    return\n" + PLAIN_ASSERT
    elif how == "flag-rebound":
        check = "self.support_pp = self.support_pp or pp_spec\n" + PLAIN_ASSERT
    elif how == "instance-forward":
        body = body.replace("            self.model = Inner(config)",
                            "            self.model = Inner(config)\n            self.forward = self.forward")
    elif how == "decorated-forward":
        body = body.replace("        def forward(", "        @staticmethod\n        def forward(")
    _sglang_shaped(tmp_path, check, extra)
    if how == "other-model":
        runner = tmp_path / "mysgl/srt/model_executor/model_runner.py"
        runner.write_text(runner.read_text().replace("self.model.forward", "self.draft.model.forward"))
    elif how == "runner-never-built":  # the check sits in a class no code builds: dead code
        (tmp_path / "mysgl/srt/managers/tp_worker.py").unlink()
    else:
        (tmp_path / refused).write_text(textwrap.dedent(body))
    found, unjudged = _check(tmp_path, "mysgl")
    if how in ("early-return", "flag-rebound"):
        assert found == {("accepted.py", "PPA101")} and unjudged == {("refused.py", "PPA101")}
    else:
        assert found == {("accepted.py", "PPA101"), ("refused.py", "PPA101")} and not unjudged


HOST = """
    import torch.nn as nn
    from vllm.model_executor.models.interfaces import SupportsPP
    from vllm.model_executor.models.utils import init_vllm_registered_model

    _STAGE = "HostedStage"


    class HostForConditionalGeneration(nn.Module, SupportsPP):
        def __init__(self, vllm_config):
            super().__init__()
            self.stage = init_vllm_registered_model(vllm_config, architectures=[{arch}])

        def make_empty_intermediate_tensors(self, batch_size, dtype, device):
            return {{}}
"""


def _omni(root: Path, table: str, host_arch: str = "_STAGE") -> None:
    """A plugin shaped as vllm-omni 0.30.0: its registry is a dict of ``(folder, module, Class)``
    turned into vLLM's ``_ModelRegistry`` of ``_LazyRegisteredModel``s; two stage models without
    ``SupportsPP``, one of them also built by name inside a PP host model."""
    pkg = "omni/model_executor/models"
    _write(root, {
        "omni/__init__.py": "", "omni/model_executor/__init__.py": "", f"{pkg}/__init__.py": "",
        f"{pkg}/stage/__init__.py": "",
        f"{pkg}/registry.py": """
            from vllm.model_executor.models.registry import _LazyRegisteredModel, _ModelRegistry

            """ + table + """

            OmniModelRegistry = _ModelRegistry({
                arch: _LazyRegisteredModel(module_name=f"omni.model_executor.models.{folder}.{rel}", class_name=cls)
                for arch, (folder, rel, cls) in _OMNI_MODELS.items()
            })
        """,
        f"{pkg}/stage/alone.py": TIED.format(name="AloneStage", **NO_PP),
        f"{pkg}/stage/hosted.py": TIED.format(name="HostedStage", **NO_PP),
        f"{pkg}/host.py": HOST.format(arch=host_arch),
    })


OMNI_TABLE = """_OMNI_MODELS = {
                "AloneStage": ("stage", "alone", "AloneStage"),
                "HostedStage": ("stage", "hosted", "HostedStage"),
                "HostForConditionalGeneration": ("host", "host", "HostForConditionalGeneration"),
            }"""


def test_a_plugin_registry_of_three_strings_is_read(tmp_path):
    """A stage model the plugin's registry lists without SupportsPP is refused under PP by the
    engine it runs in (vLLM's ModelConfig asks the plugin's registry): silent; the same class built
    by name inside a PP model runs under PP whenever its host does: reported."""
    _omni(tmp_path, OMNI_TABLE.replace('("host", "host",', '("host",'))
    found, unjudged = _check(tmp_path, "omni")
    assert found == {("hosted.py", "PPA101")}
    assert not unjudged


@pytest.mark.parametrize("spelled", ['"Hosted" "Stage"', "'Host\\x65dStage'", '"HostedStage"'])
def test_a_host_that_spells_the_architecture_in_pieces_is_read(tmp_path, spelled):
    """The host's file is parsed only when some string of it can be the architecture's name: a
    name written in pieces (adjacent literals, an escape) still makes it a host."""
    _omni(tmp_path, OMNI_TABLE.replace('("host", "host",', '("host",'), host_arch=spelled)
    found, unjudged = _check(tmp_path, "omni")
    assert found == {("hosted.py", "PPA101")}
    assert not unjudged


def test_could_spell_is_false_only_where_no_string_can_be_the_name():
    """The byte test in front of the host files' parse: true for every spelling Python allows of
    the name as a ``str`` constant, false for files that cannot hold one."""
    from pp_attr_lint.engines.vllm import _could_spell, _openings

    spell = _could_spell({"QwenFor"})

    def test(data):
        return spell(data, _openings(data))
    for src in ('x = "QwenFor"', 'x = ("Qw"\n "enFor")', "x = 'Q\\x77enFor'", 'x = "\\x51wenFor"',
                'x = f"{a}Qw" "enFor"', 'x = "Qwe\\\nnFor"', "x = 'Q\\N{LATIN SMALL LETTER W}enFor'"):
        assert "QwenFor" in {n.value for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Constant)}, src
        assert test(src.encode()), src
    for src in ('x = "Qwen"', 'x = "Q"'):
        assert test(src.encode()), src  # a prefix that ends at a quote may go on in the next literal
    for src in ('x = "\\n" + Qwen', 'x = ""', "y = 'Other'"):
        assert not test(src.encode()), src
    assert _could_spell({"not-a-word"})(b"", _openings(b""))


def test_a_plugin_stage_not_hosted_by_name_is_silent(tmp_path):
    """The host builds its stage from the checkpoint's config: no host names the class, so both
    registered stages are refused under PP."""
    _omni(tmp_path, OMNI_TABLE.replace('("host", "host",', '("host",'), host_arch="*vllm_config.architectures")
    found, unjudged = _check(tmp_path, "omni")
    assert not found and not unjudged


def test_a_plugin_registry_that_cannot_be_read_is_not_judged(tmp_path):
    """Entries built at run time: whether the engine refuses the stage models is not established."""
    _omni(tmp_path, "import json\n\n            _OMNI_MODELS = json.loads('{}')")
    found, unjudged = _check(tmp_path, "omni")
    assert not found
    assert unjudged == {("alone.py", "PPA101"), ("hosted.py", "PPA101")}
    r = run_cli("check", "omni", "--src", STUBS, "--no-cache", "--show-unresolved", cwd=tmp_path)
    assert "engine-fact-unknown" in r.stdout and "_LazyRegisteredModel" in r.stdout


def test_a_registry_class_of_its_own_is_no_engine_registry(tmp_path):
    """SGLang defines its own `_ModelRegistry` class: building one is not a vLLM plugin registry
    whose entries are not read, so its models are judged as before."""
    _write(tmp_path, {
        "own/__init__.py": "",
        "own/registry.py": """
            class _ModelRegistry:
                def __init__(self, models=None):
                    self.models = dict(models or {})


            ModelRegistry = _ModelRegistry(dict(json_loaded=None))
        """,
        "own/model.py": TIED.format(name="OwnForCausalLM", **NO_PP),
    })
    found, unjudged = _check(tmp_path, "own")
    assert found == {("model.py", "PPA101")}
    assert not unjudged

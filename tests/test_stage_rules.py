"""The stage-boundary and runner rules (PPA405 to PPA409) on variants their cases do not hold:
what they cannot read is listed as not judged, and what changes the verdict is read from the code
it is in (another module, the layer class, the parent's branch)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"

CARRIED_MODEL = '''
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers
from vllm.sequence import IntermediateTensors
{layer_import}


class Model:
    def __init__(self, config):
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, {layer_fn}, prefix="layers")

    def forward(self, positions, intermediate_tensors=None):
        hidden_states = positions if get_pp_group().is_first_rank else intermediate_tensors["hidden_states"]
        topk_indices = None
        for i in range(self.start_layer, self.end_layer):
            hidden_states, topk_indices = self.layers[i](positions, hidden_states, topk_indices)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({{"hidden_states": hidden_states}})
        return hidden_states
'''

LAYERS = '''
class Layer:
    def __init__(self, prefix=""):
        self.prefix = prefix

    def forward(self, positions, hidden_states, prev_topk_indices):
        {body}
        return hidden_states, prev_topk_indices
'''


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    return root


def _check(root: Path, path: str = "."):
    r = run_cli("check", path, "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA406", cwd=root)
    assert r.rc in (0, 1), r.stderr
    return r


def test_a_layer_class_that_cannot_be_read_is_not_judged(tmp_path):
    """Layers built by a factory function: whether they take the carried value as it comes is not
    read, so the restart is listed as not judged (not reported, not passed)."""
    root = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": "def build_layer(prefix):\n    return None\n",
        "pkg/model.py": CARRIED_MODEL.format(layer_import="from .layers import build_layer",
                                             layer_fn="build_layer"),
    })
    r = _check(root)
    assert r.json() == []
    nj = r.not_judged()
    assert [(Path(d["filename"]).name, d["location"]["row"], d["rule"], d["reason"]) for d in nj] == [
        ("model.py", 14, "PPA406", "receiver-unresolved")], nj
    assert "topk_indices" in nj[0]["detail"]


def test_the_layer_class_in_another_module_decides(tmp_path):
    """The layer class is read from the module it is defined in: a layer that tests the value (a
    missing one has its own path) silences the restart; one that uses it as it comes does not."""
    files = {"pkg/__init__.py": "",
             "pkg/model.py": CARRIED_MODEL.format(layer_import="from .layers import Layer",
                                                  layer_fn="lambda prefix: Layer(prefix=prefix)")}
    tested = _write(tmp_path / "tested", {**files, "pkg/layers.py": LAYERS.format(
        body="if prev_topk_indices is None:\n            prev_topk_indices = []")})
    r = _check(tested)
    assert r.json() == [] and r.not_judged() == [], r.stdout
    used = _write(tmp_path / "used", {**files, "pkg/layers.py": LAYERS.format(body="prev_topk_indices.copy()")})
    r = _check(used)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("model.py", 14)], r.stdout
    # the same verdict when the model file is named alone
    r = _check(used, "pkg/model.py")
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("model.py", 14)], r.stdout


def test_a_parent_branch_named_by_the_override_is_kept(tmp_path):
    """PPA409: an override that names what the parent's rank branch is about (its test's keys)
    does that work its own way; one that names none of it is reported."""
    parent = '''
    from vllm.distributed import get_pp_group


    class TextForCausalLM:
        def load_weights(self, weights):
            params = dict(self.named_parameters())
            for name, w in weights:
                if get_pp_group().is_last_rank and name == "model.embed_tokens.weight":
                    params["lm_head.weight"].data = w
                params[name].data = w
    '''
    child = '''
    from .base import TextForCausalLM


    class ChildForCausalLM(TextForCausalLM):
        def load_weights(self, weights):
            params = dict(self.named_parameters())
            for name, w in weights:
                {extra}params[name].data = w
    '''
    keeps = _write(tmp_path / "keeps", {"pkg/__init__.py": "", "pkg/base.py": parent, "pkg/child.py": child.format(
        extra='if name == "model.embed_tokens.weight" and "lm_head.weight" in params:\n'
              '                    params["lm_head.weight"].data = w\n                ')})
    drops = _write(tmp_path / "drops", {"pkg/__init__.py": "", "pkg/base.py": parent,
                                        "pkg/child.py": child.format(extra="")})
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA409")
    r = run_cli(*args, cwd=keeps)
    assert r.rc == 0 and r.json() == [], r.stdout
    r = run_cli(*args, cwd=drops)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("child.py", 5)], r.stdout


def test_an_override_whose_base_cannot_be_read_is_not_judged(tmp_path):
    """PPA409: an override of a base the run cannot read (a module outside the analysed tree) is
    listed as not judged: whether the base has a branch for some ranks is not known."""
    child = '''
    from other_pkg.base import TextForCausalLM


    class ChildForCausalLM(TextForCausalLM):
        def load_weights(self, weights):
            params = dict(self.named_parameters())
            for name, w in weights:
                params[name].data = w
    '''
    root = _write(tmp_path, {"pkg/__init__.py": "", "pkg/child.py": child})
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA409", cwd=root)
    assert r.rc in (0, 1), r.stderr
    assert r.json() == [], r.stdout
    nj = r.not_judged()
    assert [(Path(d["filename"]).name, d["location"]["row"], d["rule"]) for d in nj] == [
        ("child.py", 5, "PPA409")], nj
    assert "ChildForCausalLM.load_weights" in nj[0]["detail"]


PROXY_MODEL = '''
from sglang.srt.model_executor.forward_batch_info import PPProxyTensors


class PluginModel:
    def forward(self, positions, pp_proxy_tensors=None):
        if not self.pp_group.is_first_rank:
            return pp_proxy_tensors["aux_hidden_states"]
        return PPProxyTensors({"hidden_states": positions})
'''


def test_proxy_keys_without_the_runner_are_not_judged(tmp_path):
    """PPA410: a plugin checked without the engine's runner: which proxy buffers the runner
    allocates is not read, so the read is listed as not judged (engine-fact-unknown)."""
    root = _write(tmp_path, {"plug/__init__.py": "", "plug/model.py": PROXY_MODEL})
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA410", cwd=root)
    assert r.rc in (0, 1), r.stderr
    assert r.json() == [], r.stdout
    assert [(Path(d["filename"]).name, d["location"]["row"], d["reason"]) for d in r.not_judged()] == [
        ("model.py", 7, "engine-fact-unknown")]


def test_proxy_keys_are_read_from_the_runner_of_the_tree(tmp_path):
    """PPA410: the same plugin with the engine's runner beside it: a key the runner allocates
    only under a condition of the model's config is listed as not judged (config-condition, the
    condition named), one it never allocates is reported."""
    runner = '''
    def allocate(n, fold):
        pp_proxy_tensors = {"hidden_states": zeros(n)}
        if fold:
            pp_proxy_tensors["aux_hidden_states"] = zeros(n)
        return pp_proxy_tensors
    '''
    files = {"plug/__init__.py": "", "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
             "sglang/srt/model_executor/__init__.py": "", "sglang/srt/model_executor/forward_batch_info.py":
             "class PPProxyTensors:\n    pass\n", "sglang/srt/model_executor/buffers.py": runner}
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
            "--select", "PPA410")
    ok = _write(tmp_path / "ok", {**files, "plug/model.py": PROXY_MODEL})
    r = run_cli(*args, cwd=ok)
    assert r.rc == 0 and r.json() == [], r.stdout
    assert [(d["reason"], d["location"]["row"]) for d in r.not_judged()] == [("config-condition", 7)], r.stdout
    assert r.not_judged()[0]["detail"].endswith("it does only when fold"), r.stdout
    bad = _write(tmp_path / "bad", {**files, "plug/model.py": PROXY_MODEL.replace('"aux_hidden_states"]', '"aux"]')})
    r = run_cli(*args, cwd=bad)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("model.py", 7)], r.stdout


def test_proxy_keys_of_a_graph_runner_attribute_are_read(tmp_path):
    """PPA410: SGLang 0.5.1 forks allocate the proxies as an attribute of their graph runner,
    under a test of the pipeline's size (`if self.pp_size > 1: self.pp_proxy_tensors = {...}`,
    cuda_graph_runner.py): the keys it allocates are read there (the read is fine), a key it
    lacks is reported."""
    runner = '''
    class CudaGraphRunner:
        def __init__(self, n):
            if self.pp_size > 1:
                self.pp_proxy_tensors = {
                    "hidden_states": zeros(n),
                    "aux_hidden_states": zeros(n),
                }
    '''
    files = {"plug/__init__.py": "", "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
             "sglang/srt/model_executor/__init__.py": "", "sglang/srt/model_executor/forward_batch_info.py":
             "class PPProxyTensors:\n    pass\n", "sglang/srt/model_executor/cuda_graph_runner.py": runner}
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
            "--select", "PPA410")
    r = run_cli(*args, cwd=_write(tmp_path / "ok", {**files, "plug/model.py": PROXY_MODEL}))
    assert r.rc == 0 and r.json() == [] and r.not_judged() == [], r.stdout
    bad = _write(tmp_path / "bad", {**files, "plug/model.py": PROXY_MODEL.replace('"aux_hidden_states"]', '"aux"]')})
    r = run_cli(*args, cwd=bad)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("model.py", 7)], r.stdout


def test_the_draft_layer_id_fix_is_unsafe_and_keeps_the_file(tmp_path):
    """PPA411: the fix (total layer count for the stage count) is applied only with
    `--unsafe-fixes`, across the lines of the call, and what it writes is silent."""
    head = '''
    class EagleForCausalLM:
        def __init__(self, vllm_config, prefix=""):
            target_layer_num = vllm_config.model_config.get_num_layers(
                vllm_config.parallel_config
            )
            self.model = Model(vllm_config=vllm_config, start_layer_id=target_layer_num)
    '''
    root = _write(tmp_path, {"pkg/__init__.py": "", "pkg/head.py": head})
    text = run_cli("check", ".", "--src", STUBS, "--no-cache", "--select", "PPA411", cwd=root).stdout
    # like ruff: an unsafe fix is not "fixable with --fix"; it is counted as hidden
    assert "[*]" not in text and "fixable with" not in text, text
    assert text.rstrip().endswith("1 hidden fix can be enabled with the `--unsafe-fixes` option."), text
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA411")
    r = run_cli(*args, "--fix", cwd=root)
    # the JSON calls fixable what `--fix` with the same options applies: the unsafe fix is hidden
    assert [(f["location"]["row"], f["fix"]) for f in r.json()] == [(3, None)], r.stdout
    assert r.json()[0]["help"].endswith("(1 hidden fix can be enabled with the `--unsafe-fixes` option)")
    assert "get_num_layers(" in (root / "pkg/head.py").read_text()
    r = run_cli(*args, "--fix", "--unsafe-fixes", cwd=root)
    assert r.rc == 0, r.stdout
    text = (root / "pkg/head.py").read_text()
    assert "target_layer_num = vllm_config.model_config.get_total_num_hidden_layers()\n" in text, text
    assert run_cli(*args, cwd=root).json() == []


def test_a_drafter_test_without_a_registry_is_not_judged(tmp_path):
    """PPA412: whether a module holds drafters is read from the model registry of its package;
    without one, its first-rank branch is listed as not judged (not reported, not passed)."""
    mtp = '''
    import torch.nn as nn
    from vllm.distributed import get_pp_group


    class Predictor(nn.Module):
        def forward(self, hidden_states, intermediate_tensors=None):
            if get_pp_group().is_first_rank:
                return hidden_states
            else:
                assert intermediate_tensors is not None
                return intermediate_tensors["hidden_states"]
    '''
    root = _write(tmp_path, {"plug/__init__.py": "", "plug/mtp.py": mtp})
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA412", cwd=root)
    assert r.rc in (0, 1), r.stderr
    assert r.json() == [], r.stdout
    assert [(Path(d["filename"]).name, d["location"]["row"], d["reason"]) for d in r.not_judged()] == [
        ("mtp.py", 7, "engine-fact-unknown")], r.stdout


def test_a_declared_flag_without_a_raise_does_not_make_the_drop_a_finding(tmp_path):
    """PPA413: the runner's drop is reported only when a model that declares the raw-token flag
    raises without the ids; a wrapper that only declares it (its language model reads the ids on
    the first rank) leaves the drop alone."""
    runner = '''
    from vllm.distributed import get_pp_group


    class Runner:
        def __init__(self):
            self.is_first_pp_rank = get_pp_group().is_first_rank

        def step(self, model_inputs):
            if not self.is_first_pp_rank:
                model_inputs["input_ids"] = None
            return model_inputs
    '''
    model = '''
    class Wrapper:
        requires_raw_input_tokens = True

        def forward(self, input_ids, positions):
            {body}
            return positions
    '''
    base = {"rt/__init__.py": "", "rt/worker.py": runner, "rt/models/__init__.py": "",
            "rt/models/wrap/__init__.py": ""}
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA413")
    quiet = _write(tmp_path / "quiet", {**base, "rt/models/wrap/model.py": model.format(body="pass")})
    r = run_cli(*args, cwd=quiet)
    assert r.rc == 0 and r.json() == [], r.stdout
    loud = _write(tmp_path / "loud", {**base, "rt/models/wrap/model.py": model.format(
        body='if input_ids is None:\n                raise ValueError("needs the ids")')})
    r = run_cli(*args, cwd=loud)
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("worker.py", 10)], r.stdout


# SGLang 0.4.6 and 0.5.1 forks' `server_args.py`: no speculative decoding under pipeline parallelism
REFUSES_EVERY_ALGORITHM = '''
class ServerArgs:
    def check_server_args(self):
        if self.pp_size > 1:
            assert (
                self.disable_overlap_schedule
                and self.speculative_algorithm is None
            ), "Pipeline parallelism is not compatible with speculative decoding."
'''


def test_a_capture_setter_is_judged_by_what_the_engine_runs_under_pp(tmp_path):
    """PPA414: the setter of an EAGLE-3 drafter's layers is reported when the engine's code lets
    EAGLE-3 run under PP, left alone when the check the engine calls under `pp_size > 1` allows
    only EAGLE (SGLang 0.5.23), and listed as not judged when the engine's code says nothing about
    it (a fork whose drafters may not run under PP at all)."""
    model = '''
    from vllm.distributed import get_pp_group


    class Model:
        def forward(self, hidden):
            for i in range(self.start_layer, self.end_layer):
                if i in self.layers_to_capture:
                    hidden += 1
            return hidden


    class ForCausalLM:
        def set_eagle3_layers_to_capture(self, layer_ids):
            if not get_pp_group().is_last_rank:
                return
            self.model.layers_to_capture = list(layer_ids)
    '''
    hook = '''
    def check_pipeline_parallel_compat(cfg):
        if cfg.speculative_algorithm is not None:
            assert cfg.speculative_algorithm.upper() == "EAGLE"


    def check_server_args(cfg):
        if cfg.pp_size > 1:
            check_pipeline_parallel_compat(cfg)
    '''
    base = {"eng/__init__.py": "", "eng/models/__init__.py": "", "eng/models/m.py": model}
    args = ("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
            "--select", "PPA414")
    r = run_cli(*args, cwd=_write(tmp_path / "open", base))
    assert [(d["reason"], d["location"]["row"]) for d in r.not_judged()] == [("engine-fact-unknown", 14)], r.stdout
    assert [d for d in r.all_json() if d.get("name") != "not-judged"] == [], r.stdout
    allowed = hook.replace('"EAGLE"', '"EAGLE3"')
    r = run_cli(*args, cwd=_write(tmp_path / "allowed", {**base, "eng/hook.py": allowed}))
    assert [(Path(f["filename"]).name, f["location"]["row"]) for f in r.json()] == [("m.py", 14)], r.stdout
    r = run_cli(*args, cwd=_write(tmp_path / "refused", {**base, "eng/hook.py": hook}))
    assert r.rc == 0 and r.json() == [] and r.not_judged() == [], r.stdout
    # SGLang 0.5.1 forks: `assert ... and self.speculative_algorithm is None` under `pp_size > 1`
    # refuses every drafter under PP
    every = REFUSES_EVERY_ALGORITHM
    r = run_cli(*args, cwd=_write(tmp_path / "every", {**base, "eng/server_args.py": every}))
    assert r.rc == 0 and r.json() == [] and r.not_judged() == [], r.stdout
    r = run_cli(*args, cwd=_write(tmp_path / "other", {**base, "eng/server_args.py": every.replace(
        "self.speculative_algorithm is None", "self.speculative_algorithm is not None")}))
    assert [(d["reason"], d["location"]["row"]) for d in r.not_judged()] == [("engine-fact-unknown", 14)], r.stdout



def test_a_drafter_the_engine_refuses_under_pp_is_not_an_entry_point(tmp_path):
    """A class named as a draft model is judged as not run under PP (nothing said of it) when
    the engine asserts, under `pp_size > 1`, that no speculative algorithm is set (SGLang 0.4.6
    and 0.5.1 forks' `server_args.py`); without that assert PPA202 lists it as not judged."""
    import shutil

    case = REPO / "rules" / "PPA202" / "cases" / "wrapper_without_proxy"
    refusal = REFUSES_EVERY_ALGORITHM
    args = ("check", "mysgl", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
            "--select", "PPA202")
    verdicts = {}
    for name, test in (("open", "is not None"), ("refused", "is None")):
        root = tmp_path / name
        shutil.copytree(case, root, ignore=shutil.ignore_patterns("__pycache__"))
        (root / "mysgl" / "srt" / "server_args.py").write_text(
            textwrap.dedent(refusal).replace("is None", test), encoding="utf-8")
        r = run_cli(*args, cwd=root)
        verdicts[name] = ([Path(f["filename"]).name for f in r.json()],
                          [(Path(d["filename"]).name, d["reason"]) for d in r.not_judged()])
    assert verdicts["open"] == (["mimo.py"], [("mimo_mtp.py", "engine-fact-unknown")]), verdicts
    assert verdicts["refused"] == (["mimo.py"], []), verdicts



def test_the_worker_read_is_reported_only_for_a_model_that_sends_nothing(tmp_path):
    """PPA415 counts a model whose `forward` takes no `pp_proxy_tensors` only when it serves
    generation and runs no code that builds a `PPProxyTensors`: an embedding-only model (the
    worker's embedding path) and a wrapper around a staged model (PPA202's) leave the line alone."""
    import shutil

    case = REPO / "rules" / "PPA415" / "cases" / "unrefused_model"
    args = ("check", "mysgl", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA415")
    models = case / "mysgl" / "srt" / "models"
    embed = '''
    import torch.nn as nn


    class Embedder(nn.Module):
        def forward(self, input_ids, positions, get_embedding=True):
            return [float(i) for i in input_ids]


    EntryClass = Embedder
    '''
    wrapper = '''
    import torch.nn as nn

    from mysgl.srt.models.staged import StagedForCausalLM


    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = StagedForCausalLM()

        def forward(self, input_ids, positions):
            return self.inner(input_ids, positions)


    EntryClass = Wrapper
    '''
    found = {}
    for name, extra in (("plain", {}), ("embed", {"embed.py": embed}), ("wrapper", {"wrapper.py": wrapper})):
        root = tmp_path / name
        shutil.copytree(case, root, ignore=shutil.ignore_patterns("__pycache__"))
        if extra:
            (root / "mysgl" / "srt" / "models" / "plain.py").unlink()
        for f, text in extra.items():
            (root / "mysgl" / "srt" / "models" / f).write_text(textwrap.dedent(text), encoding="utf-8")
        found[name] = [(Path(f["filename"]).name, f["code"]) for f in run_cli(*args, cwd=root).json()]
    assert models.is_dir() and found == {"plain": [("tp_worker.py", "PPA415")], "embed": [], "wrapper": []}, found



def test_what_cannot_be_read_of_a_forward_or_a_submodule_dict_is_listed(tmp_path):
    """No silent pass on an engine with no refusal: an entry class whose `forward` takes no
    `pp_proxy_tensors` but whose base is outside the analysed code (SGLang's
    `MultiModalityCausalLM(PreTrainedModel)`) is listed as not judged by PPA202, and a loader
    whose dict holds the parameters of a submodule whose class cannot be told (`self.inner =
    versions[v](config)`) by PPA402."""
    import shutil

    case = REPO / "rules" / "PPA202" / "cases" / "wrapper_without_proxy"
    ext = '''
    from transformers import PreTrainedModel

    from mysgl.srt.models.qwen2 import Qwen2Model, Qwen2ForCausalLM

    VERSIONS = {"2": Qwen2ForCausalLM}


    class ExtWrapper(PreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.model = Qwen2Model(config)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)


    class Dispatch:
        def __init__(self, config):
            self.inner = VERSIONS[config.version](config)

        def forward(self, input_ids, positions, pp_proxy_tensors=None):
            return self.inner(input_ids, positions, pp_proxy_tensors=pp_proxy_tensors)

        def load_weights(self, weights):
            params_dict = dict(self.inner.named_parameters())
            for name, w in weights:
                params_dict[name].copy_(w)


    EntryClass = [ExtWrapper, Dispatch]
    '''
    root = tmp_path / "tree"
    shutil.copytree(case, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "mysgl" / "srt" / "models" / "ext.py").write_text(textwrap.dedent(ext), encoding="utf-8")
    r = run_cli("check", "mysgl/srt/models/ext.py", "--src", STUBS, "--no-cache", "--output-format", "json",
                "--show-unresolved", "--select", "PPA202,PPA402", cwd=root)
    got = sorted((d["rule"], d["location"]["row"], d["reason"]) for d in r.not_judged())
    assert r.json() == [] and got == [("PPA202", 9, "module-not-found"), ("PPA402", 28, "receiver-unresolved")], \
        r.stdout


HELPER_GUARDED = '''
from vllm.model_executor.models.utils import make_layers


class Model:
    def __init__(self, config):
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: None, prefix="layers")

    def is_local(self, layer_id):
        return self.start_layer <= layer_id < self.end_layer

    def is_moe(self, layer_id):
        return layer_id in self.config.moe_layer_ids

    def mlps(self):
        out = []
        for layer_id in self.config.engram_layer_ids:
            if not self.is_local(layer_id):
                continue
            out.append(self.layers[layer_id].mlp)
        for layer_id in self.config.engram_layer_ids:
            if self.is_moe(layer_id):
                out.append(self.layers[layer_id].mlp)
        return out
'''


def test_a_config_id_read_behind_a_helper_is_not_judged(tmp_path):
    """PPA405: a read after ``if not self.is_local(i): continue`` depends on what the helper
    tests (its body names ``start_layer``): not judged; a helper whose body names nothing of the
    rank (``is_moe``) is no guard, and the read under it is reported."""
    root = _write(tmp_path, {"model.py": HELPER_GUARDED})
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA405", cwd=root)
    assert r.rc in (0, 1), r.stderr
    assert [(f["location"]["row"], f["code"]) for f in r.json()] == [(24, "PPA405")], r.stdout
    nj = r.not_judged()
    assert [(d["location"]["row"], d["reason"]) for d in nj] == [(21, "stage-guard")], nj
    assert "self.is_local(layer_id)" in nj[0]["detail"]


POSITION_FLAG = '''
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_layers


class Model:
    def __init__(self, config):
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: None, prefix="layers")

    def mlps(self, extra):
        reach = get_pp_group().is_last_rank
        if extra:
            reach = get_pp_group().is_first_rank
        out = []
        for layer_id in self.config.engram_layer_ids:
            if reach:
                out.append(self.layers[layer_id].mlp)
        if get_pp_group().is_last_rank and self.start_layer == 0:
            for layer_id in self.config.engram_layer_ids:
                out.append(self.layers[layer_id].mlp)
        return out
'''


def test_a_config_id_read_behind_an_opaque_position_flag_is_not_judged(tmp_path):
    """PPA405: a test of the pipeline position is no test of what a rank owns, but a flag set
    to one position test and, under a test, to another leaves ranks that cannot be said: the
    read behind it is not judged; a position test with a test of the layer range decides."""
    root = _write(tmp_path, {"model.py": POSITION_FLAG})
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA405", cwd=root)
    assert r.rc in (0, 1), r.stderr
    assert r.json() == [], r.stdout
    nj = r.not_judged()
    assert [(d["location"]["row"], d["reason"]) for d in nj] == [(18, "stage-guard")], nj
    assert "pipeline position" in nj[0]["detail"]


def test_proxy_keys_allocated_in_the_branches_of_a_config_test():
    """PPA410: a runner that assigns a dict literal in each branch of a config test allocates the
    key both literals hold on every call (a read of it is fine) and the other only when the test
    says (a read of it is listed as not judged, naming the condition); a key no branch allocates
    is reported."""
    case = REPO / "rules" / "PPA410" / "cases" / "conditional_alloc"
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA410", cwd=case)
    assert r.rc == 1, r.stderr
    assert [(f["location"]["row"], f["code"]) for f in r.json() if f["code"]] == [(16, "PPA410")], r.stdout
    nj = r.not_judged()
    assert [(d["location"]["row"], d["reason"]) for d in nj] == [(50, "config-condition")], r.stdout
    assert nj[0]["detail"].endswith("allocates the proxy buffer `\"residual\"` for this model: it does only "
                                    "when not fold_residual"), nj[0]["detail"]

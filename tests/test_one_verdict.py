"""One verdict per file: a file's findings do not depend on whether it is named or found in a
folder, on which rules are selected, on which unrelated files sit beside it, on the cache or on
``-j``; and a byte prefilter never turns down a file its rule would report.

The invariants run in process (:func:`lint`, what ``pp-attr-lint check`` does, without the
environment's packages) on every case folder: ``rules/*/cases/*``, ``fixtures/*`` and
``../shared/cases/*`` when that folder is there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import REPO

STUBS = REPO / "fixtures" / "ppstub"
SHARED_CASES = REPO.parent / "shared" / "cases"
UNRELATED = "from not_installed_pkg import Base\n\n\nclass Z(Base):\n    pass\n"


def _case_folders() -> list[Path]:
    out = sorted(p for p in (REPO / "rules").glob("*/cases/*") if p.is_dir())
    out += sorted(p for p in (REPO / "fixtures").iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if SHARED_CASES.is_dir():
        out += sorted(p for p in SHARED_CASES.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    return out


CASES = _case_folders()


def lint(paths, *, select=None, extend_select=None, cache_dir=None, jobs=None, prefilter=True, src=None) -> list[tuple]:
    """The findings of ``pp-attr-lint check PATHS`` as ``(path, row, column, code, message)``
    (``cache_dir=None``: ``--no-cache``; no environment packages: ``--python none``; ``src``:
    ``--src``, by default the stub vLLM, ``fixtures/ppstub``, for the rules' cases)."""
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.engine.check import cache_salt, check
    from pp_attr_lint.engine.parallel import jobs_for
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.files import discover

    paths = [Path(p) for p in paths]
    if src is None:  # the rules' cases run against the stub vLLM, as tests/test_rule_cases.py runs them
        src = [STUBS] if any(os.path.abspath(p).startswith(str(REPO / "rules")) for p in paths) else []
    cfg = Config()
    rules = select_rules(cfg, select, None, extend_select)
    files, errors = discover(paths, cfg.exclude)
    assert not errors
    explicit = {os.path.abspath(p) for p in paths if not p.is_dir()}
    off = {} if prefilter else {"prefilter": False}
    cache = Cache(Path(cache_dir) if cache_dir else Path("/nonexistent-cache"), cache_salt(rules, **off),
                  enabled=cache_dir is not None)
    result = check(files, rules, cache=cache, src=src, explicit=explicit, env_paths=[], jobs=jobs_for(jobs), **off)
    return sorted((os.path.abspath(f.path), f.row, f.column, f.code or f.name, f.message) for f in result.findings)


def _rel(findings, root: Path) -> list[tuple]:
    """``findings`` with paths relative to ``root``, and ``root`` named ``<root>`` in messages."""
    root = os.path.abspath(root)
    names = [root + os.sep, os.path.relpath(root) + os.sep]

    def msg(m):
        for n in names:
            m = m.replace(n, "<root>/")
        return m

    return sorted((os.path.relpath(f[0], root), *f[1:4], msg(f[4])) for f in findings)


def _codes():
    from pp_attr_lint.config import Config
    from pp_attr_lint.rule_registry import all_rules

    return [(r.code, r.default) for r in all_rules(Config().rule_files, None)]


# -- the bugs that started it -------------------------------------------------------------------


def test_select_ppa003_keeps_its_finding():
    case = REPO / "rules" / "PPA003" / "cases" / "host_pool"
    default = [f for f in lint([case]) if f[3] == "PPA003"]
    assert len(default) == 1
    assert lint([case], select=["PPA003"]) == default


def test_select_ppa301_keeps_both_findings():
    case = REPO / "rules" / "PPA301" / "cases" / "skipped_init"
    default = [f for f in lint([case]) if f[3] == "PPA301"]
    assert len(default) == 2
    assert lint([case], select=["PPA301"]) == default


_TWO_READS = '''class HostKVCache:
    def __init__(self, device_pool):
        self.device_pool = device_pool
        self.layer_num = device_pool.layer_num


class HostPool(HostKVCache):
    def load(self, layer_id):
        return layer_id - self.start_layer

    def last(self):
        return self.end_layer - 1
'''


def test_an_unrelated_file_with_an_unresolvable_base_changes_nothing(tmp_path):
    pkg = tmp_path / "tree" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "pools.py").write_text(_TWO_READS)
    (pkg / "zz_unrelated.py").write_text(UNRELATED)
    alone = lint([pkg / "pools.py"])
    assert [f[3] for f in alone] == ["PPA003", "PPA003"]
    assert lint([pkg / "pools.py", pkg / "zz_unrelated.py"]) == alone
    assert lint([tmp_path / "tree"]) == alone


_RANGE_UNSET = '''import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.range_start, self.range_end = 0, 4

    def forward(self, x):
        return x[self.start_layer:self.end_layer]
'''

# a file its prefilter passes (a `start_layer` read) holding a class that may set anything
# (`setattr` with a computed name) on a base from a package that is not installed
_CONFIG_BESIDE = '''from not_installed_pkg import PretrainedConfig

from .model import Model


class SomeConfig(PretrainedConfig):
    def __init__(self):
        for key in ("hidden_size", "rms_norm_eps"):
            setattr(self, key, getattr(self.language_config, key))


class Sub(Model):
    def first_layer(self):
        return self.model.start_layer
'''


def test_a_subclass_on_an_uninstalled_base_beside_changes_nothing(tmp_path):
    """A class whose MRO cannot be resolved because its base comes from a package that is not
    installed is no subclass of a class of the analysed code: named beside the file, it does not
    silence the file's PPA003 (it did: "a subclass may set it")."""
    pkg = tmp_path / "tree" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(_RANGE_UNSET)
    (pkg / "zz_config.py").write_text(_CONFIG_BESIDE)
    alone = [f for f in lint([pkg / "model.py"]) if f[3] == "PPA003"]
    assert [(f[1], f[3]) for f in alone] == [(10, "PPA003"), (10, "PPA003")]
    assert [f for f in lint([pkg / "model.py", pkg / "zz_config.py"]) if f[0] == alone[0][0]] == alone
    assert [f for f in lint([pkg]) if f[0] == alone[0][0]] == alone
    # a subclass that may set it, on a base of the analysed code, still keeps the rule silent
    (pkg / "zz_config.py").write_text(_CONFIG_BESIDE.replace("class SomeConfig(PretrainedConfig)",
                                                             "class SomeConfig(Model)"))
    assert [f for f in lint([pkg / "model.py", pkg / "zz_config.py"]) if f[3] == "PPA003"] == []


_TEXT = '''import torch.nn as nn


class TextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Module()


class TextForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = TextModel()
'''

_VL = '''import torch.nn as nn

from .text import TextForCausalLM


class VL(nn.Module):
    def __init__(self):
        super().__init__()
        self.language_model = TextForCausalLM()

    def get_input_embeddings(self):
        return self.language_model.embed_tokens
'''

_PATCH = "def patch(model):\n    model.embed_tokens = None\n"


def test_an_unresolved_store_in_another_file_changes_nothing(tmp_path):
    """``model.embed_tokens = None`` on a parameter of unknown class in another file (SGLang
    0.5.23's unit tests) silenced every PPA002 read of ``embed_tokens`` in a folder run, while the
    file named alone reported it.  Such a store counts in the reading file's own module only."""
    pkg = tmp_path / "tree" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "text.py").write_text(_TEXT)
    (pkg / "vl.py").write_text(_VL)
    (pkg / "zz_patch.py").write_text(_PATCH)
    alone = lint([pkg / "vl.py"])
    assert [(f[1], f[3]) for f in alone] == [(12, "PPA002")]
    assert [f for f in lint([pkg / "vl.py", pkg / "zz_patch.py"]) if f[0] == alone[0][0]] == alone
    assert [f for f in lint([pkg]) if f[0] == alone[0][0]] == alone
    # the same store in the reading file may be on a VL: precision over recall
    (pkg / "vl.py").write_text(_VL + "\n\n" + _PATCH)
    assert lint([pkg / "vl.py"]) == lint([pkg]) == []
    # so may one in a module the reading file imports, named or not
    (pkg / "vl.py").write_text(_VL.replace("    def get_input_embeddings(self):\n",
                                           "    def get_input_embeddings(self):\n"
                                           "        from .zz_patch import patch\n\n        patch(self)\n"))
    assert lint([pkg / "vl.py"]) == lint([pkg]) == []


# -- the invariants on every case folder ----------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cache_and_jobs_change_nothing(case, tmp_path):
    base = lint([case])
    assert lint([case], cache_dir=tmp_path / "c") == base, "cold cache"
    assert lint([case], cache_dir=tmp_path / "c") == base, "warm cache"
    assert lint([case], jobs=1) == base, "-j 1"


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_select_gives_the_rules_own_findings(case):
    base = lint([case])
    extended = lint([case], extend_select=["PPA002"])
    for code, default in _codes():
        want = [f for f in (base if default else extended) if f[3] == code]
        got = [f for f in lint([case], select=[code]) if f[3] == code]
        assert got == want, code


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_file_alone_as_in_the_tree(case):
    base = lint([case])
    for path in sorted(case.rglob("*.py")):
        p = os.path.abspath(path)
        want = [f for f in base if f[0] == p]
        got = [f for f in lint([path]) if f[0] == p]
        assert got == want, path


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_unrelated_file_beside_changes_nothing(case, tmp_path):
    copy = tmp_path / case.name
    shutil.copytree(case, copy, ignore=shutil.ignore_patterns("__pycache__"))
    src = [STUBS] if str(case).startswith(str(REPO / "rules")) else []
    base = _rel(lint([copy], src=src), copy)
    assert base == _rel(lint([case]), case)
    folders = sorted({p.parent for p in copy.rglob("*.py")})
    added = []
    for folder in folders:
        (folder / "zz_unrelated.py").write_text(UNRELATED)
        added.append(folder / "zz_unrelated.py")
    assert _rel(lint([copy], src=src), copy) == base, "in the folder"
    assert _rel(lint([copy, *added], src=src), copy) == base, "named beside it"


# -- the prefilters are sound ---------------------------------------------------------------------


def _prefilter_misses(tree: Path) -> list[str]:
    """Findings that checking with no prefilter gives a rule in a file whose bytes that rule's
    prefilter turns down (every rule, PPA002 too)."""
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.rule_api import index_spec, wants
    from pp_attr_lint.index.prefilter import make_rule_prefilter

    rules = select_rules(Config(), None, None, ["PPA002"])
    spec = index_spec(rules)
    hit = make_rule_prefilter(spec.wanting)
    by_code = {r.code: r for r in rules}
    misses = []
    masks: dict[str, int] = {}
    for path, row, col, code, _msg in lint([tree], extend_select=["PPA002"], prefilter=False):
        rule = by_code.get(code)
        if rule is None:
            continue
        if path not in masks:
            masks[path] = hit(Path(path).read_bytes())
        if not wants(spec, rule, masks[path]):
            misses.append(f"{code} {path}:{row}:{col}")
    return misses


def test_prefilters_are_sound_on_the_case_folders():
    misses = []
    for case in CASES:
        misses += _prefilter_misses(case)
    assert misses == []


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.21.0", "0.32.0"])
def test_prefilters_are_sound_on_a_release(version, tmp_path_factory):
    from conftest import fetch_wheel, unpack_python_sources

    tree = os.environ.get(f"PP_ATTR_LINT_TREE_{version.replace('.', '')}")
    if tree:  # an unpacked tree already at hand (its folder holding `vllm/`)
        root = Path(tree) / "vllm"
    else:
        root = unpack_python_sources(fetch_wheel(version), tmp_path_factory.mktemp(f"vllm{version}")) / "vllm"
    assert _prefilter_misses(root) == []


# -- prefilters that looked at the wrong class or the wrong file ---------------------------------

_INNER_AND_WRAPPER = '''import torch.nn as nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 4)


class TextForCausalLM(
    nn.Module,
    SupportsPP,
):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
'''


def _package(tmp_path, files: dict[str, str]) -> Path:
    tree = tmp_path / "tree"
    for name, text in files.items():
        p = tree / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tree


def _named_and_found(tree: Path, target: str, **kw):
    named = [f for f in lint([tree / target], **kw) if f[0] == str(tree / target)]
    found = [f for f in lint([tree], **kw) if f[0] == str(tree / target)]
    return named, found


def test_ppa201_prefilter_does_not_count_another_classs_hook(tmp_path):
    """The inner model's hook in the same file does not provide the wrapper's (vLLM 0.32.0's
    llama.py with `LlamaForCausalLM`'s assignment deleted)."""
    tree = _package(tmp_path, {"pkg/__init__.py": "", "pkg/text.py": _INNER_AND_WRAPPER})
    named, found = _named_and_found(tree, "pkg/text.py", src=[STUBS])
    assert [f[3] for f in named] == ["PPA201"]
    assert found == named


@pytest.mark.network
def test_ppa201_llama_without_its_hook_in_the_folder(tmp_path):
    """vLLM 0.32.0's `LlamaForCausalLM` with its hook assignment deleted: reported whether
    llama.py is named or its folder is checked."""
    from conftest import fetch_wheel, unpack_python_sources

    tree = os.environ.get("PP_ATTR_LINT_TREE_0320")
    if tree:
        root = tmp_path / "v"
        shutil.copytree(Path(tree) / "vllm", root / "vllm")
    else:
        root = unpack_python_sources(fetch_wheel("0.32.0"), tmp_path / "v")
    llama = root / "vllm" / "model_executor" / "models" / "llama.py"
    text = llama.read_text()
    hook = "        self.make_empty_intermediate_tensors = (\n            self.model.make_empty_intermediate_tensors\n        )\n"
    assert hook in text
    llama.write_text(text.replace(hook, ""))
    named = [f for f in lint([llama], select=["PPA201"]) if f[0] == str(llama)]
    found = [f for f in lint([llama.parent], select=["PPA201"]) if f[0] == str(llama)]
    assert [f[3] for f in named] == ["PPA201"]
    assert found == named


_INNER_LAYERS = '''import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_local_experts = 2


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.mlp = MoE()


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))
'''

_WRAPPER_LOOP = '''import torch.nn as nn

from .inner import TextModel


class ForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)

    def set_local_experts(self, n):
        for layer in self.model.layers:
            layer.mlp.n_local_experts = n
'''


def test_ppa103_wrapper_in_another_file_than_make_layers(tmp_path):
    tree = _package(tmp_path, {"pkg/__init__.py": "", "pkg/inner.py": _INNER_LAYERS, "pkg/wrapper.py": _WRAPPER_LOOP})
    named, found = _named_and_found(tree, "pkg/wrapper.py", src=[STUBS])
    assert [f[3] for f in named] == ["PPA103"]
    assert found == named


_PLUGIN = '''import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer


class Embedding(nn.Module):
    def __init__(self, num, dim):
        super().__init__()
        self.weight = [[0.0] * dim for _ in range(num)]


class MyModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        if get_pp_group().is_first_rank:
            self.embedding = Embedding(8, 4)
        else:
            self.embedding = PPMissingLayer()


class MyForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = MyModel(config)
        if get_pp_group().is_last_rank:
            if config.tie_word_embeddings:
                self.lm_head = self.model.embedding
            else:
                self.lm_head = Embedding(8, 4)
'''

_PLUGIN_WRAPPER = '''import torch.nn as nn
from vllm.distributed import get_pp_group

from .inner import Embedding, TextModel


class TiedForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = TextModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = (
                Embedding(8, 4)
                if not config.tie_word_embeddings
                else self.model.embed_tokens
            )
'''

_PLUGIN_INNER = '''import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer


class Embedding(nn.Module):
    def __init__(self, num, dim):
        super().__init__()
        self.weight = [[0.0] * dim for _ in range(num)]


class TextModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.embed_tokens = Embedding(8, 4) if get_pp_group().is_first_rank else PPMissingLayer()
'''


def test_ppa101_plugin_tied_head_on_a_name_of_its_own(tmp_path):
    """`self.lm_head = self.model.embedding`: a placeholder name the file assigns itself."""
    tree = _package(tmp_path, {"myplugin/__init__.py": "", "myplugin/model.py": _PLUGIN})
    named, found = _named_and_found(tree, "myplugin/model.py", src=[STUBS])
    assert [f[3] for f in named] == ["PPA101"]
    assert found == named


def test_ppa101_plugin_tied_head_into_another_files_model(tmp_path):
    """`lm_head = (... else self.model.embed_tokens)` in a file without `PPMissingLayer`."""
    tree = _package(tmp_path, {"myplugin/__init__.py": "", "myplugin/inner.py": _PLUGIN_INNER,
                               "myplugin/model.py": _PLUGIN_WRAPPER})
    named, found = _named_and_found(tree, "myplugin/model.py", src=[STUBS])
    assert [f[3] for f in named] == ["PPA101"]
    assert found == named


def test_no_prefilter_from_the_command_line():
    """`--no-prefilter` (hidden, for tests) parses and checks every file with every rule: on a
    case, what the filtered run reports and nothing it would miss."""
    from helpers import check_json

    case = REPO / "rules" / "PPA003" / "cases" / "host_pool"
    _, filtered = check_json(case, "--src", str(STUBS))
    _, unfiltered = check_json(case, "--src", str(STUBS), "--no-prefilter")
    key = lambda d: (d["filename"], d["location"]["row"], d["code"])  # noqa: E731
    assert sorted(map(key, unfiltered)) == sorted(map(key, filtered)) != []


def test_a_rules_bit_does_not_depend_on_the_other_rules():
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.index.prefilter import make_rule_prefilter
    from pp_attr_lint.rule_api import index_spec

    rules = select_rules(Config(), None, None, ["PPA002"])
    data = [p.read_bytes() for case in CASES for p in sorted(case.rglob("*.py"))]
    spec = index_spec(rules)
    hit = make_rule_prefilter(spec.wanting)
    masks = [hit(d) for d in data]
    for k, code in enumerate(spec.wanting_codes):
        alone = index_spec([r for r in rules if r.code == code])
        one = make_rule_prefilter(alone.wanting)
        assert [bool(one(d)) for d in data] == [bool(m >> k & 1) for m in masks], code


WRAPPER_OF_TWO = '''from torch import nn


class Plain(nn.Module):
    def __init__(self):
        super().__init__()


class Annotated(nn.Module):
    llm: nn.Module

    def __init__(self):
        super().__init__()


class Wrapper(nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.model = Plain() if flag else Annotated()

    def forward(self, ids):
        return self.model.llm.embed_tokens(ids)
'''


def test_the_reason_not_judged_does_not_depend_on_the_hash_seed(tmp_path):
    """A receiver with two candidate classes that fail for different reasons: the reason given
    is the same in every process, whatever order a set of classes iterates in."""
    import subprocess
    import sys

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(WRAPPER_OF_TWO)
    details = set()
    for seed in range(6):
        env = dict(os.environ, PYTHONHASHSEED=str(seed), NO_COLOR="1", PYTHONPATH=str(REPO))
        p = subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", "pkg", "--no-cache", "--python", "none",
                            "--show-unresolved", "--output-format", "json"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        import json

        got = [r["detail"] for r in json.loads(p.stdout) if r.get("code") is None and r["location"]["row"] == 22]
        assert got, p.stdout + p.stderr
        details.add(tuple(got))
    assert len(details) == 1, details

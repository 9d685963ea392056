"""Unit tests of the resolver on small packages written to tmp_path (real summaries, no mocks)."""

from __future__ import annotations

import fnmatch
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from pp_attr_lint.facts import default_settings
from pp_attr_lint.index.spec import IndexSpec
from pp_attr_lint.resolve import EXTERNAL, NONE_KEY, Factory, Resolver, Unresolved
from pp_attr_lint.workspace.cache import Cache
from pp_attr_lint.workspace.project import Project

ATTRS = frozenset({"start_layer", "end_layer"})
MODULE = (EXTERNAL, "torch.nn.Module")

INNER = """
    from torch import nn

    def make_layers(n, fn, prefix=""):
        return 0, n, nn.ModuleList()

    class Inner(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.start_layer, self.end_layer, self.layers = make_layers(4, None)

    class Wrapper(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.model = Inner(vllm_config=vllm_config)
"""


@pytest.fixture(scope="module")
def settings():
    return default_settings()


def make(tmp_path: Path, settings, files: dict[str, str]) -> Resolver:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    project = Project([tmp_path], IndexSpec(ATTRS), Cache(None, "", enabled=False))
    return Resolver(project, settings)


def init_owners(r: Resolver, key) -> list[str]:
    return [owner[1] for owner, _ in r.executed_inits(key)]


def method_scope(r: Resolver, key, name: str) -> dict:
    return r.class_record(key)["methods"][name]


# -- MRO -----------------------------------------------------------------------------------------
def test_mro_is_c3_for_a_diamond(tmp_path, settings):
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from torch import nn
        class A(nn.Module): pass
        class B(A): pass
        class C(A): pass
        class D(B, C): pass
    """})
    m = "pkg.m"
    assert r.mro((m, "D")) == [(m, "D"), (m, "B"), (m, "C"), (m, "A"), MODULE]


def test_mro_across_modules_and_known_external_bases(tmp_path, settings):
    r = make(tmp_path, settings, {
        "pkg/__init__.py": "",
        "pkg/interfaces.py": """
            from typing import Protocol
            class SupportsPP(Protocol):
                pass
        """,
        "pkg/m.py": """
            import torch.nn as nn
            from .interfaces import SupportsPP
            class Base(nn.Module): pass
            class Model(Base, SupportsPP): pass
        """,
    })
    assert r.mro(("pkg.m", "Model")) == [
        ("pkg.m", "Model"), ("pkg.m", "Base"), MODULE, ("pkg.interfaces", "SupportsPP"), (EXTERNAL, "typing.Protocol"),
    ]


def test_inconsistent_mro_is_unresolved(tmp_path, settings):
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from torch import nn
        class A(nn.Module): pass
        class B(A): pass
        class X(A, B): pass
    """})
    with pytest.raises(Unresolved):
        r.mro(("pkg.m", "X"))


def test_base_outside_the_index_is_unresolved(tmp_path, settings):
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from transformers import PreTrainedModel
        class HF(PreTrainedModel):
            def __init__(self, config):
                super().__init__(config)
    """})
    with pytest.raises(Unresolved):
        r.mro(("pkg.m", "HF"))
    with pytest.raises(Unresolved):
        r.attribute_status(("pkg.m", "HF"), "start_layer")


def test_inheritance_cycle_is_unresolved(tmp_path, settings):
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from .n import B
        class A(B): pass
    """, "pkg/n.py": """
        from .m import A
        class B(A): pass
    """})
    with pytest.raises(Unresolved):
        r.mro(("pkg.m", "A"))


# -- executed __init__ chains ---------------------------------------------------------------------
CHAIN = """
    from torch import nn

    class P(nn.Module):
        def __init__(self):
            super().__init__()
            self.start_layer, self.end_layer = 0, 4

    class Q(P):
        def __init__(self):
            super().__init__()
            self.q = 1

    class SuperQ(Q):
        def __init__(self):
            super(Q, self).__init__()          # skips Q.__init__, runs P.__init__

    class SuperP(P):
        def __init__(self):
            super(P, self).__init__()          # skips P.__init__: next is nn.Module

    class ExplicitP(Q):
        def __init__(self):
            P.__init__(self)                   # runs P.__init__ directly, skipping Q.__init__

    class ExplicitModule(P):
        def __init__(self):
            nn.Module.__init__(self)           # skips P.__init__

    class NoInit(Q):
        pass
"""


@pytest.fixture
def chain(tmp_path, settings):
    return make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/chain.py": CHAIN})


@pytest.mark.parametrize("cls, owners, status", [
    ("Q", ["Q", "P"], "present"),
    ("SuperQ", ["SuperQ", "P"], "present"),
    ("SuperP", ["SuperP"], "absent"),
    ("ExplicitP", ["ExplicitP", "P"], "present"),
    ("ExplicitModule", ["ExplicitModule"], "absent"),
    ("NoInit", ["Q", "P"], "present"),
])
def test_executed_inits_and_attribute_status(chain, cls, owners, status):
    key = ("pkg.chain", cls)
    assert init_owners(chain, key) == owners
    assert chain.attribute_status(key, "start_layer") == status
    assert chain.attribute_status(key, "end_layer") == status


def test_definition_points_at_the_executed_init(chain):
    w = chain.definition(("pkg.chain", "SuperQ"), "start_layer")
    assert w is not None and w.what == "P.__init__" and w.module == "pkg.chain"
    assert w.path.endswith("chain.py") and w.line == 7
    assert chain.definition(("pkg.chain", "SuperP"), "start_layer") is None


def test_init_calling_a_non_base_is_unresolved(tmp_path, settings):
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from torch import nn
        class Other(nn.Module):
            def __init__(self):
                super().__init__()
        class W(nn.Module):
            def __init__(self):
                Other.__init__(self)
    """})
    with pytest.raises(Unresolved):
        r.executed_inits(("pkg.m", "W"))


@pytest.mark.parametrize("body, status", [
    ("def __getattr__(self, name):\n    return 1", "unknown"),
    # torch.nn.Module's own shape for a name it does not hold: answers nothing
    ("def __getattr__(self, name):\n    \"\"\"Missing.\"\"\"\n    raise AttributeError(f'no {name}')", "absent"),
    ("def __getattr__(self, name):\n    raise AttributeError", "absent"),
    ("def __getattr__(self, name):\n    if name == 'start_layer':\n        return 0\n    raise AttributeError(name)",
     "unknown"),
    ("def __getattr__(self, name):\n    raise KeyError(name)", "unknown"),
    ("def __init__(self, name):\n    super().__init__()\n    setattr(self, name, 0)", "unknown"),
    ("def __init__(self, kv):\n    super().__init__()\n    self.__dict__.update(kv)", "unknown"),
    ("start_layer = 0", "present"),
    ("start_layer: int", "present"),
    ("@property\ndef start_layer(self):\n    return 0", "present"),
    ("def __init__(self):\n    super().__init__()\n    setattr(self, 'start_layer', 0)", "present"),
    ("def load(self):\n    self.start_layer = 0", "present"),
    ("def __init__(self):\n    super().__init__()\n    self.x = 0", "absent"),
    # vLLM 0.32's SupportsQuant.__new__ (vllm/model_executor/models/interfaces.py): attaches another
    # attribute and hands the instance to a classmethod only
    ("def __new__(cls, *args, **kwargs):\n    instance = super().__new__(cls)\n"
     "    instance.quant_config = None\n    cls._mapping(instance)\n    return instance", "absent"),
    ("def __new__(cls, *a, **k):\n    o = super().__new__(cls)\n    o.start_layer = 0\n    return o", "unknown"),
    ("def __new__(cls, *a, **k):\n    return object()", "unknown"),
    ("def __new__(cls, *a, **k):\n    o = super().__new__(cls)\n    helper(o)\n    return o", "unknown"),
    ("def __init__(self):\n    super().__init__()\n    init_range(self)", "unknown"),
], ids=["getattr", "getattr-raises", "getattr-raises-bare", "getattr-answers-then-raises", "getattr-raises-other",
        "setattr-computed", "dict-update", "class-attr", "annotation", "property",
        "setattr-literal", "other-method", "plain", "new-benign", "new-sets", "new-other", "new-helper",
        "init-passes-self"])
def test_attribute_status_class_shapes(tmp_path, settings, body, status):
    source = "from torch import nn\n\nclass W(nn.Module):\n" + textwrap.indent(body, "    ") + "\n"
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": source})
    assert r.attribute_status(("pkg.m", "W"), "start_layer") == status


# -- names and imports ----------------------------------------------------------------------------
@pytest.fixture
def imports(tmp_path, settings):
    return make(tmp_path, settings, {
        "pkg/__init__.py": "from .base import Base as Exported\n",
        "pkg/base.py": "from torch import nn\nclass Base(nn.Module):\n    pass\nAlias = Base\n",
        "pkg/sub/__init__.py": "from .. import base\nfrom ..base import Base\n",
        "pkg/sub/sibling.py": "class Sib:\n    pass\n",
        "pkg/sub/deep/__init__.py": "",
        "pkg/sub/deep/m.py": """
            from ...base import Base
            from ... import base as b
            from .. import sibling
            from ..sibling import Sib
            from . import nothing_here
            from .... import too_far
            import pkg.base as pb
            import pkg.sub.sibling
            from pkg import Exported
            from pkg.base import Alias
            from pkg.star import *
            from transformers import PreTrainedModel
        """,
        "pkg/star.py": "from .base import Base as StarBase\n",
    })


@pytest.mark.parametrize("name, want", [
    ("Base", ("class", "pkg.base", "Base")),
    ("b", ("module", "pkg.base")),
    ("sibling", ("module", "pkg.sub.sibling")),
    ("Sib", ("class", "pkg.sub.sibling", "Sib")),
    ("nothing_here", None),
    ("too_far", None),
    ("pb", ("module", "pkg.base")),
    ("pkg", ("module", "pkg")),
    ("Exported", ("class", "pkg.base", "Base")),
    ("Alias", ("class", "pkg.base", "Base")),
    ("StarBase", ("class", "pkg.base", "Base")),
    ("PreTrainedModel", ("external", "transformers.PreTrainedModel")),
    ("undefined", None),
])
def test_lookup_relative_imports_with_levels(imports, name, want):
    assert imports.lookup("pkg.sub.deep.m", name) == want


@pytest.mark.parametrize("dotted, want", [
    ("pb.Base", ("pkg.base", "Base")),
    ("pkg.sub.sibling.Sib", ("pkg.sub.sibling", "Sib")),
    ("pkg.base.Alias", ("pkg.base", "Base")),
    ("b.Base", ("pkg.base", "Base")),
    ("pkg.Exported", ("pkg.base", "Base")),
    ("PreTrainedModel", None),
    ("pb.Missing", None),
])
def test_resolve_class_dotted(imports, dotted, want):
    assert imports.resolve_class("pkg.sub.deep.m", dotted) == want


def test_relative_import_in_a_package_init_is_relative_to_the_package(imports):
    # in pkg/sub/__init__.py, `from .. import base` is pkg.base (level 2 from the package pkg.sub)
    assert imports.lookup("pkg.sub", "base") == ("module", "pkg.base")
    assert imports.lookup("pkg.sub", "Base") == ("class", "pkg.base", "Base")
    assert imports.lookup("pkg", "Exported") == ("class", "pkg.base", "Base")


# -- receivers ------------------------------------------------------------------------------------
RECEIVERS = INNER + """
    class Flat(nn.Module):
        def __init__(self, *, vllm_config):
            super().__init__()
            self.start_layer, self.end_layer, self.layers = make_layers(4, None)

    class Outer(nn.Module):
        def __init__(self, *, vllm_config, flat=False):
            super().__init__()
            self.lm = Wrapper(vllm_config=vllm_config)
            self.either = Flat(vllm_config=vllm_config) if flat else Wrapper(vllm_config=vllm_config)
            self.maybe = None
            if flat:
                self.maybe = Wrapper(vllm_config=vllm_config)

        def uses(self, other: Wrapper, plain):
            alias = self.lm
            return alias, other, plain
"""


@pytest.fixture
def receivers(tmp_path, settings):
    return make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": RECEIVERS})


def test_chain_candidates(receivers):
    r, m = receivers, "pkg.m"
    outer = (m, "Outer")
    uses = method_scope(r, outer, "uses")
    init = method_scope(r, outer, "__init__")
    assert r.chain_candidates(("self", "lm"), m, outer, init) == {(m, "Wrapper")}
    assert r.chain_candidates(("self", "lm", "model"), m, outer, init) == {(m, "Inner")}
    assert r.chain_candidates(("self", "either"), m, outer, init) == {(m, "Flat"), (m, "Wrapper")}
    # `self.maybe = None` in one branch: None is among the candidates (never a fix through it)
    assert r.chain_candidates(("self", "maybe"), m, outer, init) == {(m, "Wrapper"), NONE_KEY}
    assert r.chain_candidates(("alias",), m, outer, uses) == {(m, "Wrapper")}
    assert r.chain_candidates(("other",), m, outer, uses) == {(m, "Wrapper")}
    assert r.chain_candidates(("plain",), m, outer, uses) is None
    assert r.chain_candidates(("nowhere",), m, outer, uses) is None


def test_attr_candidates_and_wheres(receivers):
    r, m = receivers, "pkg.m"
    got = r.attr_candidates((m, "Wrapper"), "model")
    assert got is not None
    cands, wheres = got
    assert cands == {(m, "Inner")}
    assert [w.line for w in wheres] == [15]
    assert r.attr_candidates((m, "Wrapper"), "missing") is None


# -- registry -------------------------------------------------------------------------------------
def _registry_files(factory_in_project: bool) -> dict[str, str]:
    utils = ("def init_vllm_registered_model(vllm_config, *, prefix='', architectures=None):\n"
             "    raise NotImplementedError\n") if factory_in_project else "# the factory lives elsewhere\n"
    factory_import = ("from .utils import init_vllm_registered_model" if factory_in_project
                      else "from vllm.elsewhere import init_vllm_registered_model")
    return {
        "vllm/__init__.py": "",
        "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/models/__init__.py": "",
        "vllm/model_executor/models/utils.py": utils,
        "vllm/model_executor/models/registry.py": """
            _TEXT_GENERATION_MODELS = {
                "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),
                "Ambiguous": ("qwen3", "Qwen3ForCausalLM"),
                "Missing": ("does_not_exist", "Nope"),
            }
            _MULTIMODAL_MODELS = {
                "Ambiguous": ("qwen3", "Qwen3Model"),
                "Model": ("qwen3", "Qwen3Model"),
            }
            NOT_A_TABLE_MODELS = {"Hidden": ("qwen3", "Qwen3Model")}
        """,
        "vllm/model_executor/models/qwen3.py": INNER.replace("Inner", "Qwen3Model").replace("Wrapper", "Qwen3ForCausalLM"),
        "vllm/model_executor/models/vl.py": f"""
            from torch import nn
            {factory_import}

            class VL(nn.Module):
                def __init__(self, *, vllm_config):
                    super().__init__()
                    self.language_model = init_vllm_registered_model(
                        vllm_config=vllm_config, architectures=["Qwen3ForCausalLM"])
        """,
    }


@pytest.fixture
def factory(settings) -> Factory:
    (fac,) = [f for f in settings.factories if fnmatch.fnmatchcase("init_vllm_registered_model", f.name)]
    return fac.bound("vllm")


@pytest.mark.parametrize("arch, want", [
    ("Qwen3ForCausalLM", ("vllm.model_executor.models.qwen3", "Qwen3ForCausalLM")),
    ("Model", ("vllm.model_executor.models.qwen3", "Qwen3Model")),
    ("Ambiguous", None),  # two tables disagree: stay silent
    ("Missing", None),  # its module is not in the project
    ("Hidden", None),  # the table's name does not match `_*_MODELS`
    ("Unknown", None),
])
def test_registry_class(tmp_path, settings, factory, arch, want):
    r = make(tmp_path, settings, _registry_files(factory_in_project=False))
    assert r.registry_class(factory, arch) == want


def test_registry_without_registry_module(tmp_path, settings, factory):
    r = make(tmp_path, settings, {"pkg/__init__.py": ""})
    assert r.registry_class(factory, "Qwen3ForCausalLM") is None


def test_factory_imported_from_outside_resolves_through_the_registry(tmp_path, settings):
    r = make(tmp_path, settings, _registry_files(factory_in_project=False))
    m = "vllm.model_executor.models.vl"
    key = (m, "VL")
    scope = method_scope(r, key, "__init__")
    assert r.chain_candidates(("self", "language_model"), m, key, scope) == {
        ("vllm.model_executor.models.qwen3", "Qwen3ForCausalLM")}


def test_factory_defined_in_the_project_resolves_through_the_registry(tmp_path, settings):
    r = make(tmp_path, settings, _registry_files(factory_in_project=True))
    m = "vllm.model_executor.models.vl"
    key = (m, "VL")
    scope = method_scope(r, key, "__init__")
    assert r.chain_candidates(("self", "language_model"), m, key, scope) == {
        ("vllm.model_executor.models.qwen3", "Qwen3ForCausalLM")}


def test_a_renamed_package_resolves_through_its_own_registry(tmp_path, settings):
    """A fork that renames the package (Aphrodite: `aphrodite/model_executor/models/registry.py`,
    `init_aphrodite_registered_model`) keeps the shape: its factory reads its own registry."""
    files = {p.replace("vllm/", "aphrodite/"): t.replace("vllm", "aphrodite")
             for p, t in _registry_files(factory_in_project=True).items()}
    r = make(tmp_path, settings, files)
    m = "aphrodite.model_executor.models.vl"
    key = (m, "VL")
    scope = method_scope(r, key, "__init__")
    assert r.chain_candidates(("self", "language_model"), m, key, scope) == {
        ("aphrodite.model_executor.models.qwen3", "Qwen3ForCausalLM")}
    assert [e[1] for e in r.model_registry("aphrodite")][:2] == ["Qwen3ForCausalLM", "Ambiguous"]
    assert r.model_registry("vllm") is None


def test_a_class_named_like_the_factory_is_not_the_factory(tmp_path, settings):
    files = _registry_files(factory_in_project=False)
    files["vllm/model_executor/models/vl.py"] = """
        from torch import nn

        class init_vllm_registered_model(nn.Module):
            def __init__(self, *, vllm_config, architectures=None):
                super().__init__()

        class VL(nn.Module):
            def __init__(self, *, vllm_config):
                super().__init__()
                self.language_model = init_vllm_registered_model(
                    vllm_config=vllm_config, architectures=["Qwen3ForCausalLM"])
    """
    r = make(tmp_path, settings, files)
    m = "vllm.model_executor.models.vl"
    key = (m, "VL")
    scope = method_scope(r, key, "__init__")
    assert r.chain_candidates(("self", "language_model"), m, key, scope) == {(m, "init_vllm_registered_model")}


def test_factory_settings_can_be_replaced(tmp_path, settings):
    """Settings are plain data: without factories the call is not understood (stays silent)."""
    r = make(tmp_path, replace(settings, factories=()), _registry_files(factory_in_project=False))
    m = "vllm.model_executor.models.vl"
    key = (m, "VL")
    scope = method_scope(r, key, "__init__")
    assert r.chain_candidates(("self", "language_model"), m, key, scope) is None


def _nxt_chain(n: int) -> dict:
    """``Ci.nxt`` is ``C(i+1).nxt``, ..., up to ``Cn``, whose base cannot be resolved."""
    chain = ["from torch import nn", "from not_installed import Base", f"class C{n}(Base):",
             "    def __init__(self):", "        self.nxt = None"]
    for i in range(n - 1, -1, -1):
        chain += [f"class C{i}(nn.Module):", "    def __init__(self):", f"        self.peer = C{i + 1}()",
                  "        self.nxt = self.peer.nxt"]
    return {"pkg/__init__.py": "", "pkg/m.py": "\n".join(chain) + "\n"}


def test_an_attribute_question_gets_the_same_answer_at_any_depth(tmp_path, settings):
    """Asked at the start or deep in a chain of questions, `C4.nxt` is followed to the base that
    cannot be resolved: each attribute question has a budget of its own, so the answer one
    memoizes is the one the other would compute (the reasons a run gives do not depend on the
    order of its questions: `-j`, a file checked alone)."""
    files = _nxt_chain(12)
    key = ("pkg.m", "C4")
    fresh = make(tmp_path, settings, files)
    direct = fresh.attr_candidates(key, "nxt")
    direct_why = fresh.why
    assert direct is None and direct_why[0] == "module-not-found"
    r = make(tmp_path / "b", settings, files)
    assert r.attr_candidates(key, "nxt", depth=8) == direct and r.why == direct_why
    assert r.attr_candidates(key, "nxt") == direct and r.why == direct_why


def test_an_answer_cut_at_the_nesting_limit_is_not_memoized(tmp_path, settings):
    """More attribute questions nested than the resolver follows: the outer one is cut
    (`recursion-limit`), and that cut answer does not answer an inner question asked later."""
    from pp_attr_lint.resolve import _MAX_NESTED_ATTRS

    files = _nxt_chain(_MAX_NESTED_ATTRS + 8)
    r = make(tmp_path, settings, files)
    assert r.attr_candidates(("pkg.m", "C0"), "nxt") is None and r.why[0] == "recursion-limit"
    inner = ("pkg.m", f"C{_MAX_NESTED_ATTRS - 4}")
    assert r.attr_candidates(inner, "nxt") is None and r.why[0] == "module-not-found"


def test_a_memoized_unknown_status_keeps_its_own_reason(tmp_path, settings):
    """``attribute_status`` answers from its memo the second time it is asked; the reason it
    gives (``why``) is that question's, not the one left by whatever was asked in between (which
    differed between the processes of a ``-j 2`` run)."""
    r = make(tmp_path, settings, {"pkg/__init__.py": "", "pkg/m.py": """
        from torch import nn

        def setup(obj):
            obj.start_layer = 0

        class Passes(nn.Module):
            def __init__(self):
                super().__init__()
                setup(self)

        class Dynamic(nn.Module):
            def __getattr__(self, name):
                return 1
    """})
    passes, dynamic = ("pkg.m", "Passes"), ("pkg.m", "Dynamic")
    assert r.attribute_status(passes, "start_layer") == "unknown"
    first = r.why
    assert "passes `self` to a function" in first[1]
    assert r.attribute_status(dynamic, "start_layer") == "unknown"
    assert "__getattr__" in r.why[1]
    assert r.attribute_status(passes, "start_layer") == "unknown"
    assert r.why == first

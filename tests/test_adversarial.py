"""Adversarial regression corpus for PPA001 (~100 small packages).

Every case is the CONTROL package (InnerModel sets start_layer; WrapForCausalLM holds it as
``self.model`` and has no start_layer; VL reads ``self.language_model.start_layer``) plus a few
overridden files. Per case we pin
  (a) the number of PPA001 findings ``check --no-cache --output-format json .`` gives today, and
  (b) ground truth: pkg.user is imported against a stub torch (``STUB_TORCH``: nn.Module is a plain
      class) and ``VL(vllm_config=None)`` is built in a clean interpreter; a case with findings must
      raise an AttributeError that names start_layer there (precision). Cases whose import fails
      before the read carry ``no_run``; known false positives carry ``known_fp`` (strict xfail).
A case pinned at 0 findings with run-time outcome RAISES is a known miss (today: augassign_store).

Two stress cases are generated instead of stored: 1,000 reads in one file (speed, completeness)
and a 1,500-level subclass chain (no crash).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_cli


def D(text: str) -> str:
    """Dedent a triple-quoted source block (dropping the leading newline)."""
    return textwrap.dedent(text).lstrip("\n")


def _indent(text: str, n: int) -> str:
    return textwrap.indent(D(text), " " * n)


STUB_TORCH = {  # the stub torch of the original runs: nn.Module is a plain class, no attribute magic
    "torch/__init__.py": "",
    "torch/nn/__init__.py": D("""
        class Module:
            def __init__(self):
                pass
            def __getattr__(self, name):
                raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
    """),
}

HEAD = "import torch.nn as nn\nfrom .inner import InnerModel\n"
WRAP_CLASS = D('''
    class WrapForCausalLM(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.model = InnerModel(vllm_config=vllm_config)
''')
USER_HEAD = "import torch.nn as nn\nfrom .wrap import WrapForCausalLM\n"
VL_CLASS = D('''
    class VL(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.language_model = WrapForCausalLM(vllm_config=vllm_config)
''')
READ = "        assert self.language_model.start_layer >= 0\n"

# the baseline package: InnerModel sets start_layer, the wrapper holds it as .model, VL reads the wrapper's
CONTROL = {
    "pkg/__init__.py": "",
    "pkg/utils.py": D("""
        def make_layers(n, fn, prefix=''):
            return 0, n, [fn() for _ in range(n)]
    """),
    "pkg/inner.py": D('''
        import torch.nn as nn
        from .utils import make_layers
        class InnerModel(nn.Module):
            def __init__(self, *, vllm_config, prefix=""):
                super().__init__()
                self.start_layer, self.end_layer, self.layers = make_layers(4, lambda: None)
    '''),
    "pkg/wrap.py": HEAD + WRAP_CLASS,
    "pkg/user.py": USER_HEAD + VL_CLASS + READ,
}


def wrap(src: str) -> dict:
    """pkg/wrap.py = the usual two imports + SRC."""
    return {"pkg/wrap.py": HEAD + D(src)}


def wrap_init(lines: str) -> dict:
    """The control wrapper with LINES appended to its __init__."""
    return {"pkg/wrap.py": HEAD + WRAP_CLASS + _indent(lines, 8)}


def user_init(lines: str) -> dict:
    """The control VL with its read replaced by LINES (in __init__, after language_model is set)."""
    return {"pkg/user.py": USER_HEAD + VL_CLASS + _indent(lines, 8)}


def user(src: str) -> dict:
    """pkg/user.py = SRC."""
    return {"pkg/user.py": D(src)}



# ---------------------------------------------------------------------------------------------------
# machinery


@dataclass(frozen=True)
class Case:
    findings: int  # PPA001 findings the analyzer reports today
    runtime: str | None  # what `VL(vllm_config=None)` does under the stub torch: RAISES, OK or an exception name
    files: dict  # overrides of CONTROL: relative path -> text, None deletes the file
    root: str = ""  # folder the control package sits in (and the sys.path entry at run time)
    no_run: str | None = None  # why instantiating VL says nothing about the read
    known_fp: str | None = None  # a finding that does not raise at run time (precision test xfails)


RAISES = "raises"  # AttributeError that names start_layer
OK = "ok"


def case(findings, runtime, *overrides, root="", no_run=None, known_fp=None) -> Case:
    merged: dict = {}
    for o in overrides:
        merged.update(o)
    return Case(findings, runtime, merged, root, no_run, known_fp)


CASES: dict[str, Case] = {
    # module rebinds the wrapper name to another class that sets start_layer
    'alias_reassign': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            class WrapWithRange(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    self.start_layer = 0
            WrapForCausalLM = WrapWithRange
        """),
    ),
    # two star imports re-export the name; the later one (which sets start_layer) wins
    'all_star_reexport': case(0, OK,
        user("""
            import torch.nn as nn
            from .reex import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {
            'pkg/reex.py': D("""
                from .wrap import *
                from .wrap2 import *
            """),
            'pkg/wrap2.py': D("""
                import torch.nn as nn
                from .inner import InnerModel
                class WrapForCausalLM(nn.Module):
                    def __init__(self, **kw):
                        super().__init__()
                        self.start_layer = 0
            """),
        },
    ),
    # two roots hold `other`; the one beside pkg (a/) sets start_layer in the base
    'ambiguous_roots': case(0, OK,
        {
            'a/other/__init__.py': "",
            'a/other/base.py': D("""
                import torch.nn as nn
                class Base(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.start_layer = 0
            """),
            'a/pkg/wrap.py': HEAD + D("""
                from other.base import Base
                class WrapForCausalLM(Base):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = InnerModel(vllm_config=vllm_config)
            """),
            'b/other/__init__.py': "",
            'b/other/base.py': D("""
                import torch.nn as nn
                class Base(nn.Module):
                    def __init__(self):
                        super().__init__()
            """),
        },
        root='a',
    ),
    # two roots hold `other`; the one beside pkg (a/) does NOT set start_layer
    'ambiguous_roots2': case(1, RAISES,
        {
            'a/other/__init__.py': "",
            'a/other/base.py': D("""
                import torch.nn as nn
                class Base(nn.Module):
                    def __init__(self):
                        super().__init__()
            """),
            'a/pkg/wrap.py': HEAD + D("""
                from other.base import Base
                class WrapForCausalLM(Base):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = InnerModel(vllm_config=vllm_config)
            """),
            'b/other/__init__.py': "",
            'b/other/base.py': D("""
                import torch.nn as nn
                class Base(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.start_layer = 0
            """),
        },
        root='a',
    ),
    # annotated store `self.start_layer: int = 0` in __init__
    'annassign_store': case(0, OK,
        wrap_init("""
            self.start_layer: int = 0
        """),
    ),
    # bare class-level annotation `start_layer: int` (declares, never assigns)
    'augassign_store': case(0, RAISES,
        wrap("""
            class WrapForCausalLM(nn.Module):
                start_layer: int
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # relative imports that climb past the top-level package
    'beyond_top': case(0, None,
        user("""
            import torch.nn as nn
            from ...........wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        wrap("""
            from ....nothing import Foo
            from ... import bar
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        no_run='relative imports beyond the top-level package: pkg.user cannot be imported',
    ),
    # start_layer defined as a nested class in the wrapper body
    'class_body_def_start_layer_func': case(0, 'TypeError',
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                class start_layer: pass
        """),
    ),
    # class attribute start_layer assigned under an `if` in the class body
    'class_body_if': case(0, OK,
        wrap("""
            import os
            class WrapForCausalLM(nn.Module):
                if os.environ.get("X") is None:
                    start_layer = 0
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # class body imports start_layer from another module
    'class_body_import': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                from .consts import start_layer
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/consts.py': D("""
            start_layer = 0
        """)},
    ),
    # class attribute set by tuple unpacking in the class body
    'class_body_tuple': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                start_layer, end_layer = 0, 4
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # class decorator sets cls.start_layer
    'class_decorator': case(0, OK,
        wrap("""
            def add_range(cls):
                cls.start_layer = 0
                return cls
            @add_range
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # class body sets start_layer through locals()[name] in a loop
    'classattr_in_body_loop': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                for _n in ("start_layer", "end_layer"):
                    locals()[_n] = 0
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # classmethod factory returns the inner model, not the wrapper
    'classmethod_factory': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM.create(vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                @classmethod
                def create(cls, vllm_config):
                    return InnerModel(vllm_config=vllm_config)
        """),
    ),
    # baseline: wrapper without start_layer, VL reads it
    'control': case(1, RAISES),
    # base classes that import each other in a cycle
    'cycle_bases': case(0, None,
        wrap("""
            from .a import A
            class WrapForCausalLM(A):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {
            'pkg/a.py': D("""
                from .b import B
                class A(B):
                    pass
            """),
            'pkg/b.py': D("""
                from .a import A
                class B(A):
                    pass
            """),
        },
        no_run='circular base-class imports: ImportError when pkg.wrap is imported',
    ),
    # wrapper is a @dataclass with a start_layer field default
    'dataclass': case(0, None,
        wrap("""
            from dataclasses import dataclass
            @dataclass
            class WrapForCausalLM:
                start_layer: int = 0
                def __post_init__(self):
                    self.model = InnerModel(vllm_config=None)
        """),
        no_run='the dataclass __init__ rejects vllm_config=: TypeError before the read',
    ),
    # wrapper is a dataclasses.dataclass with a required start_layer field
    'dataclass_noinit_default': case(0, None,
        wrap("""
            import dataclasses
            @dataclasses.dataclass
            class WrapForCausalLM:
                vllm_config: object
                start_layer: int
                def __post_init__(self):
                    self.model = InnerModel(vllm_config=None)
        """),
        no_run='the dataclass needs a start_layer argument: TypeError before the read',
    ),
    # wrapper is a dataclass whose fields hold no start_layer: its instance holds the fields
    # and what __post_init__ stores, so the read fails (the decorator adds no other attribute)
    'dataclass_without_the_field': case(1, RAISES,
        wrap("""
            from dataclasses import dataclass
            @dataclass
            class WrapForCausalLM:
                vllm_config: object = None
                def __post_init__(self):
                    self.model = InnerModel(vllm_config=self.vllm_config)
        """),
    ),
    # start_layer is a custom descriptor on the wrapper class
    'descriptor': case(0, OK,
        wrap("""
            class Delegate:
                def __get__(self, obj, typ=None):
                    return obj.model.start_layer
            class WrapForCausalLM(nn.Module):
                start_layer = Delegate()
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # store through self.__dict__['start_layer']
    'dict_item': case(0, OK,
        wrap_init("""
            self.__dict__["start_layer"] = 0
        """),
    ),
    # store through self.__dict__.update(start_layer=...)
    'dict_update': case(0, OK,
        wrap_init("""
            self.__dict__.update(start_layer=0)
        """),
    ),
    # store through exec('self.start_layer = 0')
    'exec_set': case(0, OK,
        wrap_init("""
            exec("self.start_layer = 0")
        """),
    ),
    # wrapper subclasses InnerModel and calls InnerModel.__init__ explicitly
    'explicit_base_init': case(0, OK,
        wrap("""
            class WrapForCausalLM(InnerModel):
                def __init__(self, *, vllm_config, prefix=""):
                    InnerModel.__init__(self, vllm_config=vllm_config)
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # store as a for-loop target `for self.start_layer in ...`
    'for_target_store': case(0, OK,
        wrap_init("""
            for self.start_layer in range(1):
                pass
        """),
    ),
    # base is `Base[int]` (Generic) whose __init__ sets start_layer
    'generic_subscript_base': case(0, OK,
        wrap("""
            from .base import Base
            class WrapForCausalLM(Base[int]):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/base.py': D("""
            from typing import Generic, TypeVar
            import torch.nn as nn
            T = TypeVar("T")
            class Base(nn.Module, Generic[T]):
                def __init__(self):
                    super().__init__()
                    self.start_layer = 0
        """)},
    ),
    # read through getattr(obj, 'start_layer', default)
    'getattr3': case(0, OK,
        user_init("""
            x = getattr(self.language_model, "start_layer", 0)
        """),
    ),
    # wrapper __getattr__ delegates to the inner model
    'getattr_method': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                def __getattr__(self, n):
                    try:
                        return super().__getattr__(n)
                    except AttributeError:
                        return getattr(self.model, n)
        """),
    ),
    # wrapper __getattribute__ answers start_layer
    'getattribute_method': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                def __getattribute__(self, n):
                    if n == "start_layer":
                        return 0
                    return super().__getattribute__(n)
        """),
    ),
    # a function rebinds the wrapper name via `global` at import time
    'global_rebind_in_function': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            class Other(nn.Module):
                def __init__(self, **kw):
                    super().__init__()
                    self.start_layer = 0
            def _patch():
                global WrapForCausalLM
                WrapForCausalLM = Other
            _patch()
        """),
    ),
    # read guarded by `hasattr(...) and ...`
    'hasattr_and': case(0, OK,
        user_init("""
            x = hasattr(self.language_model, "start_layer") and self.language_model.start_layer
        """),
    ),
    # read after `if not hasattr(...): return`
    'hasattr_early_return': case(0, OK,
        user_init("""
            if not hasattr(self.language_model, "start_layer"):
                return
            x = self.language_model.start_layer
        """),
    ),
    # read guarded by a hasattr ternary
    'hasattr_ternary': case(0, OK,
        user_init("""
            x = self.language_model.start_layer if hasattr(self.language_model, "start_layer") else 0
        """),
    ),
    # module-level helper called from __init__ stores m.start_layer
    'helper_function': case(0, OK,
        wrap("""
            def init_range(m):
                m.start_layer, m.end_layer = 0, 4
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    init_range(self)
        """),
    ),
    # runtime branch imports a different wrapper that sets start_layer
    'if_import': case(0, OK,
        user("""
            import torch.nn as nn
            import os
            if os.environ.get('X'):
                from .wrap import WrapForCausalLM
            else:
                from .wrap_rt import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {'pkg/wrap_rt.py': D("""
            import torch.nn as nn
            from .inner import InnerModel
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    self.start_layer = 0
        """)},
    ),
    # language_model is either the wrapper or the inner model (conditional expression)
    'ifexp_ctor': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            from .inner import InnerModel
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config) if vllm_config else InnerModel(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # wrapper name re-exported through an import cycle that defines nothing
    'import_cycle_reexport': case(0, None,
        user("""
            import torch.nn as nn
            from .a import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {
            'pkg/a.py': D("""
                from .b import WrapForCausalLM
            """),
            'pkg/b.py': D("""
                from .a import WrapForCausalLM
            """),
            'pkg/wrap.py': None,
        },
        no_run='the re-export cycle never defines the class: ImportError at import',
    ),
    # base __init_subclass__ sets cls.start_layer
    'init_subclass': case(0, OK,
        wrap("""
            from .base import Base
            class WrapForCausalLM(Base):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/base.py': D("""
            import torch.nn as nn
            class Base(nn.Module):
                def __init_subclass__(cls, **kw):
                    super().__init_subclass__(**kw)
                    cls.start_layer = 0
        """)},
    ),
    # base __init_subclass__ uses setattr(cls, 'start_layer', ...)
    'init_subclass_setattr': case(0, OK,
        wrap("""
            from .base import Base
            class WrapForCausalLM(Base):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/base.py': D("""
            import torch.nn as nn
            class Base(nn.Module):
                def __init_subclass__(cls, **kw):
                    setattr(cls, "start_layer", 0)
        """)},
    ),
    # read guarded by isinstance(..., InnerModel)
    'isinstance_guard': case(0, OK,
        user_init("""
            from .inner import InnerModel
            if isinstance(self.language_model, InnerModel):
                x = self.language_model.start_layer
        """),
    ),
    # setattr(self, 'start_layer', ...) inside a list display
    'lambda_store_via_setattr_comp': case(0, OK,
        wrap_init("""
            [setattr(self, "start_layer", 0)]
        """),
    ),
    # local variable rebinds the wrapper name to InnerModel before the call
    'local_shadow_assign': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            from .inner import InnerModel
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    WrapForCausalLM = InnerModel
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # metaclass __call__ sets start_layer on every instance
    'metaclass': case(0, OK,
        wrap("""
            class Meta(type(nn.Module)):
                def __call__(cls, *a, **k):
                    o = super().__call__(*a, **k); o.start_layer = 0; return o
            class WrapForCausalLM(nn.Module, metaclass=Meta):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # a class defined inside VL.__init__ shadows the imported wrapper
    'method_local_class': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    class WrapForCausalLM(nn.Module):
                        def __init__(self, *, vllm_config, prefix=""):
                            super().__init__()
                            self.start_layer = 0
                            self.model = None
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # mixin from another file sets start_layer via a helper method
    'mixin_other_file': case(0, OK,
        wrap("""
            from .mix import RangeMixin
            class WrapForCausalLM(RangeMixin, nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/mix.py': D("""
            class RangeMixin:
                def __init__(self, *a, **k):
                    super().__init__(*a, **k)
                    self._setup_range()
                def _setup_range(self):
                    self.start_layer = 0
        """)},
    ),
    # cooperative mixin in the same file sets start_layer
    'mixin_super': case(0, OK,
        wrap("""
            class RangeMixin:
                def __init__(self, *a, **k):
                    super().__init__(*a, **k)
                    self.start_layer = 0
            class WrapForCausalLM(RangeMixin, nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # module level `WrapForCausalLM.start_layer = 0` after the class
    'module_level_monkeypatch': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            WrapForCausalLM.start_layer = 0
        """),
    ),
    # module level setattr(WrapForCausalLM, 'start_layer', 0)
    'module_level_setattr': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            setattr(WrapForCausalLM, 'start_layer', 0)
        """),
    ),
    # user module rebinds the wrapper name after the class (before it runs)
    'module_shadow_after_class': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
            from .inner import InnerModel as WrapForCausalLM
        """),
    ),
    # second import rebinds the wrapper name to InnerModel
    'module_shadow_later_import': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            from .inner import InnerModel as WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # pkg/__init__.py monkeypatches the class attribute
    'monkeypatch_other_module': case(0, OK,
        {'pkg/__init__.py': D("""
            from . import wrap
            wrap.WrapForCausalLM.start_layer = 0
        """)},
    ),
    # user module monkeypatches the class attribute before VL
    'monkeypatch_user_module': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            WrapForCausalLM.start_layer = 0
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # closure inside __init__ stores self.start_layer
    'nested_func_store': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    def _set():
                        self.start_layer = 0
                    _set()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # __new__ returns an InnerModel instead of the wrapper
    'new_returns_other': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                def __new__(cls, *a, **k):
                    return InnerModel(*a, **k)
        """),
    ),
    # __new__ sets start_layer on the new instance
    'new_sets': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                def __new__(cls, *a, **k):
                    o = super().__new__(cls)
                    o.start_layer = 0
                    return o
        """),
    ),
    # `Module` base imported from a local compat module that sets start_layer
    'nn_module_shadow': case(0, OK,
        {
            'pkg/compat.py': D("""
                class Module:
                    def __init__(self):
                        self.start_layer = 0
            """),
            'pkg/wrap.py': D("""
                from .compat import Module
                from .inner import InnerModel
                class WrapForCausalLM(Module):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = InnerModel(vllm_config=vllm_config)
            """),
        },
    ),
    # project ships its own torch/nn whose Module sets start_layer
    # (a copy beside the checked code is read like the rest of it, not assumed to be the real torch)
    'nn_module_subclass_named_Module_in_torch_project': case(0, OK,
        {
            'torch/__init__.py': "",
            'torch/nn/__init__.py': D("""
                class Module:
                    def __init__(self):
                        self.start_layer = 0
            """),
        },
    ),
    # `nn` is a local class whose nested Module sets start_layer
    'nn_shadow_class': case(0, OK,
        {
            'pkg/compat.py': D("""
                class nn:
                    class Module:
                        def __init__(self):
                            self.start_layer = 0
            """),
            'pkg/wrap.py': D("""
                from .compat import nn
                from .inner import InnerModel
                class WrapForCausalLM(nn.Module):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = InnerModel(vllm_config=vllm_config)
            """),
        },
    ),
    # store through object.__setattr__(self, 'start_layer', ...)
    'object_setattr': case(0, OK,
        wrap_init("""
            object.__setattr__(self, "start_layer", 0)
        """),
    ),
    # wrapper base comes from a package that is not in the project
    'other_root_missing': case(0, None,
        wrap("""
            from otherpkg_not_here.base import Base
            class WrapForCausalLM(Base):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        no_run="the base's package does not exist: ModuleNotFoundError at import",
    ),
    # wrapper base from a second top-level package sets start_layer
    'other_root_pkg': case(0, OK,
        wrap("""
            from other.base import Base
            class WrapForCausalLM(Base):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {
            'other/__init__.py': "",
            'other/base.py': D("""
                import torch.nn as nn
                class Base(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.start_layer = 0
            """),
        },
    ),
    # start_layer is a @property on the wrapper
    'property': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                @property
                def start_layer(self):
                    return self.model.start_layer
        """),
    ),
    # start_layer = property(...) on a base in another file
    'property_in_base_other_file': case(0, OK,
        wrap("""
            from .base import Base
            class WrapForCausalLM(Base):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {'pkg/base.py': D("""
            import torch.nn as nn
            class Base(nn.Module):
                start_layer = property(lambda self: self.model.start_layer)
        """)},
    ),
    # language_model is rebound to .model before the read
    'reassigned_later': case(0, OK,
        user_init("""
            self.language_model = self.language_model.model
            assert self.language_model.start_layer >= 0
        """),
    ),
    # a method called before the read rebinds language_model to .model
    'reassigned_other_method': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    self._swap()
                    assert self.language_model.start_layer >= 0
                def _swap(self):
                    self.language_model = self.language_model.model
        """),
    ),
    # the wrapper class is defined twice; the second one sets start_layer
    'redefined_class': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    self.start_layer = 0
        """),
    ),
    # wrapper name rebound to a class built inside a function
    'redefined_via_func': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            def _make():
                class WrapForCausalLM(nn.Module):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = InnerModel(vllm_config=vllm_config)
                        self.start_layer = 0
                return WrapForCausalLM
            WrapForCausalLM = _make()
        """),
    ),
    # store through a local alias of self (`me = self`)
    'self_alias_store': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    me = self
                    me.start_layer = 0
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
    ),
    # wrapper module imports its own name (circular self import)
    'self_import_name': case(0, None,
        wrap("""
            from .wrap import WrapForCausalLM
            from pkg.wrap import WrapForCausalLM as WrapForCausalLM
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        no_run='the module imports itself by name: ImportError at import',
    ),
    # class statements that inherit from their own (or an undefined) name
    'self_inherit': case(0, None,
        wrap("""
            class WrapForCausalLM(WrapForCausalLM if False else nn.Module):
                pass
            class X(X):
                pass
            class WrapForCausalLM(WrapForCausalLM):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        no_run='`class X(X)` with X undefined: NameError at import',
    ),
    # first parameter named `this` instead of `self`
    'self_renamed_param': case(0, OK,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(this, *, vllm_config, prefix=""):
                    super().__init__()
                    this.model = InnerModel(vllm_config=vllm_config)
                    this.start_layer = 0
        """),
    ),
    # user sets the attribute with setattr before reading it
    'setattr_before': case(0, OK,
        user_init("""
            setattr(self.language_model, "start_layer", 0)
            x = self.language_model.start_layer
        """),
    ),
    # store through setattr(self, 'start_layer', ...)
    'setattr_const': case(0, OK,
        wrap_init("""
            setattr(self, "start_layer", 0)
        """),
    ),
    # setattr over a loop of constant names
    'setattr_loop': case(0, OK,
        wrap_init("""
            for k in ("start_layer", "end_layer"):
                setattr(self, k, getattr(self.model, k))
        """),
    ),
    # star imports in a cycle that never define the wrapper
    'star_cycle': case(0, None,
        user("""
            import torch.nn as nn
            from .a import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {
            'pkg/__init__.py': D("""
                from .a import *
            """),
            'pkg/a.py': D("""
                from .b import *
            """),
            'pkg/b.py': D("""
                from .a import *
                from . import *
            """),
            'pkg/wrap.py': None,
        },
        no_run='the star-import cycle never defines the class: ImportError at import',
    ),
    # later star import rebinds the name to a wrapper that sets start_layer
    'star_import': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            from .wrap2 import *
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {'pkg/wrap2.py': D("""
            import torch.nn as nn
            from .inner import InnerModel
            class WrapForCausalLM(nn.Module):
                def __init__(self, **kw):
                    super().__init__()
                    self.start_layer = 0
        """)},
    ),
    # store as a starred-unpacking target
    'starred_tuple_store': case(0, OK,
        wrap_init("""
            *rest, self.start_layer = (1, 2, 0)
        """),
    ),
    # user stores the attribute right before reading it
    'store_before': case(0, OK,
        user_init("""
            self.language_model.start_layer = 0
            x = self.language_model.start_layer
        """),
    ),
    # user method called before the read stores it
    'store_in_other_method': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    self._init()
                    x = self.language_model.start_layer
                def _init(self):
                    self.language_model.start_layer = 0
        """),
    ),
    # function in another module called before the read stores it
    'store_in_other_module': case(0, OK,
        user_init("""
            from .patch import patch
            patch(self)
            x = self.language_model.start_layer
        """),
        {'pkg/patch.py': D("""
            def patch(m):
                m.language_model.start_layer = 0
        """)},
    ),
    # wrapper method called before the read stores it
    'store_on_receiver_via_wrap_method': case(0, OK,
        user_init("""
            self.language_model.set_range(0, 4)
            x = self.language_model.start_layer
        """),
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                def set_range(self, s, e):
                    self.start_layer, self.end_layer = s, e
        """),
    ),
    # user stores it through a local alias of language_model
    'store_via_local': case(0, OK,
        user_init("""
            lm = self.language_model
            lm.start_layer = 0
            x = self.language_model.start_layer
        """),
    ),
    # user instantiates a subclass that sets start_layer (imported under the wrapper name)
    'subclass_instantiated': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapSub as WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            class WrapSub(WrapForCausalLM):
                def __init__(self, **kw):
                    super().__init__(**kw)
                    self.start_layer = 0
        """),
    ),
    # subclass of VL in the user module; VL itself still reads
    'subclass_overrides_in_user': case(1, RAISES,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
            class VL2(VL):
                def __init__(self, **kw):
                    self.language_model = None
                    super().__init__(**kw)
        """),
    ),
    # read inside contextlib.suppress(AttributeError)
    'suppress': case(0, OK,
        user_init("""
            import contextlib
            with contextlib.suppress(AttributeError):
                x = self.language_model.start_layer
        """),
    ),
    # read inside try / bare except
    'try_bare': case(0, OK,
        user_init("""
            try:
                x = self.language_model.start_layer
            except:
                x = 0
        """),
    ),
    # try-import of a faster wrapper that sets start_layer
    'try_except_import': case(0, OK,
        user("""
            import torch.nn as nn
            try:
                from .wrap_fast import WrapForCausalLM
            except ImportError:
                from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {'pkg/wrap_fast.py': D("""
            import torch.nn as nn
            from .inner import InnerModel
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    self.start_layer = 0
        """)},
    ),
    # read inside try / except Exception
    'try_exception': case(0, OK,
        user_init("""
            try:
                x = self.language_model.start_layer
            except Exception:
                x = 0
        """),
    ),
    # read inside try / except (KeyError, AttributeError)
    'try_tuple': case(0, OK,
        user_init("""
            try:
                x = self.language_model.start_layer
            except (KeyError, AttributeError):
                x = 0
        """),
    ),
    # TYPE_CHECKING import of the wrapper, runtime import of one that sets it
    'type_checking_import': case(0, OK,
        user("""
            import torch.nn as nn
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from .wrap import WrapForCausalLM
            else:
                from .wrap_rt import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
        {'pkg/wrap_rt.py': D("""
            import torch.nn as nn
            from .inner import InnerModel
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    self.start_layer = 0
        """)},
    ),
    # language_model is a class-level property over an attribute never set
    'user_class_getattr': case(0, 'AttributeError',
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                language_model = property(lambda self: self._lm)
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self._lm0 = WrapForCausalLM(vllm_config=vllm_config)
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # subclass of the wrapper reads self.start_layer itself (never instantiated)
    'user_in_wrap_self_ref': case(1, RAISES,
        wrap("""
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
            class C(WrapForCausalLM):
                def __init__(self):
                    super(C, self).__init__(vllm_config=None)
                    super(WrapForCausalLM, self).__init__()
                    assert self.start_layer
        """),
    ),
    # language_model is a property that unwraps to .model
    'user_property_lm': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config)
                    x = self.language_model.start_layer
                @property
                def language_model(self):
                    return self._lm.model
                @language_model.setter
                def language_model(self, v):
                    self._lm = v
        """),
    ),
    # store through vars(self)['start_layer']
    'vars_item': case(0, OK,
        wrap_init("""
            vars(self)["start_layer"] = 0
        """),
    ),
    # store through vars(self).update(...)
    'vars_update': case(0, OK,
        wrap_init("""
            vars(self).update({"start_layer": 0, "end_layer": 4})
        """),
    ),
    # base mixin from a project-local vllm...interfaces sets start_layer
    'vllm_supports_glob': case(0, OK,
        wrap("""
            from vllm.model_executor.models.interfaces import SupportsPPRange
            class WrapForCausalLM(SupportsPPRange, nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
        """),
        {
            'vllm/__init__.py': "",
            'vllm/model_executor/__init__.py': "",
            'vllm/model_executor/models/__init__.py': "",
            'vllm/model_executor/models/interfaces.py': D("""
                class SupportsPPRange:
                    def __init__(self, *a, **k):
                        super().__init__(*a, **k)
                        self.start_layer = 0
            """),
        },
    ),
    # store as a comprehension target `for self.start_layer in ...`
    'walrus_no': case(0, OK,
        wrap_init("""
            [self.start_layer for self.start_layer in [0]]
        """),
    ),
    # language_model is `Wrapper(...).model`, i.e. the inner model
    'walrus_or': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = WrapForCausalLM(vllm_config=vllm_config).model
                    assert self.language_model.start_layer >= 0
        """),
    ),
    # store as a with-statement target
    'with_target_store': case(0, OK,
        wrap("""
            import contextlib
            class WrapForCausalLM(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.model = InnerModel(vllm_config=vllm_config)
                    with contextlib.nullcontext(0) as self.start_layer:
                        pass
        """),
    ),
    # language_model is unwrap(Wrapper(...)) which returns .model
    'wrapped_call': case(0, OK,
        user("""
            import torch.nn as nn
            from .wrap import WrapForCausalLM
            def unwrap(m):
                return m.model
            class VL(nn.Module):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    self.language_model = unwrap(WrapForCausalLM(vllm_config=vllm_config))
                    assert self.language_model.start_layer >= 0
        """),
    ),
}


def materialize(dst: Path, c: Case) -> Path:
    """Write CONTROL (under c.root) + c.files into dst/proj; return the folder to put on sys.path."""
    proj = dst / "proj"
    tree = {f"{c.root}/{k}" if c.root else k: v for k, v in CONTROL.items()}
    tree.update(c.files)
    for rel, text in tree.items():
        if text is None:
            continue
        p = proj / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return proj / c.root if c.root else proj


def count_findings(proj: Path) -> int:
    r = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=proj, timeout=120)
    assert r.rc in (0, 1), f"exit {r.rc}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return sum(1 for f in r.json() if f["code"] == "PPA001")


_PROBE = """
import sys
sys.path[:0] = sys.argv[1:]
try:
    from pkg.user import VL
    VL(vllm_config=None)
except AttributeError as e:
    print("raises" if "start_layer" in str(e) else "AttributeError")
except BaseException as e:
    print(type(e).__name__)
else:
    print("ok")
"""


def run_vl(root: Path, stub: Path) -> str:
    """Import pkg.user from ROOT (ahead of the stub torch) in a clean interpreter and build a VL."""
    p = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", _PROBE, str(root), str(stub)],
                       check=False, capture_output=True, text=True, timeout=60)
    return (p.stdout.strip().splitlines() or [p.stderr.strip()])[-1]


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stub")
    for rel, text in STUB_TORCH.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """name -> (sys.path root, findings), each case materialized and checked once per module."""
    memo: dict[str, tuple[Path, int]] = {}

    def get(name: str) -> tuple[Path, int]:
        if name not in memo:
            root = materialize(tmp_path_factory.mktemp(name), CASES[name])
            memo[name] = (root, count_findings(root.parent if CASES[name].root else root))
        return memo[name]

    return get


def _precision_params():
    for name, c in CASES.items():
        marks = []
        if c.no_run:
            marks.append(pytest.mark.skip(reason=c.no_run))
        if c.known_fp:
            marks.append(pytest.mark.xfail(reason=c.known_fp, strict=True))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(CASES))
def test_finding_count(name, analyzed):
    """(a) the analyzer's PPA001 count is the recorded one."""
    assert analyzed(name)[1] == CASES[name].findings


@pytest.mark.parametrize("name", list(_precision_params()))
def test_runtime_and_precision(name, analyzed, stub):
    """(b) the recorded run-time outcome holds, and a reported finding really raises at run time."""
    c = CASES[name]
    root, n = analyzed(name)
    outcome = run_vl(root, stub)
    if n:
        assert outcome == RAISES, f"{n} finding(s) but VL(...) gives {outcome!r}"
    assert outcome == c.runtime


def test_huge_file_is_fast_and_complete(tmp_path):
    """1,000 methods, each with exactly one wrapper read: 1,000 findings, well under 20 s."""
    methods = "".join(
        f"    def f{i}(self):\n        return self.language_model.start_layer + {i}\n" for i in range(1000))
    c = case(0, None, user(USER_HEAD + VL_CLASS + methods))
    proj = materialize(tmp_path, c)
    t0 = time.monotonic()
    n = count_findings(proj)
    elapsed = time.monotonic() - t0
    assert n == 1000
    assert elapsed < 20, f"took {elapsed:.1f} s"


def test_deep_subclass_chain_does_not_crash(tmp_path):
    """A 1,500-level linear subclass chain under the wrapper: exit 0 or 1, never a crash.

    Today it exits 0 with no finding (a miss: the read would raise at run time); the 40-level
    diamond chain of the original corpus still gave its 1 finding."""
    chain = "".join(f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, 1500))
    c = case(0, None, wrap(WRAP_CLASS.replace("WrapForCausalLM", "C0") + chain
                           + "class WrapForCausalLM(C1499):\n    pass\n"))
    proj = materialize(tmp_path, c)
    r = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=proj, timeout=120)
    assert r.rc in (0, 1), f"exit {r.rc}\nstderr:\n{r.stderr[-3000:]}"
    r.json()  # still a well-formed report

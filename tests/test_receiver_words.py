"""Reads of a watched name through a module path are no model reads, and the reads that cannot be
judged say what their receiver is.

* ``vllm.model_executor.layers.fla.ops.f = g`` (an out-of-tree plugin patching vLLM) reads
  ``layers`` of the package ``vllm.model_executor``: judged, no record, when the first name is
  bound by an import of a module and the chain is a module of the tree, ``--src`` or the
  environment, or, where that package is not found, a package of an ``import`` statement's path;
  an object imported with ``from x import obj`` (or from a package not found) is still listed,
  the package not found named (``module-not-found``).
* a parameter of a nested function or lambda, a local bound to a method's result, to an expression
  or by unpacking is named in the record's detail, with what may help, instead of "a value that is
  not a call, a name or an attribute chain".
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from helpers import run_cli


def _records(tmp_path: Path, files: dict[str, str], *args: str) -> dict[int, str]:
    """``{row: detail}`` of the PPA001/PPA002 records of package ``plug`` (written from ``files``
    under ``tmp_path``; an engine ``eng`` under ``tmp_path/src``), checked with ``--src src`` and
    no environment; a finding fails the test."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    r = run_cli("check", "plug", "--src", "src", "--python", "none", "--no-cache", "--output-format", "json",
                "--show-unresolved", *args, cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    out = r.all_json()
    assert all(d.get("name") == "not-judged" for d in out), out
    return {d["location"]["row"]: d["detail"] for d in out if d["rule"] in ("PPA001", "PPA002")}


ENGINE = {
    "src/eng/__init__.py": "model = object()\nfrom .core import model_executor_cls\n",
    "src/eng/core.py": "class model_executor_cls:\n    layers = []\n",
    "src/eng/model_executor/__init__.py": "",
    "src/eng/model_executor/layers/__init__.py": "def norm(x):\n    return x\n",
    "plug/__init__.py": "",
}


def test_a_read_through_a_package_path_is_judged(tmp_path):
    got = _records(tmp_path, {**ENGINE, "plug/patch.py": """\
        import eng.model_executor.layers
        import eng.model_executor
        import missing.model_executor.layers.ops
        import eng.model_executor.layers as lay
        import other

        eng.model_executor.layers.norm = None
        missing.model_executor.layers.ops.f = None
        x = lay.norm
        y = other.model_executor.layers


        def f():
            return eng.model_executor.layers.norm


        class Patch:
            n = eng.model_executor.layers


        def local(x):
            import torch
            import missing.deep.layers as ml
            return torch.norm(x), ml.layers, missing.deep.layers
        """})
    # `eng` bound twice, by `import eng.x` each time: still the package; `missing` is not found,
    # but `import missing.model_executor.layers.ops` says each name on that path is a package;
    # `other` is not found and nothing says `other.model_executor` is a module: listed; nor
    # `missing.deep` (the function's import binds `ml`, not `missing`)
    assert got == {10: "`other.model_executor` is read at module or class level, and module `other` is not found: "
                       "whether `other.model_executor` is a module or an object cannot be told",
                   24: "`missing` is a module-level or enclosing name"}


def test_an_object_imported_from_a_package_is_still_listed(tmp_path):
    got = _records(tmp_path, {**ENGINE, "plug/patch.py": """\
        import eng
        from eng import model
        from missing import thing
        from eng import model_executor_cls

        a = model.layers
        b = thing.layers
        c = model_executor_cls.layers
        d = eng.model_executor_cls.layers


        def f(eng):
            return eng.model_executor.layers
        """})
    # an object of a package, a name of a package not found, a class: none of them a module path;
    # a parameter shadows the import
    assert sorted(got) == [6, 7, 8, 9, 13]
    assert got[6] == got[8] == got[9] == "a read at module or class level"
    assert got[7] == ("`thing` is read at module or class level, and `thing` (`missing.thing`) is not found: "
                      "whether `thing` is a module or an object cannot be told")  # reason module-not-found
    assert got[13] == "parameter `eng` has no class annotation"


def test_a_name_rebound_beside_its_import_is_no_module(tmp_path):
    got = _records(tmp_path, {**ENGINE, "plug/patch.py": """\
        import eng.model_executor
        eng = None

        x = eng.model_executor.layers
        """})
    assert sorted(got) == [4]


def test_an_unread_receiver_says_what_it_is(tmp_path):
    got = _records(tmp_path, {**ENGINE, "plug/patch.py": """\
        def g():
            h = lambda self: self.model.start_layer
            return h


        def k():
            def inner(self, n):
                return self.layers
            return inner


        class A:
            def build(self):
                a, b = self.parts()
                return a

            def parts(self):
                return 1, 2

            def use(self):
                out = self.build()
                return out.norm

            def item(self, d):
                m = d["x"]
                return m.layers

            def loop(self, items):
                for it in items:
                    print(it.layers)


        def fp(spec):
            from eng import Qwen
            model = Qwen.from_pretrained(spec)
            return model.layers


        def fl(t):
            hidden = t[0]
            f = hidden.float()
            return f.norm


        class B:
            def __init__(self, t):
                self.a, self.backbone = t

            def use(self):
                return self.backbone.layers
        """})
    assert got == {
        2: "parameter `self` of a lambda has no class annotation (a lambda's parameters cannot have one); "
           "may help: a nested `def` with `self: Cls`",
        8: "parameter `self` of nested function `inner` has no class annotation; may help: `self: Cls` in its "
           "signature",
        22: "`out` is the result of `self.build(...)`, whose class cannot be told: `a` is unpacked from a tuple "
            "or other iterable (`a, b = ...`); may help: a return annotation on `build`, or `out: Cls = ...`",
        26: '`m` is the expression `d["x"]`, whose class is not followed; may help: `m: Cls = ...`',
        30: "`it` is a loop variable; may help: an annotation `it: Cls` before the loop",
        36: "`model` is the result of `Qwen.from_pretrained(...)`, called on what `from eng import Qwen` in the "
            "function binds: its result is not followed; may help: `model: Cls = ...`",
        42: "`f` is the result of `hidden.float(...)`, whose receiver's class cannot be told: `hidden` is the "
            "expression `t[0]`, whose class is not followed; may help: `hidden: Cls = ...`",
        50: "`B.backbone` is unpacked from a tuple or other iterable (`a, b = ...`); may help: a class annotation "
            "`backbone: Cls` on `B`",
    }


def test_a_store_that_is_not_followed_is_named(tmp_path):
    """A receiver not judged because one store of the attribute cannot be followed (a setter's
    unannotated parameter) names that store, not only the parameter: the read is elsewhere."""
    got = _records(tmp_path, {**ENGINE, "plug/model.py": """\
        import torch.nn as nn


        class Inner(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.start_layer = 0


        class Outer(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.model = Inner(config)

            def first(self):
                return self.model.start_layer

            def set_decoder(self, decoder):
                self.model = decoder
        """})
    assert got[16] == "`self.model = ...` in `Outer.set_decoder` (line 19): parameter `decoder` has no class annotation"

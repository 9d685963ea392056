"""PPA403 (stage-local-layer-id): how a call's receiver is established, and what is listed as not
judged when it cannot be (the rule case ``rules/PPA403/cases/kvpool`` covers the findings)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import run_cli

POOL = """
class Pool:
    def __init__(self, layer_num, start_layer=0):
        self.start_layer = start_layer
        self.v_buffer = [[0.0] * 8 for _ in range(layer_num)]

    def get_value_buffer(self, layer_id):
        return self.v_buffer[layer_id - self.start_layer]
"""
RUNNER = """
from .pool import Pool
from .backend import Backend


class Runner:
    def __init__(self, start):
        self.pool = Pool(2, start_layer=start)

    def init_backend(self):
        self.backend = Backend(self)
"""
BACKEND = """
class Backend:
    def __init__(self, runner):
        self.v_head_dim = len(runner.pool.get_value_buffer(0))
"""


def _tree(root: Path, **files: str) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _run(root: Path, *paths: str):
    r = run_cli("check", *(paths or ("pkg",)), "--no-cache", "--python", "none", "--select", "PPA403",
                "--output-format", "json", "--show-unresolved", cwd=root)
    assert r.rc in (0, 1), r.stdout + r.stderr
    got = json.loads(r.stdout)
    findings = [(Path(f["filename"]).name, f["location"]["row"]) for f in got if f["code"] == "PPA403"]
    unjudged = [f for f in got if f.get("name") == "not-judged"]
    return findings, unjudged


def test_the_one_construction_establishes_the_receiver(tmp_path):
    root = _tree(tmp_path, pool=POOL, runner=RUNNER, backend=BACKEND)
    assert _run(root) == ([("pool.py", 8)], [])
    # the accessor's file alone gives the same verdict; the caller's file alone has nothing to report
    assert _run(root, "pkg/pool.py") == ([("pool.py", 8)], [])
    assert _run(root, "pkg/backend.py") == ([], [])


def test_a_class_built_through_a_registry_is_not_judged(tmp_path):
    runner = RUNNER.replace("self.backend = Backend(self)", "self.backend = BACKENDS['v'](self)").replace(
        "from .backend import Backend", "from .backend import Backend\n\nBACKENDS = {'v': Backend}")
    root = _tree(tmp_path, pool=POOL, runner=runner, backend=BACKEND)
    findings, unjudged = _run(root)
    assert findings == []
    assert len(unjudged) == 1 and unjudged[0]["reason"] == "receiver-unresolved"
    assert "used as a value" in unjudged[0]["detail"] and "backend.py:4" in unjudged[0]["detail"]
    assert Path(unjudged[0]["filename"]).name == "pool.py"


def test_a_factory_functions_unannotated_parameter_is_not_judged(tmp_path):
    runner = RUNNER.replace("self.backend = Backend(self)", "self.backend = make(self)") + (
        "\n\ndef make(runner):\n    return Backend(runner)\n")
    root = _tree(tmp_path, pool=POOL, runner=runner, backend=BACKEND)
    findings, unjudged = _run(root)
    assert findings == [] and len(unjudged) == 1
    assert "only an `__init__`'s parameter is followed" in unjudged[0]["detail"]


def test_constructions_that_disagree_are_not_judged(tmp_path):
    """The receiver may be a pool whose accessor is stage-local or one whose is not (SGLang's
    `SWAKVPool` beside `MHATokenToKVPool`): which one runs depends on the configuration, and the
    call is listed as not judged (`config-condition`), not passed."""
    other = """
    class Flat:
        def get_value_buffer(self, layer_id):
            return [0.0] * 8


    class OtherRunner:
        def __init__(self):
            self.pool = Flat()

        def init_backend(self):
            from .backend import Backend

            self.backend = Backend(self)
    """
    root = _tree(tmp_path, pool=POOL, runner=RUNNER, backend=BACKEND, other=other)
    findings, unjudged = _run(root)
    assert findings == [] and [(Path(u["filename"]).name, u["reason"]) for u in unjudged] == \
        [("pool.py", "config-condition")], unjudged
    assert "`Pool`" in unjudged[0]["detail"] and "`Flat`" in unjudged[0]["detail"], unjudged


def test_a_receiver_of_several_pools_is_reported_at_the_first_accessor_in_the_file(tmp_path):
    """The receiver may be either of two pools of the file whose accessors are both stage-local
    (SGLang 0.4.6: `MHATokenToKVPool` and `DoubleSparseTokenToKVPool`, built by one runner under
    different settings): one finding, at the accessor first in the file, whatever the classes'
    names sort to."""
    pool = POOL.replace("class Pool:", "class ZPool:") + POOL.replace("class Pool:", "class APool:")
    runner = RUNNER.replace("from .pool import Pool", "from .pool import APool, ZPool").replace(
        "        self.pool = Pool(2, start_layer=start)",
        "        if start > 8:\n            self.pool = APool(2, start_layer=start)\n"
        "        else:\n            self.pool = ZPool(2, start_layer=start)")
    root = _tree(tmp_path, pool=pool, runner=runner, backend=BACKEND)
    findings, unjudged = _run(root)
    assert findings == [("pool.py", 8)] and unjudged == [], (findings, unjudged)


def test_an_abstract_declared_pool_is_not_judged(tmp_path):
    pool = POOL + """

class Base:
    def get_value_buffer(self, layer_id):
        raise NotImplementedError()
"""
    backend = """
    from .pool import Base


    class Backend:
        def __init__(self, runner, pool: Base):
            self.v_head_dim = len(pool.get_value_buffer(0))
    """
    root = _tree(tmp_path, pool=pool, backend=backend)
    findings, unjudged = _run(root)
    assert findings == [] and len(unjudged) == 1 and "is abstract" in unjudged[0]["detail"]


def test_a_stage_guarded_probe_and_a_constant_start_layer_stay_silent(tmp_path):
    backend = BACKEND.replace("        self.v_head_dim", "        if runner.start_layer == 0:\n            self.v_head_dim")
    root = _tree(tmp_path, pool=POOL, runner=RUNNER, backend=backend)
    assert _run(root) == ([], [])
    pool = POOL.replace("self.start_layer = start_layer", "self.start_layer = 0")
    root2 = _tree(tmp_path / "b", pool=pool, runner=RUNNER, backend=BACKEND) if (tmp_path / "b").mkdir() is None else None
    assert _run(root2) == ([], [])


def test_a_pool_never_built_with_a_stage_range_stays_silent(tmp_path):
    # a sub-pool built without `start_layer` starts at layer 0 on every stage and takes local ids
    runner = RUNNER.replace("Pool(2, start_layer=start)", "Pool(2)")
    root = _tree(tmp_path, pool=POOL, runner=runner, backend=BACKEND)
    assert _run(root) == ([], [])
    runner = RUNNER.replace("Pool(2, start_layer=start)", "Pool(2, start_layer=0)")
    (root / "pkg" / "runner.py").write_text(textwrap.dedent(runner), encoding="utf-8")
    assert _run(root) == ([], [])


def _guarded(test: str, *, early: bool = False, orelse: bool = False) -> str:
    """BACKEND with its probe under ``if <test>:`` (``early``: after ``if <test>: return``;
    ``orelse``: in the ``else`` branch)."""
    probe = "        self.v_head_dim = len(runner.pool.get_value_buffer(0))\n"
    if early:
        body = f"        if {test}:\n            return\n" + probe
    elif orelse:
        body = f"        if {test}:\n            self.v_head_dim = 8\n        else:\n    " + probe
    else:
        body = f"        if {test}:\n    " + probe
    return "\nclass Backend:\n    def __init__(self, runner):\n" + body


def test_a_stage_test_that_holds_on_the_first_stage_only_guards_the_probe(tmp_path):
    # the call runs on the first stage only, which holds layer 0: silent
    for k, backend in enumerate([_guarded("runner.start_layer == 0"), _guarded("0 == runner.start_layer"),
                                 _guarded("get_pp_group().is_first_rank"), _guarded("not runner.start_layer"),
                                 _guarded("runner.start_layer != 0", orelse=True),
                                 _guarded("runner.start_layer > 0", early=True),
                                 _guarded("not get_pp_group().is_first_rank", early=True),
                                 _guarded("runner.start_layer == 0 and runner.ready")]):
        root = _tree(tmp_path / str(k), pool=POOL, runner=RUNNER, backend=backend) \
            if (tmp_path / str(k)).mkdir() is None else None
        assert _run(root) == ([], []), backend


def test_a_stage_test_that_holds_on_later_stages_only_does_not_guard_it(tmp_path):
    # the call runs only on stages after the first, where layer 0 is not held: reported
    for k, backend in enumerate([_guarded("runner.start_layer != 0"), _guarded("runner.start_layer > 0"),
                                 _guarded("not get_pp_group().is_first_rank"), _guarded("get_pp_group().is_last_rank"),
                                 _guarded("get_pp_group().is_first_rank", early=True),
                                 _guarded("runner.start_layer == 0", early=True),
                                 _guarded("runner.start_layer == 0", orelse=True)]):
        root = _tree(tmp_path / str(k), pool=POOL, runner=RUNNER, backend=backend) \
            if (tmp_path / str(k)).mkdir() is None else None
        assert _run(root) == ([("pool.py", 8)], []), backend


def test_a_stage_test_elsewhere_in_the_function_guards_nothing(tmp_path):
    # a block on the stage that the call is not in, or an early return after the call
    elsewhere = BACKEND.replace("        self.v_head_dim",
                                "        if runner.start_layer == 0:\n            self.first = True\n"
                                "        self.v_head_dim")
    root = _tree(tmp_path, pool=POOL, runner=RUNNER, backend=elsewhere)
    assert _run(root) == ([("pool.py", 8)], [])
    later = BACKEND + "        if runner.start_layer != 0:\n            return\n"
    (root / "pkg" / "backend.py").write_text(textwrap.dedent(later), encoding="utf-8")
    assert _run(root) == ([("pool.py", 8)], [])


def test_a_stage_test_that_cannot_be_read_leaves_the_probe_not_judged(tmp_path):
    root = _tree(tmp_path, pool=POOL, runner=RUNNER, backend=_guarded("runner.pp_size_hint(2)"))
    findings, unjudged = _run(root)
    assert findings == [] and [(u["reason"], u["location"]["row"]) for u in unjudged] == [("stage-guard", 8)]
    assert "`runner.pool.get_value_buffer(0)` at pkg/backend.py:5 passes layer 0" in unjudged[0]["message"]


def test_a_copy_checked_as_its_module_is_scanned_in_place_of_the_tree_file(tmp_path):
    # `--as-module pkg.model COPY`: the tree's calls are read from the copy, not from the tree's
    # own file of that module (which has no probe)
    model = POOL + """

class Model:
    def __init__(self, start):
        self.start_layer = start
        self.pool = Pool(2, start_layer=self.start_layer)

    def forward(self):
        return self.pool.get_value_buffer({arg})
"""
    root = _tree(tmp_path / "tree", model=model.format(arg="self.start_layer")) if (tmp_path / "tree").mkdir() is None else None
    copy = tmp_path / "copy" / "model.py"
    copy.parent.mkdir()
    copy.write_text(textwrap.dedent(model.format(arg="0")), encoding="utf-8")
    r = run_cli("check", "--no-cache", "--python", "none", "--select", "PPA403", "--output-format", "json",
                "--as-module", "pkg.model", "--src", str(root), "--", str(copy), cwd=tmp_path)
    got = [(Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(r.stdout) if f["code"] == "PPA403"]
    assert got == [("model.py", 17)], r.stdout + r.stderr
    assert _run(root) == ([], [])

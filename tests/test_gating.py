"""The collectors' gating: a rule's collector runs only on the files its own prefilter accepts
(unless the rule declares ``facts_everywhere``), and on another module when a check asks for its
facts there, and that changes no output.  The reference is the
slow path, every collector on every parsed file (``gate=False``, the hidden ``--no-gate``): both
runs must give the same findings and not-judged records, byte for byte, on every case folder, and
on a released vLLM when its unpacked tree is at hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import REPO, run_cli
from test_one_verdict import CASES, STUBS


def _report(paths, gate: bool, src=None) -> str:
    """What ``check PATHS`` finds and cannot judge, every field, as one JSON text (no cache, no
    environment packages; ``src`` as ``lint`` of the one-verdict tests chooses it)."""
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.engine.check import cache_salt, check
    from pp_attr_lint.model import finding_to_dict, not_judged_to_dict
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.files import discover

    paths = [Path(p) for p in paths]
    if src is None:
        src = [STUBS] if any(os.path.abspath(p).startswith(str(REPO / "rules")) for p in paths) else []
    cfg = Config()
    rules = select_rules(cfg, None, None, None)
    files, errors = discover(paths, cfg.exclude)
    assert not errors
    cache = Cache(Path("/nonexistent-cache"), cache_salt(rules, gate=gate), enabled=False)
    result = check(files, rules, cache=cache, src=src, env_paths=[], jobs=1, gate=gate,
                   explicit={os.path.abspath(p) for p in paths if not p.is_dir()})
    return json.dumps([[finding_to_dict(f) for f in result.findings],
                       [not_judged_to_dict(n) for n in result.not_judged], result.notes], sort_keys=True)


def test_gating_changes_nothing_on_the_case_folders():
    differ = [str(case.relative_to(case.parents[2])) for case in CASES
              if _report([case], gate=True) != _report([case], gate=False)]
    assert differ == []


def test_gating_changes_nothing_for_named_files():
    """Files named one by one (a pull request's check) are masked by their own bytes too."""
    case = REPO / "rules" / "PPA402" / "cases"
    files = sorted(p for p in case.rglob("*.py") if "__pycache__" not in p.parts)
    assert files
    assert _report(files, gate=True) == _report(files, gate=False)


def test_no_gate_from_the_command_line():
    case = REPO / "rules" / "PPA409" / "cases"
    args = ("check", case, "--output-format", "json", "--no-cache", "--show-unresolved", "--src", str(STUBS))
    gated, slow = run_cli(*args, cwd=case), run_cli(*args, "--no-gate", cwd=case)
    assert gated.rc == slow.rc == 1
    assert gated.stdout == slow.stdout


def test_a_gated_collector_skips_the_files_its_rule_turns_down(tmp_path):
    """PPA402's collector does not run on a file its prefilter turns down (parsed for another
    rule): the summary says so in ``held``; asked for those facts there, the project runs it then
    (on the file parsed again) and gives what an ungated summary holds."""
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.index.prefilter import make_rule_prefilter
    from pp_attr_lint.rule_api import index_spec
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.project import Project, summarize_file

    rules = select_rules(Config(), None, None, None)
    spec = index_spec(rules)
    data = (b"from vllm.model_executor.models.utils import make_layers\n\n\n"
            b"class M:\n    def __init__(self):\n        self.layers = make_layers(2, None)\n\n"
            b"    def load_weights(self, weights):\n"
            b"        params = dict(self.named_parameters(remove_duplicate=False))\n"
            b"        return params[weights[0]]\n")
    other = (b"import torch.nn as nn\n\n\nclass A(nn.Module):\n    def f(self, m):\n"
             b"        return m.model.norm\n\n    def load_weights(self, weights):\n"
             b"        make_layers = self.named_parameters()\n        return make_layers\n")
    hit = make_rule_prefilter(spec.wanting)
    bit = 1 << spec.wanting_codes.index("PPA402")
    assert hit(data) & bit and hit(other) and not hit(other) & bit
    kept = summarize_file(data, spec, "a.py", hit(data))[1]
    skipped = summarize_file(other, spec, "b.py", hit(other))[1]
    full = summarize_file(other, spec, "b.py")[1]  # no mask: every collector
    assert "PPA402" in kept["held"] and "PPA402" not in skipped["held"] and "PPA402" in full["held"]

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_bytes(other)
    project = Project([tmp_path], spec, Cache(tmp_path / "cache", "salt", enabled=False))
    st = project.file_state(str(pkg / "b.py"))
    project.prefilter_hit(st)
    assert "PPA402" not in project.load(st)["held"]
    assert project.facts("pkg.b", "PPA402") == full["facts"].get("PPA402")
    assert "PPA402" in st.summary["held"]


def test_completed_facts_are_the_ungated_ones():
    """What a collector gives a file parsed again (:func:`complete_facts`) is what it gives in
    the summary: on every case file, for every collector."""
    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.index.summary import complete_facts
    from pp_attr_lint.rule_api import index_spec
    from pp_attr_lint.textio import decode_source
    from pp_attr_lint.workspace.project import summarize_file

    spec = index_spec(select_rules(Config(), None, None, None))
    differ = []
    for case in CASES:
        for path in sorted(case.rglob("*.py")):
            data = path.read_bytes()
            kind, summary = summarize_file(data, spec, str(path))
            if kind != "ok":
                continue
            for key, collect in spec.collectors:
                if complete_facts(decode_source(data), collect) != summary["facts"].get(key):
                    differ.append(f"{key} {path}")
    assert differ == []


@pytest.mark.parametrize("version", ["0.21.0"])
def test_gating_changes_nothing_on_a_release(version):
    """The whole tree of a released vLLM, when it is unpacked here (``PP_ATTR_LINT_TREE_0210``:
    the folder holding ``vllm/``); skipped otherwise."""
    tree = os.environ.get(f"PP_ATTR_LINT_TREE_{version.replace('.', '')}")
    if not tree or not (Path(tree) / "vllm").is_dir():
        pytest.skip("no unpacked tree of this release")
    root = Path(tree) / "vllm"
    assert _report([root], gate=True, src=[]) == _report([root], gate=False, src=[])


def test_the_gates_of_the_spec():
    """Each collector is gated by the bits of the rules it serves (PPA405's ``uses_facts`` adds
    its bit to the placeholder facts'); ``facts_everywhere`` and ``gate=False`` run it everywhere."""
    import dataclasses

    from pp_attr_lint.config import Config, select_rules
    from pp_attr_lint.index.spec import RANK_FACTS_KEY
    from pp_attr_lint.rule_api import index_spec

    rules = select_rules(Config(), None, None, None)
    spec = index_spec(rules)
    gates = dict(zip((k for k, _ in spec.collectors), spec.collector_gates))
    bit = {c: 1 << k for k, c in enumerate(spec.wanting_codes)}
    assert gates["PPA402"] == bit["PPA402"]
    assert gates[RANK_FACTS_KEY] == bit["PPA101"] | bit["PPA102"] | bit["PPA103"] | bit["PPA405"]
    assert set(index_spec(rules, gate=False).collector_gates) == {None}
    ppa402 = next(r for r in rules if r.code == "PPA402")
    everywhere = type("Everywhere", (type(ppa402),), {"facts_everywhere": True})
    changed = [r for r in rules if r.code != "PPA402"]
    changed.append(everywhere(**{f.name: getattr(ppa402, f.name) for f in dataclasses.fields(ppa402)}))
    spec2 = index_spec(changed)
    assert dict(zip((k for k, _ in spec2.collectors), spec2.collector_gates))["PPA402"] is None
    assert spec2.key != spec.key

"""The layered layout holds: no import cycle, no import from a higher layer, a warm run loads no
analysis code, the cache notices code in every subpackage, the wheel holds every module."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers import REPO

_spec = importlib.util.spec_from_file_location("import_graph", REPO / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


def _graph():
    return import_graph.graph(REPO / "pp_attr_lint", REPO / "rules")[0]


def test_every_module_has_a_layer():
    assert [m for m in _graph() if import_graph.layer_of(m) is None] == []


def test_no_import_cycle():
    """Imports anywhere in a module count (top level, inside functions, under TYPE_CHECKING)."""
    assert import_graph.cycles(_graph()) == []


def test_no_import_goes_up_a_layer():
    assert import_graph.upward(_graph()) == []


def test_the_checker_finds_a_cycle_and_an_upward_import(tmp_path):
    """The two checks above can fail: a package whose index imports the CLI, which imports it."""
    pkg = tmp_path / "pp_attr_lint"
    (pkg / "index").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "index" / "__init__.py").write_text("")
    (pkg / "index" / "summary.py").write_text("def f():\n    from ..cli import main\n")
    (pkg / "cli.py").write_text("from .index import summary\n")
    g = import_graph.graph(pkg)[0]
    assert import_graph.cycles(g) == [["pp_attr_lint.cli", "pp_attr_lint.index.summary"]]
    assert import_graph.upward(g) == [("pp_attr_lint.index.summary", "pp_attr_lint.cli")]


# what a warm run (a replayed result) may load of pp-attr-lint: the CLI, the configuration, the
# rule registry and the rule folders, the rule API, the rule kinds' light parts, the engine's
# entry point, the workspace's files, environment, cache and project, what the rules ask of the
# index and its byte prefilter, the base layer and the report
WARM_MODULES = {
    "pp_attr_lint", "pp_attr_lint.cli", "pp_attr_lint.config", "pp_attr_lint.facts", "pp_attr_lint.model",
    "pp_attr_lint.report", "pp_attr_lint.rule_api", "pp_attr_lint.rule_registry", "pp_attr_lint.settings",
    "pp_attr_lint.textio", "pp_attr_lint.unjudged", "pp_attr_lint.index", "pp_attr_lint.index.spec",
    "pp_attr_lint.index.prefilter", "pp_attr_lint.workspace", "pp_attr_lint.workspace.cache",
    "pp_attr_lint.workspace.environment", "pp_attr_lint.workspace.files", "pp_attr_lint.workspace.project",
    "pp_attr_lint.kinds", "pp_attr_lint.kinds.placeholder", "pp_attr_lint.kinds.wrapper",
    "pp_attr_lint.engine", "pp_attr_lint.engine.check", "pp_attr_lint.engine.parallel",
}


def test_a_warm_run_loads_no_analysis_code(tmp_path):
    """A replayed run imports none of the summarizer, resolver, ranks, rule kinds' analyses,
    scan, module naming or fixes, and neither libcst, yaml nor rich."""
    script = ("import json, sys\n"
              "from pp_attr_lint.cli import main\n"
              "rc = main(sys.argv[1:])\n"
              "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] in "
              "('pp_attr_lint', 'libcst', 'yaml', 'rich'))]), file=sys.stderr)\n")
    args = [sys.executable, "-c", script, "check", str(REPO / "fixtures" / "seed"), "--cache-dir", str(tmp_path / "c"),
            "--output-format", "text"]
    env = dict(os.environ, NO_COLOR="1")
    cold = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
    warm = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
    rc_cold, loaded_cold = json.loads(cold.stderr.strip().splitlines()[-1])
    rc, loaded = json.loads(warm.stderr.strip().splitlines()[-1])
    assert rc == rc_cold == 1 and warm.stdout == cold.stdout
    assert "pp_attr_lint.index.summary" in loaded_cold  # the cold run did analyse
    ours = {m for m in loaded if not m.startswith("pp_attr_lint_rules")}
    assert ours - WARM_MODULES == set(), "a warm run loads more than it did"
    assert not [m for m in loaded if m.split(".")[0] in ("libcst", "yaml", "rich")]


def test_the_cache_salt_covers_code_in_every_subpackage(tmp_path, monkeypatch):
    """An edited module in a subpackage (index/, workspace/, ...) changes the cache's salt, so an
    edited checkout never replays results an older analyzer wrote."""
    from pp_attr_lint.engine import check

    before = check.code_stamp()
    target = REPO / "pp_attr_lint" / "index" / "summary.py"
    st = os.stat(target)
    try:
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert check.code_stamp() != before
    finally:
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert check.code_stamp() == before


def test_the_wheel_holds_every_module(tmp_path):
    """``pyproject.toml`` lists the packages by hand: a built wheel must hold every module and
    every rule folder's files."""
    got = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-2000:]
    (whl,) = tmp_path.glob("pp_attr_lint-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    want = {str(p.relative_to(REPO)) for p in (REPO / "pp_attr_lint").rglob("*.py") if "__pycache__" not in p.parts}
    want |= {f"pp_attr_lint/builtin_rules/{p.parent.name}/{p.name}" for p in (REPO / "rules").glob("*/rule.*")}
    assert want - names == set()

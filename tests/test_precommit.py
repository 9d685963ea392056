"""pre-commit: the hook definitions, and a real ``pre-commit try-repo`` end to end.

try-repo installs the hook repository into its own virtual environment with pip (``pip install
.``), so this needs pip to find setuptools, libcst, PyYAML and rich (an index or local wheels).
It takes committed files only (plus changes to tracked files), so the test commits a throwaway
copy of this project to a temporary git repository first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "fixtures" / "seed"
VL = Path("minivllm") / "model_executor" / "models" / "qwen3_vl.py"


def test_hook_definitions():
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"pp-attr-lint", "pp-attr-lint-fix"}
    for h in hooks.values():
        assert h["language"] == "python"
        assert h["types"] == ["python"]
        assert h["require_serial"] is True
        assert h["entry"].split()[0] == "pp-attr-lint"
    assert hooks["pp-attr-lint"]["entry"] == "pp-attr-lint check"
    assert hooks["pp-attr-lint-fix"]["entry"] == "pp-attr-lint check --fix"


def test_hook_on_one_changed_file_resolves_the_rest_of_the_package(tmp_path):
    """What the hook runs (``pp-attr-lint check FILE``) on only the changed file still resolves
    the classes of the unchanged files around it (qwen2.py, qwen3.py)."""
    ws = tmp_path / "ws"
    shutil.copytree(SEED, ws, ignore=shutil.ignore_patterns("*.fixed", "__pycache__", "expected.json"))
    r = subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", "--no-cache", "--output-format", "concise",
                        "-q", str(VL)], cwd=ws, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.startswith(f"{VL}:29:20: PPA001 [*] ")
    assert f"at {VL.parent / 'qwen2.py'}:15." in r.stdout


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _hook_repo(dst: Path) -> Path:
    """A throwaway, committed copy of this project (what a pip install needs, and the hooks)."""
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml"):
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, dst / name)
    if not (dst / "README.md").exists():
        (dst / "README.md").write_text("pp-attr-lint\n")
    for d in ("pp_attr_lint", "rules"):
        shutil.copytree(REPO / d, dst / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    _git(dst, "commit", "-q", "-m", "pp-attr-lint (throwaway copy)")
    return dst


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return [exe]


def test_pre_commit_try_repo_end_to_end(tmp_path):
    pre_commit = _pre_commit()
    hook_repo = _hook_repo(tmp_path / "hook-repo")
    # a user's repository: the seed package committed in its fixed state, then the bug staged in
    # qwen3_vl.py only; pre-commit passes only that file to the hook
    ws = tmp_path / "user-repo"
    shutil.copytree(SEED / "minivllm", ws / "minivllm", ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    fixed = (SEED / (str(VL) + ".fixed")).read_bytes()
    buggy = (SEED / VL).read_bytes()
    (ws / VL).write_bytes(fixed)
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "clean")
    (ws / VL).write_bytes(buggy)
    _git(ws, "add", str(VL))
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PP_ATTR_LINT_CACHE_DIR=str(tmp_path / "cache"),
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", NO_COLOR="1", PRE_COMMIT_COLOR="never")

    def try_repo(hook: str, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([*pre_commit, "try-repo", str(hook_repo), hook, "--color", "never", *extra], cwd=ws, env=env,
                              capture_output=True, text=True, timeout=900)

    r = try_repo("pp-attr-lint")
    out = r.stdout + r.stderr
    if r.returncode == 3 or "An unexpected error has occurred" in out:
        pytest.fail(f"pre-commit could not install the hook repository:\n{out[-3000:]}")
    assert r.returncode == 1, out
    assert "pp-attr-lint" in out and "Failed" in out
    assert "- hook id: pp-attr-lint\n- exit code: 1" in out
    assert f"{VL}:29:20: PPA001 [*] `self.language_model` is a `Qwen3LLMForCausalLM`" in out
    assert (ws / VL).read_bytes() == buggy  # the check hook writes nothing

    r = try_repo("pp-attr-lint-fix")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "- hook id: pp-attr-lint-fix\n- files were modified by this hook" in out
    assert "Found 1 error (1 fixed, 0 remaining)." in out
    assert (ws / VL).read_bytes() == fixed

    # on the fixed file, the check hook passes
    _git(ws, "add", str(VL))
    r = try_repo("pp-attr-lint", "--files", str(VL))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout

    # a plugin that imports vLLM, committed where the hook's environment has no vLLM: the hook
    # fails (pp-attr-lint's exit 3) with the message that says how to give it the engine
    if subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True).returncode == 0:
        return  # only where vLLM is not installed here either (the hook's environment is a fresh one)
    from test_faults import _plugin

    _plugin(ws)
    _git(ws, "add", "myplugin")
    r = try_repo("pp-attr-lint", "--files", "myplugin/model.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "- hook id: pp-attr-lint\n- exit code: 3" in out, out
    assert "the checked code imports `vllm`, which cannot be found" in out
    assert "additional_dependencies: [vllm==X.Y.Z]" in out

def test_pre_commit_with_baseline_commit_head(tmp_path):
    """The hook with ``args: [--baseline-commit, HEAD]`` (docs/adoption.md): a commit that only
    edits a comment of a file with an old finding passes, one that adds a finding fails on that
    finding alone; the plain hook fails on the old one."""
    pre_commit = _pre_commit()
    hook_repo = _hook_repo(tmp_path / "hook-repo")
    rev = _git(hook_repo, "rev-parse", "HEAD").strip()
    ws = tmp_path / "user-repo"
    shutil.copytree(SEED / "minivllm", ws / "minivllm", ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    hooks = [{"id": "pp-attr-lint", "alias": "pr-mode", "args": ["--baseline-commit", "HEAD"]},
             {"id": "pp-attr-lint", "alias": "plain", "name": "plain"}]
    (ws / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": str(hook_repo), "rev": rev, "hooks": hooks}]}))
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "the seed bug is already there")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PP_ATTR_LINT_CACHE_DIR=str(tmp_path / "cache"),
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", NO_COLOR="1", PRE_COMMIT_COLOR="never")

    def run(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run([*pre_commit, "run", hook, "--color", "never"], cwd=ws, env=env,
                              capture_output=True, text=True, timeout=900)

    text = (ws / VL).read_text()
    (ws / VL).write_text(text.replace('"""The seed bug', '# a comment edit\n"""The seed bug'))
    _git(ws, "add", str(VL))
    r = run("pr-mode")
    out = r.stdout + r.stderr
    if "An unexpected error has occurred" in out:
        pytest.fail(f"pre-commit could not install the hook repository:\n{out[-3000:]}")
    assert r.returncode == 0, out
    r = run("plain")
    assert r.returncode == 1 and "PPA001" in r.stdout, r.stdout + r.stderr

    start = text.index("class Qwen3VLForConditionalGeneration")
    end = text.index("    def layer_range")
    (ws / VL).write_text((ws / VL).read_text() + "\n\n" + text[start:end].replace("Qwen3VLForConditionalGeneration",
                                                                                  "Another"))
    _git(ws, "add", str(VL))
    r = run("pr-mode")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert out.count("PPA001") == 2 and "Found 1 error." in out  # header and caret of the one finding
    assert f"{VL}:{(ws / VL).read_text().count(chr(10)) - 3}:20: PPA001" in out and "Found 1 error." in out

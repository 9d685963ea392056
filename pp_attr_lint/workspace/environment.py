"""The Python environment: the import folders of an interpreter that hold installed packages
(:func:`environment_paths`), searched after the checked tree and ``--src``, and the installed
distributions that key a run's result (:func:`environment_stamp`)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from .cache import _atomic_write


def environment_paths(python: str | None = None, cache_dir: Path | None = None) -> list[str]:
    """The import folders of a Python environment that hold installed packages: ``sys.path``
    without the standard library, the working directory and zip files.

    ``python``: the interpreter of that environment (like pyright's ``pythonPath``); ``None`` is
    the one running pp-attr-lint (no process started).  Another interpreter is asked once
    (``PYTHON -c 'import sys; ...'``) and the answer kept in ``cache_dir`` keyed by the
    interpreter's path and its ``(mtime, size)``.

    Raises:
        OSError: ``python`` cannot be run or does not answer (the message says which).
    """
    import json

    if python is None:
        paths = list(sys.path[1:])  # [0] is the script's folder or the working directory
        # the standard library's folder (where `os` lives; sysconfig costs an import)
        return _site_folders(paths, {os.path.dirname(os.path.abspath(os.__file__))})
    exe = os.path.abspath(python)
    try:
        st = os.stat(exe)
    except OSError as e:
        raise OSError(f"{python}: no such interpreter ({e.strerror or e})") from None
    key = hashlib.blake2b(f"{exe}|{st.st_mtime_ns}|{st.st_size}".encode(), digest_size=8).hexdigest()
    memo = cache_dir / f"env-{key}.json" if cache_dir is not None else None
    if memo is not None:
        try:
            got = json.loads(memo.read_text(encoding="utf-8"))
            if type(got) is list and all(type(p) is str for p in got):
                return got
        except (OSError, ValueError):
            pass  # missing or damaged: asked again (and written anew) below
    import subprocess

    code = ("import sys, sysconfig, json; p = sysconfig.get_paths(); "
            "print(json.dumps([sys.path, [p['stdlib'], p['platstdlib']]]))")
    try:
        proc = subprocess.run([exe, "-I", "-c", code], capture_output=True, text=True, timeout=60)
        paths, stdlib = json.loads(proc.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as e:
        raise OSError(f"{python}: cannot ask this interpreter for its import path: {e}") from None
    out = _site_folders(paths, {os.path.abspath(x) for x in stdlib})
    if memo is not None:
        try:
            _atomic_write(memo, json.dumps(out).encode())
        except OSError:
            pass
    return out


def _site_folders(paths: list[str], stdlib: set[str]) -> list[str]:
    cwd = os.getcwd()
    out = []
    for p in paths:
        if not p or not os.path.isdir(p):
            continue  # '' (the working directory), zip files, missing folders
        a = os.path.abspath(p)
        if a == cwd or a in stdlib or any(a.startswith(s + os.sep) and "site-packages" not in a
                                          and "dist-packages" not in a for s in stdlib):
            continue
        if a not in out:
            out.append(a)
    return out


def environment_stamp(env_roots: list[str]) -> list[str]:
    """The installed distributions of ``env_roots`` with their versions (the names of their
    ``*.dist-info`` / ``*.egg-info`` entries): part of the cache key of a run's result."""
    out = []
    for r in env_roots:
        try:
            out.extend(sorted(n for n in os.listdir(r) if n.endswith((".dist-info", ".egg-info"))))
        except OSError:
            continue
    return out


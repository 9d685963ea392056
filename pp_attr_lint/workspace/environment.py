"""The Python environment: the import folders of an interpreter that hold installed packages
(:func:`environment_paths`), searched after the checked tree and ``--src``, and the installed
distributions that key a run's result (:func:`environment_stamp`)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from .cache import atomic_write

# seconds an interpreter named by --python may take to print its import path; then it is killed,
# with every process it started (its process group).  $PP_ATTR_LINT_PYTHON_TIMEOUT overrides it.
PROBE_TIMEOUT = 60.0


def probe_timeout() -> float:
    """:data:`PROBE_TIMEOUT`, or ``$PP_ATTR_LINT_PYTHON_TIMEOUT`` (seconds) when set to a positive number."""
    raw = os.environ.get("PP_ATTR_LINT_PYTHON_TIMEOUT")
    try:
        got = float(raw) if raw else PROBE_TIMEOUT
    except ValueError:
        return PROBE_TIMEOUT
    return got if got > 0 else PROBE_TIMEOUT


def environment_paths(python: str | None = None, cache_dir: Path | None = None) -> list[str]:
    """The import folders of a Python environment that hold installed packages: ``sys.path``
    without the standard library, the working directory and zip files.

    ``python``: the interpreter of that environment (like pyright's ``pythonPath``); ``None`` is
    the one running pp-attr-lint (no process started).  Another interpreter is asked once
    (``PYTHON -c 'import sys; ...'``) and the answer kept in ``cache_dir`` keyed by the
    interpreter's path and its ``(mtime, size)``.

    The interpreter runs in a session of its own; one that has not answered within
    :func:`probe_timeout` seconds is killed with every process it started.

    Raises:
        OSError: ``python`` cannot be run, does not answer in time or does not answer like a Python
            interpreter (the message says which).
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
    code = ("import sys, sysconfig, json; p = sysconfig.get_paths(); "
            "print(json.dumps([sys.path, [p['stdlib'], p['platstdlib']]]))")
    rc, stdout, stderr = _probe([exe, "-I", "-c", code], python)
    try:
        paths, stdlib = json.loads(stdout)
        if not (isinstance(paths, list) and isinstance(stdlib, list)
                and all(isinstance(x, str) for x in paths + stdlib)):
            raise ValueError
    except (ValueError, TypeError):
        said = (stderr.strip() or stdout.strip()).splitlines()
        detail = f"; it printed: {said[0][:200]}" if said else ""
        raise OSError(f"{python}: did not answer like a Python interpreter (asked for its import path with "
                      f"`-I -c ...`, it exited with status {rc}{detail}); pass a Python interpreter, "
                      "or `none`") from None
    out = _site_folders(paths, {os.path.abspath(x) for x in stdlib})
    if memo is not None:
        try:
            atomic_write(memo, json.dumps(out).encode())
        except OSError:
            pass
    return out


def _probe(cmd: list[str], python: str) -> tuple[int, str, str]:
    """Run ``cmd`` in a session of its own: ``(exit status, stdout, stderr)``.  Past
    :func:`probe_timeout` the whole process group is killed (the program and whatever it started)
    and ``OSError`` says so; ``OSError`` too when it cannot be started."""
    import signal
    import subprocess

    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except OSError as e:
        raise OSError(f"{python}: cannot run this interpreter: {e.strerror or e}") from None
    timeout = probe_timeout()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException as e:  # the timeout, or Ctrl-C: nothing it started is left running
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.communicate(timeout=5)
        except BaseException:  # noqa: BLE001  (a grandchild that left the group holds the pipes)
            proc.kill()
            proc.wait()
        if isinstance(e, subprocess.TimeoutExpired):
            raise OSError(f"{python}: did not answer like a Python interpreter within {timeout:g} s (asked for "
                          "its import path); stopped it and what it started "
                          "($PP_ATTR_LINT_PYTHON_TIMEOUT sets the limit)") from None
        raise
    return proc.returncode, stdout, stderr


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


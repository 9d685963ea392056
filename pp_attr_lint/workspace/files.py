"""Files: which ``.py`` files the given paths hold (:func:`discover`), and the folder and module
name of each (:func:`package_root`: the ``sys.path`` entry above a file's top package)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple


DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "__pycache__",
)


_ROOT_MEMO: dict[str, tuple[str, tuple[str, ...]]] = {}


def _dir_root(d: str) -> tuple[str, tuple[str, ...]]:
    got = _ROOT_MEMO.get(d)
    if got is None:
        parent = os.path.dirname(d)
        if parent != d and os.path.isfile(os.path.join(d, "__init__.py")):
            root, parts = _dir_root(parent)
            got = (root, parts + (os.path.basename(d),))
        else:
            got = (d, ())
        _ROOT_MEMO[d] = got
    return got


def package_root(path: str) -> tuple[str, str]:
    """The folder that holds ``path``'s top package (the ``sys.path`` entry) and its module name.

    ``/x/vllm/model_executor/models/qwen3.py`` -> ``(/x, "vllm.model_executor.models.qwen3")`` when
    each folder from ``vllm`` down holds an ``__init__.py``.  Remembered for the run, like the
    folders' answers (a check asks three times per file).
    """
    got = _PACKAGE_MEMO.get(path)
    if got is None:
        root, parts = _dir_root(os.path.dirname(os.path.abspath(path)))
        name = os.path.basename(path)
        mod = parts if name == "__init__.py" else parts + (name[:-3] if name.endswith(".py") else name,)
        got = (root, ".".join(mod))
        if os.path.isabs(path):  # a relative path means another file after a chdir
            _PACKAGE_MEMO[path] = got
    return got


_PACKAGE_MEMO: dict[str, tuple[str, str]] = {}


class Problem(NamedTuple):
    """A path :func:`discover` met and did not list: ``kind`` is ``"not-regular"`` (a named pipe,
    a device, a socket, or a link to one: never opened, as reading one can hang or never end),
    ``"unreadable"`` (a folder that cannot be listed) or ``"removed"`` (a temporary file a killed
    ``--fix`` left, removed); ``message`` says what it is, in words."""

    path: str
    kind: str
    message: str


def _not_regular(path: str, link: bool) -> str | None:
    """Why ``path`` (``link``: a symbolic link, followed) is not a file to read, or ``None`` when
    it is a regular file or cannot be told (a dangling link: its read reports it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    from ..textio import file_kind

    what = file_kind(mode)
    if link:
        return f"a symbolic link to {os.path.realpath(path)}, {what}"
    return what


def discover(paths: list[Path], exclude: list[str], include_explicit: bool = True,
             problems: list[Problem] | None = None) -> tuple[list[str], list[str]]:
    """The ``.py`` files under ``paths``, sorted and de-duplicated, and the errors met.

    Directories are walked without following symbolic links to directories (no loops); a folder
    or file whose name matches an ``exclude`` glob (fnmatch, matched against the name and the
    path) is skipped unless it was named explicitly.  Errors are messages for the paths named
    in ``paths`` that cannot be checked: one that does not exist or cannot be reached, a folder
    that cannot be listed, a file that is not a regular file (a named pipe, a device).  Below a
    named folder, a ``.py`` entry that is not a regular file (or a link to one) is never opened
    and a folder that cannot be listed is not walked: each is appended to ``problems`` (a
    :class:`Problem`) when given.  Temporary files that a killed ``--fix`` left in a walked
    folder or beside a named file (see :func:`pp_attr_lint.textio.stale_temporary`) are removed on
    the way (a ``"removed"`` problem each).
    """
    import fnmatch

    from ..textio import remove_stale_temporaries, stale_temporary

    plain = {pat for pat in exclude if not any(c in pat for c in "*?[/")}
    globs = [pat for pat in exclude if pat not in plain]
    problems = problems if problems is not None else []

    def excluded(p: str) -> bool:
        name = os.path.basename(p)
        if name in plain:
            return True
        return any(fnmatch.fnmatchcase(name, pat) or fnmatch.fnmatchcase(p, pat)
                   or fnmatch.fnmatchcase(p, "*/" + pat.lstrip("/")) for pat in globs)

    out: dict[str, str] = {}
    links: set[str] = set()  # walked files that are symbolic links
    named: set[str] = set()  # files named on the command line
    errors: list[str] = []
    stale: list[str] = []  # temporary files of killed runs met while walking
    for p in paths:
        sp = os.path.abspath(p)
        try:
            os.lstat(sp)
        except FileNotFoundError:
            errors.append(f"{p}: No such file or directory")
            continue
        except OSError as e:
            errors.append(f"{p}: cannot access: {e.strerror or e}")
            continue
        if os.path.isdir(sp):
            stack = [sp]
            while stack:  # os.scandir: file types and links come with the listing, no stat per file
                d = stack.pop()
                try:
                    entries = list(os.scandir(d))
                except OSError as e:
                    why = f"cannot list folder: {e.strerror or e}"
                    if d == sp:
                        errors.append(f"{p}: {why}")
                    else:
                        problems.append(Problem(d, "unreadable", why))
                    continue
                for e in entries:
                    if excluded(e.path):
                        continue
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)  # links to folders are not followed: no loops
                        elif e.name.endswith(".py"):
                            link = e.is_symlink()
                            # the listing tells a plain entry's type; a link is followed (one stat)
                            what = _not_regular(e.path, True) if link else (
                                None if e.is_file(follow_symlinks=False) else _not_regular(e.path, False))
                            if what is not None:
                                problems.append(Problem(e.path, "not-regular", what))
                                continue
                            out.setdefault(e.path, e.path)
                            if link:
                                links.add(e.path)
                        elif e.name[:1] == "." and stale_temporary(e.name):
                            stale.append(e.path)
                    except OSError:
                        continue
        elif os.path.exists(sp) or os.path.islink(sp):
            what = _not_regular(sp, os.path.islink(sp))
            if what is not None:
                errors.append(f"{p}: not a regular file ({what}); name Python source files or folders")
                continue
            if include_explicit or not excluded(sp):
                out.setdefault(sp, sp)
                named.add(sp)
    for gone in remove_stale_temporaries(stale, {os.path.dirname(n) for n in named}):
        problems.append(Problem(gone, "removed", "a temporary file left by a killed run"))
    # one file reached through several names (a symbolic link beside its target): check and fix
    # it once, under a name that is not a link when there is one
    # (os.path.realpath costs a stat per path component, so only links and named paths pay for it)
    result = set(out)
    for k in sorted(out):
        if k in links or k in named:
            real = os.path.realpath(k)
            if real != k and real in result:
                result.discard(k)  # its target is checked under its own name
            elif real != k:
                for other in [o for o in result if o != k and (o in links or o in named)]:
                    if os.path.realpath(other) == real:
                        result.discard(k if os.path.islink(k) else other)
                        break
    return sorted(result), errors


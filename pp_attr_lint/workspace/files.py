"""Files: which ``.py`` files the given paths hold (:func:`discover`), and the folder and module
name of each (:func:`package_root`: the ``sys.path`` entry above a file's top package)."""

from __future__ import annotations

import os
from pathlib import Path


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


def discover(paths: list[Path], exclude: list[str], include_explicit: bool = True) -> tuple[list[str], list[str]]:
    """The ``.py`` files under ``paths``, sorted and de-duplicated, and the errors met.

    Directories are walked without following symbolic links to directories (no loops); a folder
    or file whose name matches an ``exclude`` glob (fnmatch, matched against the name and the
    path) is skipped unless it was named explicitly.  Errors are messages for paths that do not
    exist.
    """
    import fnmatch

    plain = {pat for pat in exclude if not any(c in pat for c in "*?[/")}
    globs = [pat for pat in exclude if pat not in plain]

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
    for p in paths:
        sp = os.path.abspath(p)
        if not os.path.lexists(sp):
            errors.append(f"{p}: No such file or directory")
            continue
        if os.path.isdir(sp):
            stack = [sp]
            while stack:  # os.scandir: file types and links come with the listing, no stat per file
                d = stack.pop()
                try:
                    entries = list(os.scandir(d))
                except OSError:
                    continue  # an unreadable folder is skipped, like os.walk does
                for e in entries:
                    if excluded(e.path):
                        continue
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)  # links to folders are not followed: no loops
                        elif e.name.endswith(".py"):
                            out.setdefault(e.path, e.path)
                            if e.is_symlink():
                                links.add(e.path)
                    except OSError:
                        continue
        elif os.path.exists(sp) or os.path.islink(sp):
            if include_explicit or not excluded(sp):
                out.setdefault(sp, sp)
                named.add(sp)
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


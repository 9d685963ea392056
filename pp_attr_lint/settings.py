"""What the resolver may assume about code outside the project (from the rule files)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Factory:
    """A call that builds a model from vLLM's registry, e.g. ``init_vllm_registered_model``.

    ``name`` is the function's name, or a glob of it (``init_*_registered_model``); ``keyword``
    names the argument holding the architecture names; the registry module's tables
    (module-level dicts whose names match ``tables``) map an architecture to
    ``(module relative to package, class)``.  ``registry_module`` and ``package`` may hold
    ``{top}``, the top-level package of the code that defines the factory (:meth:`bound`).  Source:
    vllm/model_executor/models/registry.py (``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``, ...)
    and ``init_vllm_registered_model`` in vllm/model_executor/models/utils.py.
    """

    name: str
    keyword: str
    registry_module: str
    tables: str
    package: str

    def bound(self, top: str) -> "Factory":
        """This factory with ``{top}`` in its registry module and package replaced by ``top``."""
        if "{top}" not in self.registry_module and "{top}" not in self.package:
            return self
        return Factory(name=self.name, keyword=self.keyword, tables=self.tables,
                       registry_module=self.registry_module.replace("{top}", top),
                       package=self.package.replace("{top}", top))


@dataclass(frozen=True)
class Settings:
    """What the resolver may assume about code outside the project."""

    attributeless_bases: tuple[str, ...]
    transparent_decorators: tuple[str, ...]
    factories: tuple[Factory, ...] = ()
    max_path_depth: int = 2

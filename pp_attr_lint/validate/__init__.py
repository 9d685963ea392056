"""``pp-attr-lint validate``: start any architecture of vLLM's registry under real pipeline parallelism.

The linter itself never imports torch, vLLM or transformers. This module only uses
the standard library: it starts ``_driver.py`` with the Python of a separate
environment that has vLLM (see ``scripts/build-validate-env.sh``), watches the
events that the ``vllm.general_plugins`` plugin (``_hook.py``) writes from every
vLLM process, and prints a per-rank summary.

Public API (wired into the CLI by ``pp_attr_lint.cli``): :func:`add_arguments`,
:func:`run`. Exit status of :func:`run`: 0 every rank initialized and both
requests were served; 1 something failed (per-rank summary printed); 2 the
environment cannot run the check (message says what is missing).

The package, by job: :mod:`.command` (the options and :func:`run`), :mod:`.environment` (the
vLLM interpreter, cache folder, device, exit codes), :mod:`.runner` (starting the engine and
watching its ranks), :mod:`.report` (failures, root causes, text), :mod:`.results` (the result
cache and sweep reports), :mod:`.findings` (``--findings``: red as is, green fixed),
:mod:`.archmap` (the registry and the model files' imports), :mod:`.toy_config` and
:mod:`.toy_checkpoint` (the toy model), and, run in the vLLM environment, ``_driver.py`` and
``_hook.py``.
"""

from .command import add_arguments, run  # noqa: F401  (the public API)

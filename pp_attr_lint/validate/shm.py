"""What an engine run leaves in ``/dev/shm``: found and removed when the run ends.

vLLM's processes create POSIX shared memory there (``multiprocessing.shared_memory`` segments of
its message queues, torch's ``torch_<pid>_...`` files, named semaphores) and unlink them on a clean
shutdown; a worker that is killed (a failure, a timeout, Ctrl-C, or the process tree that
``validate`` kills at the end of every run) leaves them behind, and ``/dev/shm`` is memory.

:class:`ShmTracker` takes a snapshot of the entries this user owns before the engine starts, notes
while it runs which entries the processes of its session hold open or mapped
(``/proc/PID/fd``, ``/proc/PID/maps``), and at the end removes the entries that are new since the
snapshot and that no live process outside the engine's session holds, among them those the
engine's processes held or that name one of their pids (``torch_<pid>_...``).  When no other
engine of this ``validate`` ran at the same time, every such new entry is the engine's: all are
removed (an entry created and closed between two looks is found that way too).  Directories and
other users' entries are never touched.
"""

from __future__ import annotations

import os
import re
import threading

SHM_DIR = "/dev/shm"

_LOCK = threading.Lock()
_RUNNING: list["ShmTracker"] = []  # the trackers of engines running now (validate --jobs N runs several)


def _entries(folder: str) -> dict[str, tuple[int, int]]:
    """``{name: (inode, ctime_ns)}`` of the entries of ``folder`` that this user owns, folders left out."""
    uid = os.getuid()
    out = {}
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid == uid and not e.is_dir(follow_symlinks=False):
                    out[e.name] = (st.st_ino, st.st_ctime_ns)
    except OSError:
        pass
    return out


def _all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def session_pids(sid: int) -> list[int]:
    """The live processes of session ``sid`` (the engine's driver starts one: ``start_new_session``)."""
    out = []
    for pid in _all_pids():
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] not in ("Z", "X"):
            out.append(pid)
    return out


def held(pid: int, folder: str = SHM_DIR) -> set[str]:
    """The names under ``folder`` that process ``pid`` has open or mapped."""
    prefix = folder.rstrip("/") + "/"
    out: set[str] = set()

    def add(path: str) -> None:
        if path.startswith(prefix):
            name = path[len(prefix):]
            if name.endswith(" (deleted)"):
                name = name[:-len(" (deleted)")]
            if name and "/" not in name:
                out.add(name)

    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    add(parts[5].rstrip("\n"))
    except OSError:
        pass
    return out


class ShmTracker:
    """The ``/dev/shm`` entries of one engine run (see the module docstring): make it before the
    engine starts, :meth:`poll` it while the engine runs, :meth:`cleanup` once it is killed."""

    def __init__(self, folder: str = SHM_DIR):
        self.folder = folder
        self.before = _entries(folder)
        self.seen: set[str] = set()  # entries the engine's processes held
        self.pids: set[int] = set()  # the engine's processes seen
        self.sid: int | None = None
        self.overlapped = False  # another engine ran at the same time
        self.done = False
        with _LOCK:
            for other in _RUNNING:
                other.overlapped = True
                self.overlapped = True
            _RUNNING.append(self)

    def poll(self, sid: int) -> None:
        """Note the processes of the engine's session and the entries they hold."""
        self.sid = sid
        for pid in session_pids(sid):
            self.pids.add(pid)
            self.seen |= held(pid, self.folder)

    def cleanup(self) -> list[str]:
        """Remove what the engine left (see the module docstring); the names removed, sorted.
        Call it once the engine's process tree is killed; later calls do nothing."""
        with _LOCK:
            if self.done:
                return []
            self.done = True
            if self in _RUNNING:
                _RUNNING.remove(self)
        if self.sid is not None:
            self.poll(self.sid)  # whatever is still dying
        now = _entries(self.folder)
        new = [n for n, key in now.items() if self.before.get(n) != key]
        if not new:
            return []
        outside: set[str] = set()  # held by a live process that is not the engine's
        me = os.getpid()
        for pid in _all_pids():
            if pid not in self.pids or pid == me:
                outside |= held(pid, self.folder)
        pid_names = re.compile(r"(?<![0-9])(?:" + "|".join(str(p) for p in sorted(self.pids)) + r")(?![0-9])") \
            if self.pids else None
        removed = []
        for name in sorted(new):
            if name in outside:
                continue
            ours = name in self.seen or (pid_names is not None and pid_names.search(name)) or not self.overlapped
            if not ours:
                continue
            try:
                os.unlink(os.path.join(self.folder, name))
                removed.append(name)
            except OSError:
                pass
        return removed


def cleanup_all() -> None:
    """Clean up after every engine running now (``validate`` killed by a signal)."""
    with _LOCK:
        trackers = list(_RUNNING)
    for t in trackers:
        t.cleanup()

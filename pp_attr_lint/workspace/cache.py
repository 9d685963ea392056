"""The cache: per-root stat indexes, summary packs and memoized run results.

Layout (``--cache-dir``, default :func:`default_cache_dir`)::

    <dir>/<salt>/stat-<root-hash>        {relative path: (mtime_ns, size, content hash, prefilter hit)}
    <dir>/<salt>/sums-<root-hash>        {content hash: marshal'ed summary (or parse error)}
    <dir>/<salt>/memo-<run-hash>         a whole run's result and the files it depended on

``salt`` is the caller's (:func:`pp_attr_lint.engine.check.cache_salt`: the pp-attr-lint version,
the summary format, the Python version, what the enabled rules ask of the index and the code of
the analyzer and the built-in rules).  Every write goes to a temporary file in the same folder and
is moved into place with :func:`os.replace`, so concurrent runs (pre-commit starts several) never
see a partial file.  A root's summaries live in one file, read at most once and written once per
run: a cold run of vLLM 0.21.0 makes about 120 of them, and one file each (in ``<hh>/`` fan-out
folders) cost 0.1-0.2 s of a 1.3 s run in file and folder creation on ext4.  The file keeps the
summaries of the contents the stat index names, so edits do not make it grow.

The cache is bounded: after a run that wrote to it, the files of the ``<salt>`` folders (of this
salt and of any other, such as an older pp-attr-lint's) are removed least recently used first
(their modification time, which a read of a memo, stat index or pack renews) until they hold at
most :func:`size_limit` bytes (``$PP_ATTR_LINT_CACHE_MAX_MB``, default 256 MB); other files below
the folder (``audit``'s wheels, ``validate``'s files) are not counted and never removed.  A
temporary file that a killed run left there is removed too.

Every file carries a checksum (CRC-32 of the memo and the stat index as a whole, of the pack's index
and of each summary in it), and what a file holds is checked to have the shape this module writes:
a damaged file or entry (cut short, flipped bytes, garbage written over it) is ignored, as if it
were missing, and made anew by the run.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import zlib
from pathlib import Path


def default_cache_dir() -> Path:
    """``$PP_ATTR_LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/pp-attr-lint`` (``~/.cache/pp-attr-lint``):
    summaries, run results, wheels (``audit``) and validate's files live below it."""
    env = os.environ.get("PP_ATTR_LINT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pp-attr-lint"


DEFAULT_MAX_MB = 256


def size_limit() -> int:
    """The cache's bound in bytes: ``$PP_ATTR_LINT_CACHE_MAX_MB`` megabytes (10**6 bytes; ``0``
    keeps only what the latest run wrote), else :data:`DEFAULT_MAX_MB`.  Raises ``ValueError``
    naming the variable when it is not a whole number >= 0."""
    raw = os.environ.get("PP_ATTR_LINT_CACHE_MAX_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_MB * 10**6
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise ValueError(f"$PP_ATTR_LINT_CACHE_MAX_MB: expected a whole number of megabytes >= 0, got {raw!r}")
    return mb * 10**6


_SALT_NAME = re.compile(r"[0-9a-f]{12}")  # the folders Cache makes: blake2b(salt, digest_size=6)


def evict(directory: Path, limit: int, keep: frozenset = frozenset()) -> list[str]:
    """Remove files of the salt folders under ``directory`` (``<dir>/<12 hex digits>/``), least
    recently modified first, until they hold at most ``limit`` bytes; ``keep`` (paths) are never
    removed (what this run wrote).  Temporary files of killed runs (see
    :func:`pp_attr_lint.textio.stale_temporary`) go first, whatever the size; folders left empty
    are removed.  Returns the removed paths; errors (a file another run removed meanwhile) are
    skipped."""
    from ..textio import stale_temporary

    entries = []  # (mtime_ns, size, path)
    removed = []
    folders = []
    try:
        with os.scandir(directory) as it:
            folders = [e.path for e in it if _SALT_NAME.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for folder in folders:
        try:
            with os.scandir(folder) as it:
                for e in it:
                    try:
                        if not e.is_file(follow_symlinks=False):
                            continue
                        if e.name[:1] == "." and stale_temporary(e.name):
                            os.unlink(e.path)
                            removed.append(e.path)
                            continue
                        s = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries.append((s.st_mtime_ns, s.st_size, e.path))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        if path in keep:
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed.append(path)
    for folder in folders:
        try:
            os.rmdir(folder)  # only when empty
        except OSError:
            pass
    return removed


def touch(path) -> None:
    """Mark a cache file as used now (its modification time: the eviction's order)."""
    try:
        os.utime(path)
    except OSError:
        pass


_SEAL_MAGIC = b"PPC1"


def seal(data: bytes) -> bytes:
    """``data`` behind a magic and its CRC-32, for :func:`unseal` to check."""
    return _SEAL_MAGIC + zlib.crc32(data).to_bytes(4, "little") + data


def unseal(raw: bytes) -> bytes:
    """What :func:`seal` sealed; raises ``ValueError`` when ``raw`` is not a sealed file or its
    checksum does not match (the file is damaged)."""
    if raw[:4] != _SEAL_MAGIC or zlib.crc32(raw[8:]) != int.from_bytes(raw[4:8], "little"):
        raise ValueError("damaged cache file")
    return raw[8:]


def read_sealed(path) -> object:
    """The marshal'ed value sealed in the file at ``path``; raises ``OSError``, ``ValueError``,
    ``EOFError`` or ``TypeError`` when it is missing or damaged."""
    with open(path, "rb") as f:
        return marshal.loads(unseal(f.read()))


def atomic_write(path: Path, data: bytes) -> None:
    from ..textio import atomic_write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


class Cache:
    """Content-addressed summaries plus per-root stat indexes; ``enabled=False`` keeps it in memory."""

    def __init__(self, directory: Path | None, salt_src: str, enabled: bool = True, memory: bool = False):
        """``salt_src``: everything the summaries, prefilter results and run results depend on
        besides the files (:func:`pp_attr_lint.engine.check.cache_salt`); entries are kept under
        a folder named by its hash, so a change of any of it starts an empty cache.  ``memory``:
        when not enabled, keep the summaries made in this process (never on disk), for a later
        check in the same process (``--fix --no-cache`` checks again after fixing)."""
        salt = hashlib.blake2b(salt_src.encode(), digest_size=6).hexdigest()
        self.enabled = enabled and directory is not None
        self.root = os.path.abspath(directory) if directory is not None else None  # the --cache-dir
        self._written: set[str] = set()  # files this run wrote (never evicted by it)
        self._mem: dict[tuple[str, str], bytes] | None = {} if memory and not self.enabled else None
        self.dir = (directory / salt) if directory is not None else None
        self._stat: dict[str, dict] = {}
        self._dirty: set[str] = set()
        self._packs: dict[str, tuple[dict, memoryview]] = {}  # root -> its pack as read
        self._new: dict[str, dict] = {}  # root -> {digest: summary} made in this run

    def summary(self, digest: str, root: str):
        """The cached :func:`summarize_file` result of the file of ``root`` whose content hash is
        ``digest``, or ``None``.  Only that entry of the root's pack is unmarshalled."""
        if not self.enabled:
            if self._mem is not None and (root, digest) in self._mem:
                return marshal.loads(self._mem[(root, digest)])  # a copy, as from a pack
            return None
        got = self._new.get(root, {}).get(digest)
        if got is not None:
            return got
        index, data = self._pack(root)
        where = index.get(digest)
        if where is None:
            return None
        blob = data[where[0]:where[0] + where[1]]
        if zlib.crc32(blob) != where[2]:
            return None  # a damaged entry: summarized anew
        try:
            got = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            return None
        return got if _is_summary(got) else None

    def has_summary(self, digest: str, root: str) -> bool:
        """Whether :meth:`summary` has an entry for ``digest`` (nothing is unmarshalled)."""
        if not self.enabled:
            return self._mem is not None and (root, digest) in self._mem
        return digest in self._new.get(root, ()) or digest in self._pack(root)[0]

    def put_summary(self, digest: str, value, root: str) -> None:
        """Remember a :func:`summarize_file` result; written to the root's pack by :meth:`flush`."""
        if self.enabled:
            self._new.setdefault(root, {})[digest] = value
        elif self._mem is not None and digest is not None:
            try:
                self._mem[(root, digest)] = marshal.dumps(value)
            except ValueError:  # not marshal-able: made again when asked
                pass

    def load_pack(self, root: str) -> None:
        """Read the root's summary pack now (before forking workers, so that they share it)."""
        if self.enabled:
            self._pack(root)

    def _pack(self, root: str) -> tuple[dict, memoryview]:
        """The root's pack as read at its first use: ``({digest: (offset, length)}, blobs)``."""
        got = self._packs.get(root)
        if got is None:
            got = self._packs[root] = _read_pack(self._sums_path(root))
            if got[0]:
                touch(self._sums_path(root))
        return got

    def memo(self, key: str):
        """A memoized run result (see :func:`pp_attr_lint.engine.check.check`) or ``None``."""
        if not self.enabled:
            return None
        path = self.dir / f"memo-{key}"  # type: ignore[operator]
        try:
            got = read_sealed(path)
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if type(got) is not dict:
            return None
        touch(path)  # recently used: evicted last
        return got

    def owns(self, path: str) -> bool:
        """Whether ``path`` (absolute) is the cache's folder or what the cache writes in it (the
        ``<salt>`` folders, ``rules/``, ``env-*``): a run never depends on those, also when the
        folder is inside the checked tree.  Other files there (``audit``'s unpacked wheels, which
        are checked) are not the cache's own."""
        root = self.root
        if root is None or not path.startswith(root):
            return False
        if path == root:
            return True
        rest = path[len(root):]
        if rest[:1] != os.sep:
            return False
        top = rest[1:].split(os.sep, 1)[0]
        return top == "rules" or top.startswith("env-") or _SALT_NAME.fullmatch(top) is not None

    def evict(self) -> None:
        """Bound the cache after this run wrote to it (see :func:`evict`, :func:`size_limit`);
        nothing happens when it is disabled or nothing was written."""
        if not self.enabled or not self._written:
            return
        try:
            limit = size_limit()
        except ValueError:
            limit = DEFAULT_MAX_MB * 10**6  # the CLI reports a bad value before the run
        evict(Path(self.root), limit, frozenset(self._written))

    def put_memo(self, key: str, value) -> None:
        if self.enabled:
            path = self.dir / f"memo-{key}"  # type: ignore[operator]
            try:
                atomic_write(path, seal(marshal.dumps(value)))
            except (OSError, ValueError):
                return
            self._written.add(str(path))

    def _stat_path(self, root: str) -> Path:
        return self.dir / ("stat-" + hashlib.blake2b(root.encode(), digest_size=8).hexdigest())  # type: ignore[operator]

    def _sums_path(self, root: str) -> Path:
        return self.dir / ("sums-" + hashlib.blake2b(root.encode(), digest_size=8).hexdigest())  # type: ignore[operator]

    def stat_index(self, root: str) -> dict:
        idx = self._stat.get(root)
        if idx is None:
            idx = self._stat[root] = _read_dict(self._stat_path(root)) if self.enabled else {}
            if idx:
                touch(self._stat_path(root))
        return idx

    def mark(self, root: str) -> None:
        self._dirty.add(root)

    def flush(self) -> None:
        """Write the stat indexes and summary packs that changed.  A root's pack keeps the
        summaries of the contents its stat index still names (older versions of edited files are
        dropped); summaries another run wrote meanwhile are merged in, not overwritten."""
        if not self.enabled:
            return
        try:
            for root in self._dirty:
                atomic_write(self._stat_path(root), seal(marshal.dumps(self._stat[root])))
                self._written.add(str(self._stat_path(root)))
            for root, new in self._new.items():
                if not new:
                    continue
                live = {entry[2] for entry in self.stat_index(root).values()}
                index, data = _read_pack(self._sums_path(root))  # as it is now: another run may have added
                blobs = {d: data[o:o + n] for d, (o, n, crc) in index.items()
                         if d in live and zlib.crc32(data[o:o + n]) == crc}  # damaged entries dropped
                blobs.update((d, marshal.dumps(v)) for d, v in new.items() if d in live)
                atomic_write(self._sums_path(root), _pack_bytes(blobs))
                self._written.add(str(self._sums_path(root)))
        except OSError:
            return  # a read-only or full disk: the next run recomputes
        self._dirty.clear()
        self._new.clear()


def _is_summary(got) -> bool:
    """Whether ``got`` has the shape of a cached :func:`summarize_file` result: ``("ok", dict)`` or
    ``("syntax", (message, line, column))``."""
    if type(got) is not tuple or len(got) != 2:
        return False
    kind, value = got
    if kind == "ok":
        return type(value) is dict
    return (kind == "syntax" and type(value) in (tuple, list) and len(value) == 3 and type(value[0]) is str
            and type(value[1]) is int and type(value[2]) is int)


def _is_stat_entry(key, v) -> bool:
    """Whether ``key: v`` has the shape of a stat index entry: ``path: (mtime_ns, size, content
    hash or None, prefilter mask)``."""
    return (type(key) is str and type(v) is tuple and len(v) == 4 and type(v[0]) is int and type(v[1]) is int
            and (v[2] is None or type(v[2]) is str) and type(v[3]) in (int, bool))


def _read_dict(path: Path) -> dict:
    """The stat index at ``path``; empty when it is missing or damaged (entries of another shape
    are left out)."""
    try:
        got = read_sealed(path)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if type(got) is not dict:
        return {}
    return {k: v for k, v in got.items() if _is_stat_entry(k, v)}


_PACK_MAGIC = b"PPS2"


def _pack_bytes(blobs: dict[str, bytes]) -> bytes:
    """A summary pack: magic, the length of the index (4 bytes, little-endian), the index's CRC-32
    (4 bytes), the marshal'ed index ``{digest: (offset, length, CRC-32)}`` and the marshal'ed
    summaries one after the other."""
    index, offset = {}, 0
    for d, b in blobs.items():
        index[d] = (offset, len(b), zlib.crc32(b))
        offset += len(b)
    head = marshal.dumps(index)
    return b"".join((_PACK_MAGIC, len(head).to_bytes(4, "little"), zlib.crc32(head).to_bytes(4, "little"), head,
                     *blobs.values()))


def _read_pack(path: Path) -> tuple[dict, memoryview]:
    """``(index, blobs)`` of the pack at ``path``; empty when it is missing or damaged."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] != _PACK_MAGIC:
            raise ValueError
        n = int.from_bytes(data[4:8], "little")
        head = data[12:12 + n]
        if len(head) != n or zlib.crc32(head) != int.from_bytes(data[8:12], "little"):
            raise ValueError
        index = marshal.loads(head)
        size = len(data) - 12 - n
        if not isinstance(index, dict) or not all(
                type(v) is tuple and len(v) == 3 and type(v[0]) is int and type(v[1]) is int and type(v[2]) is int
                and 0 <= v[0] and 0 <= v[1] and v[0] + v[1] <= size for v in index.values()):
            raise ValueError
        return index, memoryview(data)[12 + n:]
    except (OSError, EOFError, ValueError, TypeError):
        return {}, memoryview(b"")


"""Index: which files exist, what module each one is, and their summaries (cached by content hash).

The expensive step is parsing, so a run reads as little as it can:

1. discover the ``.py`` files under the given paths (``stat`` only);
2. for each, a *text prefilter* decides whether it can contain a watched read at all; its result
   is cached per file together with ``(mtime_ns, size, content hash)``, so an unchanged file is not
   even read on the next run (the hash is taken only of files a rule wants or that are loaded as
   a dependency: it keys their summaries; ``None`` for the rest);
3. only files that pass are summarized (``ast``), plus the modules their receivers lead to
   (imports, bases, the registry), loaded lazily by module name.

Cache layout (``--cache-dir``, default ``$PP_ATTR_LINT_CACHE_DIR`` or ``~/.cache/pp-attr-lint``)::

    <dir>/<salt>/stat-<root-hash>        {relative path: (mtime_ns, size, content hash, prefilter hit)}
    <dir>/<salt>/sums-<root-hash>        {content hash: marshal'ed summary (or parse error)}
    <dir>/<salt>/memo-<run-hash>         a whole run's result and the files it depended on

``salt`` covers the pp-attr-lint version, the summary format, the Python version and the watched
attribute names.  Every write goes to a temporary file in the same folder and is moved into place
with :func:`os.replace`, so concurrent runs (pre-commit starts several) never see a partial file.
A root's summaries live in one file, read at most once and written once per run: a cold run of
vLLM 0.21.0 makes about 120 of them, and one file each (in ``<hh>/`` fan-out folders) cost 0.1-0.2 s
of a 1.3 s run in file and folder creation on ext4.  The file keeps the summaries of the contents
the stat index names, so edits do not make it grow.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .plugin import IndexSpec

SUMMARY_VERSION = 18  # bump when the summary format of pp_attr_lint.index changes

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "__pycache__",
)


def default_cache_dir() -> Path:
    """``$PP_ATTR_LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/pp-attr-lint`` (``~/.cache/pp-attr-lint``):
    summaries, run results, wheels (``audit``) and validate's files live below it."""
    env = os.environ.get("PP_ATTR_LINT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pp-attr-lint"


def _atomic_write(path: Path, data: bytes) -> None:
    from .textio import atomic_write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


def _code_stamp() -> str:
    """(mtime, size) of the modules that decide a result (the analyzer and the built-in rules'
    code), so that an edited checkout or an upgraded install never reads results an older
    analyzer wrote."""
    from .rules import builtin_rule_folder

    here = os.path.dirname(os.path.abspath(__file__))
    names = sorted(os.path.join(here, n) for n in os.listdir(here) if n.endswith(".py"))
    folder = builtin_rule_folder()
    try:
        names += sorted(str(p) for p in folder.glob("*/rule.py"))
    except OSError:
        pass
    out = []
    for name in names:
        try:
            s = os.stat(name)
            out.append(f"{s.st_mtime_ns}:{s.st_size}")
        except OSError:
            out.append("-")
    return ",".join(out)


class Cache:
    """Content-addressed summaries plus per-root stat indexes; ``enabled=False`` keeps it in memory."""

    def __init__(self, directory: Path | None, spec_key: str, enabled: bool = True):
        """``spec_key``: :attr:`pp_attr_lint.index.IndexSpec.key` of the enabled rules (what the
        summaries and prefilter results depend on)."""
        salt_src = f"{__version__}|{SUMMARY_VERSION}|{sys.version_info[:2]}|{spec_key}|{_code_stamp()}"
        salt = hashlib.blake2b(salt_src.encode(), digest_size=6).hexdigest()
        self.enabled = enabled and directory is not None
        self.dir = (directory / salt) if directory is not None else None
        self._stat: dict[str, dict] = {}
        self._dirty: set[str] = set()
        self._packs: dict[str, tuple[dict, memoryview]] = {}  # root -> its pack as read
        self._new: dict[str, dict] = {}  # root -> {digest: summary} made in this run

    def summary(self, digest: str, root: str):
        """The cached :func:`summarize_file` result of the file of ``root`` whose content hash is
        ``digest``, or ``None``.  Only that entry of the root's pack is unmarshalled."""
        if not self.enabled:
            return None
        got = self._new.get(root, {}).get(digest)
        if got is not None:
            return got
        index, data = self._pack(root)
        where = index.get(digest)
        if where is None:
            return None
        try:
            return marshal.loads(data[where[0]:where[0] + where[1]])
        except (EOFError, ValueError, TypeError):
            return None

    def has_summary(self, digest: str, root: str) -> bool:
        """Whether :meth:`summary` has an entry for ``digest`` (nothing is unmarshalled)."""
        return self.enabled and (digest in self._new.get(root, ()) or digest in self._pack(root)[0])

    def put_summary(self, digest: str, value, root: str) -> None:
        """Remember a :func:`summarize_file` result; written to the root's pack by :meth:`flush`."""
        if self.enabled:
            self._new.setdefault(root, {})[digest] = value

    def load_pack(self, root: str) -> None:
        """Read the root's summary pack now (before forking workers, so that they share it)."""
        if self.enabled:
            self._pack(root)

    def _pack(self, root: str) -> tuple[dict, memoryview]:
        """The root's pack as read at its first use: ``({digest: (offset, length)}, blobs)``."""
        got = self._packs.get(root)
        if got is None:
            got = self._packs[root] = _read_pack(self._sums_path(root))
        return got

    def memo(self, key: str):
        """A memoized run result (see :func:`pp_attr_lint.checker.check`) or ``None``."""
        if not self.enabled:
            return None
        try:
            with open(self.dir / f"memo-{key}", "rb") as f:  # type: ignore[operator]
                return marshal.load(f)
        except (OSError, EOFError, ValueError, TypeError):
            return None

    def put_memo(self, key: str, value) -> None:
        if self.enabled:
            try:
                _atomic_write(self.dir / f"memo-{key}", marshal.dumps(value))  # type: ignore[operator]
            except (OSError, ValueError):
                pass

    def _stat_path(self, root: str) -> Path:
        return self.dir / ("stat-" + hashlib.blake2b(root.encode(), digest_size=8).hexdigest())  # type: ignore[operator]

    def _sums_path(self, root: str) -> Path:
        return self.dir / ("sums-" + hashlib.blake2b(root.encode(), digest_size=8).hexdigest())  # type: ignore[operator]

    def stat_index(self, root: str) -> dict:
        idx = self._stat.get(root)
        if idx is None:
            idx = self._stat[root] = _read_dict(self._stat_path(root)) if self.enabled else {}
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
                _atomic_write(self._stat_path(root), marshal.dumps(self._stat[root]))
            for root, new in self._new.items():
                if not new:
                    continue
                live = {entry[2] for entry in self.stat_index(root).values()}
                index, data = _read_pack(self._sums_path(root))  # as it is now: another run may have added
                blobs = {d: data[o:o + n] for d, (o, n) in index.items() if d in live}
                blobs.update((d, marshal.dumps(v)) for d, v in new.items() if d in live)
                _atomic_write(self._sums_path(root), _pack_bytes(blobs))
        except OSError:
            return  # a read-only or full disk: the next run recomputes
        self._dirty.clear()
        self._new.clear()


def _read_dict(path: Path) -> dict:
    """The marshal'ed dict at ``path``; empty when it is missing or damaged."""
    try:
        with open(path, "rb") as f:
            got = marshal.load(f)
        return got if isinstance(got, dict) else {}
    except (OSError, EOFError, ValueError, TypeError):
        return {}


_PACK_MAGIC = b"PPS1"


def _pack_bytes(blobs: dict[str, bytes]) -> bytes:
    """A summary pack: magic, the length of the index (4 bytes, little-endian), the marshal'ed
    index ``{digest: (offset, length)}`` and the marshal'ed summaries one after the other."""
    index, offset = {}, 0
    for d, b in blobs.items():
        index[d] = (offset, len(b))
        offset += len(b)
    head = marshal.dumps(index)
    return b"".join((_PACK_MAGIC, len(head).to_bytes(4, "little"), head, *blobs.values()))


def _read_pack(path: Path) -> tuple[dict, memoryview]:
    """``(index, blobs)`` of the pack at ``path``; empty when it is missing or damaged."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] != _PACK_MAGIC:
            raise ValueError
        n = int.from_bytes(data[4:8], "little")
        index = marshal.loads(data[8:8 + n])
        size = len(data) - 8 - n
        if not isinstance(index, dict) or not all(
                type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int
                and 0 <= v[0] and 0 <= v[1] and v[0] + v[1] <= size for v in index.values()):
            raise ValueError
        return index, memoryview(data)[8 + n:]
    except (OSError, EOFError, ValueError, TypeError):
        return {}, memoryview(b"")


def make_prefilter(attrs: frozenset[str], prefilters: tuple = ()):
    """A bytes -> int test: bit ``k`` is set when the rules' own ``prefilters[k]`` (bytes -> bool)
    accepts the file, bit ``len(prefilters)`` when the file can contain a watched read with a
    receiver other than plain ``self`` (``x.start_layer``, ``a.b.start_layer``, ``(...).start_layer``,
    ``getattr(x, "start_layer")``); 0 means no rule wants the file.  It may say yes too often
    (comments), never too rarely.

    It looks for the names with :meth:`bytes.find` and inspects only a short window before each
    occurrence of an attribute, which is much faster than a regular expression over the whole file."""
    attr_needles = [a.encode() for a in sorted(attrs)]
    attr_bit = 1 << len(prefilters)

    def hit(data: bytes) -> int:
        mask = 0
        for k, pf in enumerate(prefilters):
            if pf(data):
                mask |= 1 << k
        return mask | (attr_bit if attrs_hit(data) else 0)

    def attrs_hit(data: bytes) -> bool:
        for needle in attr_needles:
            i = data.find(needle)
            n = len(needle)
            while i >= 0:
                end = i + n
                if (end >= len(data) or data[end] not in _WORD) and (i == 0 or data[i - 1] not in _WORD):
                    prev = data[i - 1:i]
                    if prev in (b'"', b"'") and data[end:end + 1] == prev:
                        return True  # getattr(x, "start_layer")
                    if _other_receiver(data, i):
                        return True
                i = data.find(needle, end)
        return False

    return hit


_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_BLANK = frozenset(b" \t\n\r\f\v\\")  # what may stand between a receiver, its dot and the name
_WINDOW = 256  # bytes before an attribute name read for its receiver


def _other_receiver(data: bytes, i: int) -> bool:
    """Whether the name at byte ``i`` follows a receiver other than plain ``self``: ``x.NAME``,
    ``a.b.NAME`` or ``(...).NAME`` (blanks and ``\\`` line joins allowed around the dots); not
    ``self.NAME``, a bare ``NAME`` or ``x[0].NAME``.  Reads at most :data:`_WINDOW` bytes backward."""
    lo = max(0, i - _WINDOW)
    j = i
    while j > lo and data[j - 1] in _BLANK:
        j -= 1
    if j == lo or data[j - 1] != 0x2E:  # `.`
        return False
    j -= 1
    while j > lo and data[j - 1] in _BLANK:
        j -= 1
    if j > lo and data[j - 1] == 0x29:  # `)`
        return True
    k = j
    while k > lo and data[k - 1] in _WORD:
        k -= 1
    if k == j:
        return False
    m = k
    while m > lo and data[m - 1] in _BLANK:
        m -= 1
    if m > lo and data[m - 1] == 0x2E:  # `a.b.NAME`
        return True
    return data[k:j] != b"self"


def summarize_file(data: bytes, spec: IndexSpec, path: str) -> tuple:
    """Decode and summarize one file's bytes (what :meth:`Project.load` does on a cache miss; a
    pure function of its arguments, so that worker processes can run it).

    Args:
        data: the file's bytes.
        spec: what the enabled rules ask of the index.
        path: the file's path, for messages only.

    Returns:
        ``("ok", summary)`` (see :func:`pp_attr_lint.index.summarize`), ``("syntax", (message,
        line, column))`` when it does not parse (columns 0-based) or ``("error", message)`` when
        it cannot be decoded.  Raises nothing for bad input.
    """
    from .index import summarize
    from .textio import decode_source

    try:
        text = decode_source(data)
    except UnicodeDecodeError as e:
        return ("error", f"cannot decode file: {e.reason} at byte {e.start}")
    except SyntaxError as e:
        return ("error", f"cannot decode file: {e.msg}")
    try:
        return ("ok", summarize(text, spec, str(path)))
    except SyntaxError as e:
        return ("syntax", (e.msg or "invalid syntax", e.lineno or 1, (e.offset or 1) - 1))
    except (RecursionError, MemoryError):  # nesting too deep for the parser (as CPython's own)
        return ("syntax", ("too many nested parentheses or operators to parse", 1, 0))


def _read_bytes(path: str) -> bytes | str:
    """The file's bytes, or the message of the error that reading it raised."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return f"cannot read file: {e.strerror or e}"


def unchanged(touched: dict) -> bool:
    """Whether every file in ``touched`` still has its ``(mtime_ns, size)`` and every path
    recorded as missing (``None``) is still missing."""
    for path, key in touched.items():
        try:
            s = os.stat(path)
        except OSError:
            if key is None:
                continue
            return False
        if key is None or s.st_mtime_ns != key[0] or s.st_size != key[1]:
            return False
    return True


def _rel(st: "FileState") -> str:
    root = st.root.rstrip(os.sep) + os.sep
    return st.path[len(root):] if st.path.startswith(root) else os.path.relpath(st.path, st.root)


@dataclass
class FileState:
    path: str  # absolute
    root: str
    module: str
    is_package: bool
    digest: str | None = None
    hit: bool | None = None
    error: str | None = None  # decode / read error
    summary: dict | None = None
    syntax_error: tuple | None = None  # (message, line, col)


_ROOT_MEMO: dict[str, tuple[str, tuple[str, ...]]] = {}


def _dir_root(d: str) -> tuple[str, tuple[str, ...]]:
    got = _ROOT_MEMO.get(d)
    if got is None:
        parent = os.path.dirname(d)
        if parent != d and os.path.isfile(os.path.join(d, "__init__.py")):
            root, parts = _dir_root(parent)
            got = (root, parts + (os.path.basename(d),))
        else:
            got = (d, ())
        _ROOT_MEMO[d] = got
    return got


def package_root(path: str) -> tuple[str, str]:
    """The folder that holds ``path``'s top package (the ``sys.path`` entry) and its module name.

    ``/x/vllm/model_executor/models/qwen3.py`` -> ``(/x, "vllm.model_executor.models.qwen3")`` when
    each folder from ``vllm`` down holds an ``__init__.py``.  Remembered for the run, like the
    folders' answers (a check asks three times per file).
    """
    got = _PACKAGE_MEMO.get(path)
    if got is None:
        root, parts = _dir_root(os.path.dirname(os.path.abspath(path)))
        name = os.path.basename(path)
        mod = parts if name == "__init__.py" else parts + (name[:-3] if name.endswith(".py") else name,)
        got = (root, ".".join(mod))
        if os.path.isabs(path):  # a relative path means another file after a chdir
            _PACKAGE_MEMO[path] = got
    return got


_PACKAGE_MEMO: dict[str, tuple[str, str]] = {}


class Project:
    """The files being checked and every module resolvable from them (a :class:`SummarySource`)."""

    def __init__(self, roots: list[Path], spec: IndexSpec, cache: Cache,
                 env_roots: list[str] = (),
                 external: frozenset[str] = frozenset(("torch", "builtins", "typing", "typing_extensions", "abc"))):
        """``roots``: the checked tree's folder and ``--src`` folders (a top-level package found
        in two of them is ambiguous).  ``spec``: what the enabled rules ask of the index.
        ``env_roots``: the environment's import folders, searched in order, like ``sys.path``, for
        top-level packages no root holds; packages named in ``external`` are never read from
        there (torch stays what the facts' attribute-less base list says it is)."""
        self.roots = [str(r) for r in dict.fromkeys(Path(os.path.abspath(r)) for r in roots)]
        self.spec = spec
        self.cache = cache
        self.prefilter = make_prefilter(spec.attrs, spec.prefilters)
        self.by_module: dict[str, FileState | None] = {}
        self.env_roots = [os.path.abspath(r) for r in env_roots if os.path.abspath(r) not in self.roots]
        self.external = external
        self._top_in_roots: dict[str, bool] = {}
        self.by_path: dict[str, FileState] = {}
        self._root_set = set(self.roots)
        self.ambiguous: set[str] = set()  # top-level packages found under more than one root
        self.checked_roots: set[str] = set()  # roots of the checked files (not --src, not --as-module)
        # every file whose content a result depends on -> (mtime_ns, size); probed paths that did
        # not exist -> None.  A memoized result is valid while all of these still hold.
        self.touched: dict[str, tuple | None] = {}
        # resolving ahead during a scan (see scan's `ahead`): the resolver it uses, and the
        # dependencies it summarized, as (module, path, digest, prefilter mask, result)
        self._ahead = None
        self._fetched: list[tuple] | None = None
        self._claims = None  # during a scan that resolves ahead: the file of claimed modules

    # -- files ---------------------------------------------------------------------------------
    def file_state(self, path: str, module: str | None = None, root: str | None = None) -> FileState:
        """The state of a checked file (``module`` overrides the name taken from its folders;
        with ``root`` too, the file is named ``module`` inside that checked folder, as for a
        namespace package)."""
        path = os.path.abspath(path)
        given_root = root
        root, mod = package_root(path)
        if module is not None:
            mod = module
            root = given_root or (self.roots[0] if self.roots else os.path.dirname(path))
        if root not in self._root_set:
            self._root_set.add(root)
            self.roots.append(root)
        if module is None or given_root is not None:
            self.checked_roots.add(root)
        st = FileState(path=path, root=root, module=mod, is_package=path.endswith(os.sep + "__init__.py"))
        known = self.by_module.get(mod)
        if known is not None and known.path != path:
            # two checked folders hold a package of the same name: imports of it are ambiguous
            self.ambiguous.add(mod.split(".", 1)[0])
        if mod and mod not in self.by_module:
            self.by_module[mod] = st
        self.by_path[path] = st
        return st

    def _stat_key(self, st: FileState):
        try:
            s = os.stat(st.path)
        except OSError:
            return None
        return (s.st_mtime_ns, s.st_size)

    def _read(self, st: FileState) -> bytes | None:
        got = _read_bytes(st.path)
        if isinstance(got, str):
            st.error = got
            return None
        return got

    def _examine(self, data: bytes, always: bool = False) -> tuple[str | None, int]:
        """A file's content hash and prefilter mask; the hash only when the prefilter accepts the
        file or ``always`` (a file no rule wants is hashed only if it is loaded as a dependency,
        which is what the hash is for: the summary cache's key)."""
        hit = self.prefilter(data)
        return (hashlib.blake2b(data, digest_size=16).hexdigest() if hit or always else None), hit

    def _indexed(self, st: FileState) -> tuple | None:
        """The stat-index entry ``(mtime_ns, size, digest, hit)`` of ``st`` when the file is
        unchanged since it was recorded; the file's stat key goes into ``touched`` either way."""
        key = self._stat_key(st)
        self.touched[st.path] = key
        entry = self.cache.stat_index(st.root).get(_rel(st))
        if key is not None and entry is not None and tuple(entry[:2]) == key:
            return entry
        return None

    def _record(self, st: FileState, digest: str | None, hit: int, key: tuple | None = None) -> None:
        """Remember ``st``'s content hash and prefilter mask, in the state and the stat index,
        under the file's ``(mtime_ns, size)`` as it was before its content was read (``key``, else
        the one :meth:`_indexed` took, else now): a file saved again while a run reads it then
        looks changed to the next run, instead of its new time being stored with the old
        content's summary."""
        st.digest, st.hit = digest, hit
        key = key or self.touched.get(st.path) or self._stat_key(st)
        self.touched[st.path] = key
        if key is not None:
            self.cache.stat_index(st.root)[_rel(st)] = (key[0], key[1], st.digest, st.hit)
            self.cache.mark(st.root)

    def prefilter_hit(self, st: FileState) -> bool:
        """Whether ``st`` can hold a watched read, from the stat index when unchanged."""
        entry = self._indexed(st)
        if entry is not None:
            st.digest, st.hit = entry[2], entry[3]
            return bool(st.hit)
        data = self._read(st)
        if data is None:
            return True  # report the read error as a diagnostic
        self._record(st, *self._examine(data))
        if st.hit:
            st._data = data  # type: ignore[attr-defined]
        return bool(st.hit)

    def load(self, st: FileState) -> dict | None:
        """Summarize ``st`` (from the cache when its content hash is known); ``None`` on an error,
        recorded in ``st.error`` / ``st.syntax_error``."""
        if st.summary is not None or st.error or st.syntax_error:
            return st.summary
        data = getattr(st, "_data", None)
        if data is None and st.digest is None:
            entry = self._indexed(st)
            if entry is not None:
                st.digest = entry[2]
        if st.digest is not None:
            cached = self.cache.summary(st.digest, st.root)
            if cached is not None:
                return self._apply_cached(st, cached)
        if data is None:
            data = self._read(st)
            if data is None:
                return None
            self._record(st, *self._examine(data, always=True))
        if self._fetched is not None:  # resolving ahead in a scan
            if st.hit or not self._claim(st.digest):
                return None  # a file the scan summarizes anyway, or another process summarizes it
            result = summarize_file(data, self.spec, st.path)
            self._fetched.append((st.module, st.path, st.digest, st.hit, result, self.touched.get(st.path)))
            return self._apply_result(st, result)
        return self._apply_result(st, summarize_file(data, self.spec, st.path))

    def _apply_result(self, st: FileState, result: tuple) -> dict | None:
        """Take a new :func:`summarize_file` result for ``st``: into the file state and the cache."""
        kind, value = result
        if kind == "error":
            st.error = value
            return None
        self.cache.put_summary(st.digest, result, st.root)
        return self._apply_cached(st, result)

    def scan(self, states: list[FileState], explicit=frozenset(), jobs: int = 1, ahead=None) -> list[FileState]:
        """Prefilter ``states`` and summarize those the prefilter accepts or that are named in
        ``explicit`` (absolute paths): the checked files, in the order given.  Files whose stat
        index entry is stale or missing are read, hashed, prefiltered and (when wanted and not in
        the summary cache) summarized over up to ``jobs`` forked processes (see
        :func:`pp_attr_lint.parallel.fork_map`); the rest, or everything when the work is not
        split, as :meth:`prefilter_hit` and :meth:`load` do it.  The result is the same for any
        ``jobs``.

        ``ahead``: ``project -> resolver`` (a :class:`pp_attr_lint.resolve.Resolver` of this
        project).  With it, each process that summarizes a file also lets the rules resolve ahead
        what their checks will ask there (:meth:`~pp_attr_lint.plugin.Rule.prefetch`: the MRO of
        the classes they judge), summarizing the modules that leads to (not the files the scan
        summarizes anyway), and those summaries come back with the file's: the checks then find
        them ready instead of making them one by one.  Summaries are a function of a file's
        content alone, so this changes no result."""
        fresh = []
        if jobs > 1:
            for st in states:
                entry = self._indexed(st)
                if entry is None:
                    fresh.append(st)
                else:
                    st.digest, st.hit = entry[2], entry[3]
        if fresh:
            from .parallel import fork_map

            sizes = []
            for st in fresh:
                key = self.touched.get(st.path)
                sizes.append(key[1] if key else 0)
            for root in {st.root for st in fresh}:
                self.cache.load_pack(root)  # read once here, not once in every worker
            items = [(st.path, st.path in explicit, st.root) for st in fresh]
            self._ahead = ahead
            if ahead is not None:
                import tempfile

                # a module resolved ahead is summarized by the first process that claims it, in a
                # file they share that has no name (nothing is left behind, even by a killed run)
                try:
                    self._claims = tempfile.TemporaryFile()
                except OSError:
                    self._claims = None  # then every process summarizes what it needs
            try:
                got = fork_map(self._scan_one, items, jobs, sizes)
            finally:
                self._ahead = None
                if self._claims is not None:
                    self._claims.close()
                    self._claims = None
            fetched = []
            for st, r in zip(fresh if got is not None else (), got or ()):
                digest, hit, result, deps = r
                fetched += deps
                if hit < 0:  # the file could not be read
                    st.error = result[1]
                    continue
                self._record(st, digest, hit)
                if result == "cached":
                    cached = self.cache.summary(digest, st.root)
                    if cached is not None:
                        self._apply_cached(st, cached)
                    else:  # a damaged entry: summarized here
                        self.load(st)
                elif result is not None:
                    self._apply_result(st, result)
            for module, path, digest, hit, result, key in fetched:  # the modules resolved ahead
                dep = self._find(module)
                if dep is not None and dep.path == path and dep.summary is None and not (dep.error or dep.syntax_error):
                    self._record(dep, digest, hit, key)
                    self._apply_result(dep, result)
        return [st for st in states if (self.prefilter_hit(st) if st.hit is None else st.hit) or st.path in explicit]

    def _scan_one(self, item: tuple[str, bool, str]) -> tuple:
        """A worker's share of :meth:`scan` for one file of a root: ``(digest, prefilter mask,
        new summarize_file result, the modules resolved ahead (see :meth:`_resolve_ahead`))``;
        ``"cached"`` instead of the result when the cache the parent read holds it, ``None`` when
        the file is not wanted (the digest is ``None`` then too), and ``(None, -1, ("error",
        message), [])`` when the file cannot be read."""
        path, named, root = item
        data = _read_bytes(path)
        if isinstance(data, str):
            return (None, -1, ("error", data), [])
        digest, hit = self._examine(data, always=named)
        if not (hit or named):
            return (digest, hit, None, [])
        if self.cache.has_summary(digest, root):
            if not self._ahead:
                return (digest, hit, "cached", [])  # read by the parent (which redoes a damaged entry)
            cached = self.cache.summary(digest, root)
            if cached is not None:  # None: a damaged entry, made anew below
                return (digest, hit, "cached", self._resolve_ahead(path, digest, hit, cached))
        result = summarize_file(data, self.spec, path)
        return (digest, hit, result, self._resolve_ahead(path, digest, hit, result))

    def _claim(self, digest: str) -> bool:
        """Whether this process is the first of a scan's processes to ask for the file whose
        content hash is ``digest``: the claimed hashes are lines of a file they share, read and
        appended under a POSIX record lock (held per process, unlike ``flock`` on a shared open
        file)."""
        if self._claims is None:
            return True
        import fcntl

        fd = self._claims.fileno()
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                claimed = os.pread(fd, 1 << 24, 0)
                if digest.encode() in claimed.split():
                    return False
                os.pwrite(fd, digest.encode() + b"\n", len(claimed))
                return True
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
        except OSError:
            return True  # summarize it here (at worst twice)

    def _resolve_ahead(self, path: str, digest: str, hit: int, result: tuple) -> list[tuple]:
        """In a scan with ``ahead``: let the rules that want this file resolve ahead what their
        checks will ask (:meth:`pp_attr_lint.plugin.Rule.prefetch`); ``[(module, path, digest,
        mask, result)]`` of the modules that summarized."""
        st = self.by_path.get(path)
        if self._ahead is None or st is None or result[0] != "ok":
            return []
        if st.summary is None:  # this process's view of the file, for resolutions that start here
            st.digest, st.hit = digest, hit
            self._apply_cached(st, result)
        rules = [rule for rule in self.spec.prefetchers if self.spec.wants(rule, hit)]
        if not rules:
            return []
        from .resolve import Unresolved

        if not isinstance(self._ahead, tuple):
            self._ahead = (self._ahead(self),)  # one resolver per process, made at its first use
        resolver = self._ahead[0]
        self._fetched = []
        try:
            for rule in rules:
                try:
                    rule.prefetch(st.module, result[1], resolver)
                except (Unresolved, RecursionError):
                    pass
                except Exception:  # noqa: BLE001  (a hint that failed: the checks do the work and report)
                    pass
            return self._fetched
        finally:
            self._fetched = None

    def _apply_cached(self, st: FileState, cached) -> dict | None:
        kind, value = cached
        if kind == "ok":
            st.summary = value
        else:
            st.syntax_error = tuple(value)
        return st.summary

    # -- SummarySource -------------------------------------------------------------------------
    def _find(self, module: str) -> FileState | None:
        if module.split(".", 1)[0] in self.ambiguous:
            return None
        if module in self.by_module:
            return self.by_module[module]
        found = None
        rel = module.replace(".", os.sep)
        for root in self.roots:
            for cand, is_pkg in ((os.path.join(root, rel + ".py"), False),
                                 (os.path.join(root, rel, "__init__.py"), True)):
                if os.path.isfile(cand):
                    if found is not None and found.path != cand:
                        self.ambiguous.add(module.split(".", 1)[0])  # in two roots: which one wins?
                        self.by_module[module] = None
                        return None
                    found = FileState(path=cand, root=root, module=module, is_package=is_pkg)
                    break
                self.touched.setdefault(cand, None)  # a file added here later changes resolution
        top = module.split(".", 1)[0]
        if found is None and self.env_roots and top not in self.external and not self._top_in_project(top):
            # not in the checked tree or --src: the environment, first folder wins (as sys.path)
            for root in self.env_roots:
                for cand, is_pkg in ((os.path.join(root, rel + ".py"), False),
                                     (os.path.join(root, rel, "__init__.py"), True)):
                    if os.path.isfile(cand):
                        found = FileState(path=cand, root=root, module=module, is_package=is_pkg)
                        break
                    self.touched.setdefault(cand, None)
                if found is not None or os.path.isdir(os.path.join(root, top)):
                    break  # the first folder that holds the top package is the one Python imports
        self.by_module[module] = found
        return found

    def _top_in_project(self, top: str) -> bool:
        """Whether a root (checked tree, ``--src``) holds the top-level package or module ``top``:
        then it is never mixed with a copy in the environment."""
        got = self._top_in_roots.get(top)
        if got is None:
            got = any(os.path.isdir(os.path.join(r, top)) or os.path.isfile(os.path.join(r, top + ".py"))
                      for r in self.roots)
            self._top_in_roots[top] = got
        return got

    def failure(self, module: str) -> tuple[str, str, str | None]:
        """Why ``module`` has no summary, as ``(reason, detail, path)`` with the reason codes of
        :mod:`pp_attr_lint.unjudged`: ``syntax-error`` (the file does not parse or cannot be
        read), ``ambiguous`` (its package is in two folders) or ``module-not-found``."""
        st = self._find(module)
        if st is not None:
            self.load(st)
            rel = os.path.relpath(st.path) if st.path.startswith(os.getcwd() + os.sep) else st.path
            if st.syntax_error:
                return ("syntax-error", f"{rel}:{st.syntax_error[1]} does not parse: {st.syntax_error[0]}", st.path)
            if st.error:
                return ("syntax-error", f"{rel}: {st.error}", st.path)
        top = module.split(".", 1)[0]
        if top in self.ambiguous:
            return ("ambiguous", f"package `{top}` is in more than one checked or --src folder", None)
        return ("module-not-found", f"module `{module}` not found", None)

    def state_of(self, path: str) -> FileState | None:
        """The state of a file this project has loaded, by path."""
        got = self.by_path.get(path)
        if got is None:
            got = next((st for st in self.by_module.values() if st is not None and st.path == path), None)
        return got

    def summary(self, module: str) -> dict | None:
        st = self._find(module)
        return None if st is None else self.load(st)

    def is_package(self, module: str) -> bool:
        st = self._find(module)
        return bool(st and st.is_package)

    def path(self, module: str) -> str | None:
        st = self._find(module)
        return None if st is None else st.path

    def in_checked_root(self, module: str) -> bool:
        st = self._find(module)
        return st is not None and st.root in self.checked_roots


def environment_paths(python: str | None = None, cache_dir: Path | None = None) -> list[str]:
    """The import folders of a Python environment that hold installed packages: ``sys.path``
    without the standard library, the working directory and zip files.

    ``python``: the interpreter of that environment (like pyright's ``pythonPath``); ``None`` is
    the one running pp-attr-lint (no process started).  Another interpreter is asked once
    (``PYTHON -c 'import sys; ...'``) and the answer kept in ``cache_dir`` keyed by the
    interpreter's path and its ``(mtime, size)``.

    Raises:
        OSError: ``python`` cannot be run or does not answer (the message says which).
    """
    import json

    if python is None:
        paths = list(sys.path[1:])  # [0] is the script's folder or the working directory
        # the standard library's folder (where `os` lives; sysconfig costs an import)
        return _site_folders(paths, {os.path.dirname(os.path.abspath(os.__file__))})
    exe = os.path.abspath(python)
    try:
        st = os.stat(exe)
    except OSError as e:
        raise OSError(f"{python}: no such interpreter ({e.strerror or e})") from None
    key = hashlib.blake2b(f"{exe}|{st.st_mtime_ns}|{st.st_size}".encode(), digest_size=8).hexdigest()
    memo = cache_dir / f"env-{key}.json" if cache_dir is not None else None
    if memo is not None:
        try:
            return json.loads(memo.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    import subprocess

    code = ("import sys, sysconfig, json; p = sysconfig.get_paths(); "
            "print(json.dumps([sys.path, [p['stdlib'], p['platstdlib']]]))")
    try:
        proc = subprocess.run([exe, "-I", "-c", code], capture_output=True, text=True, timeout=60)
        paths, stdlib = json.loads(proc.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as e:
        raise OSError(f"{python}: cannot ask this interpreter for its import path: {e}") from None
    out = _site_folders(paths, {os.path.abspath(x) for x in stdlib})
    if memo is not None:
        try:
            _atomic_write(memo, json.dumps(out).encode())
        except OSError:
            pass
    return out


def _site_folders(paths: list[str], stdlib: set[str]) -> list[str]:
    cwd = os.getcwd()
    out = []
    for p in paths:
        if not p or not os.path.isdir(p):
            continue  # '' (the working directory), zip files, missing folders
        a = os.path.abspath(p)
        if a == cwd or a in stdlib or any(a.startswith(s + os.sep) and "site-packages" not in a
                                          and "dist-packages" not in a for s in stdlib):
            continue
        if a not in out:
            out.append(a)
    return out


def environment_stamp(env_roots: list[str]) -> list[str]:
    """The installed distributions of ``env_roots`` with their versions (the names of their
    ``*.dist-info`` / ``*.egg-info`` entries): part of the cache key of a run's result."""
    out = []
    for r in env_roots:
        try:
            out.extend(sorted(n for n in os.listdir(r) if n.endswith((".dist-info", ".egg-info"))))
        except OSError:
            continue
    return out


def discover(paths: list[Path], exclude: list[str], include_explicit: bool = True) -> tuple[list[str], list[str]]:
    """The ``.py`` files under ``paths``, sorted and de-duplicated, and the errors met.

    Directories are walked without following symbolic links to directories (no loops); a folder
    or file whose name matches an ``exclude`` glob (fnmatch, matched against the name and the
    path) is skipped unless it was named explicitly.  Errors are messages for paths that do not
    exist.
    """
    import fnmatch

    plain = {pat for pat in exclude if not any(c in pat for c in "*?[/")}
    globs = [pat for pat in exclude if pat not in plain]

    def excluded(p: str) -> bool:
        name = os.path.basename(p)
        if name in plain:
            return True
        return any(fnmatch.fnmatchcase(name, pat) or fnmatch.fnmatchcase(p, pat)
                   or fnmatch.fnmatchcase(p, "*/" + pat.lstrip("/")) for pat in globs)

    out: dict[str, str] = {}
    links: set[str] = set()  # walked files that are symbolic links
    named: set[str] = set()  # files named on the command line
    errors: list[str] = []
    for p in paths:
        sp = os.path.abspath(p)
        if not os.path.lexists(sp):
            errors.append(f"{p}: No such file or directory")
            continue
        if os.path.isdir(sp):
            stack = [sp]
            while stack:  # os.scandir: file types and links come with the listing, no stat per file
                d = stack.pop()
                try:
                    entries = list(os.scandir(d))
                except OSError:
                    continue  # an unreadable folder is skipped, like os.walk does
                for e in entries:
                    if excluded(e.path):
                        continue
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)  # links to folders are not followed: no loops
                        elif e.name.endswith(".py"):
                            out.setdefault(e.path, e.path)
                            if e.is_symlink():
                                links.add(e.path)
                    except OSError:
                        continue
        elif os.path.exists(sp) or os.path.islink(sp):
            if include_explicit or not excluded(sp):
                out.setdefault(sp, sp)
                named.add(sp)
    # one file reached through several names (a symbolic link beside its target): check and fix
    # it once, under a name that is not a link when there is one
    # (os.path.realpath costs a stat per path component, so only links and named paths pay for it)
    result = set(out)
    for k in sorted(out):
        if k in links or k in named:
            real = os.path.realpath(k)
            if real != k and real in result:
                result.discard(k)  # its target is checked under its own name
            elif real != k:
                for other in [o for o in result if o != k and (o in links or o in named)]:
                    if os.path.realpath(other) == real:
                        result.discard(k if os.path.islink(k) else other)
                        break
    return sorted(result), errors

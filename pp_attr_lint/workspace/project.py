"""The project: which module each file is, how modules are found, and their summaries.

A :class:`Project` is the :class:`~pp_attr_lint.resolve.SummarySource` of one project group (the
folder that holds the checked files' top package, the ``--src`` folders, the environment's import
folders).  The expensive step is parsing, so a run reads as little as it can:

1. for each checked file, a *byte prefilter* (:mod:`pp_attr_lint.index.prefilter`) decides whether
   it can contain something a rule wants at all; its result is kept in the cache's stat index with
   ``(mtime_ns, size, content hash)``, so an unchanged file is not even read on the next run (the
   hash is taken only of files a rule wants or that are loaded as a dependency: it keys their
   summaries; ``None`` for the rest);
2. only files that pass are summarized (:func:`summarize_file`), plus the modules their receivers
   lead to (imports, bases, the registry), found by module name (:meth:`Project._find`: the
   project's roots, then the environment) and loaded lazily.

The scan that does step 1 and 2 for many files at once, in forked processes, is the engine's
(:mod:`pp_attr_lint.engine.scan`); the cache is :mod:`pp_attr_lint.workspace.cache`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..index.prefilter import make_rule_prefilter
from ..index.spec import IndexSpec
from .cache import Cache
from .files import package_root


def summarize_file(data: bytes, spec: IndexSpec, path: str, mask: int | None = None) -> tuple:
    """Decode and summarize one file's bytes (what :meth:`Project.load` does on a cache miss; a
    pure function of its arguments, so that worker processes can run it).

    Args:
        data: the file's bytes.
        spec: what the enabled rules ask of the index.
        path: the file's path, for messages only.
        mask: the file's prefilter mask (a function of ``data`` and ``spec``, so the summary
            stays one of the file's content): which gated collectors run; ``None``: all.

    Returns:
        ``("ok", summary)`` (see :func:`pp_attr_lint.index.summary.summarize`), ``("syntax", (message,
        line, column))`` when it does not parse (columns 0-based) or ``("error", message)`` when
        it cannot be decoded.  Raises nothing for bad input.
    """
    from ..index.summary import summarize
    from ..textio import decode_source, explain_syntax_error

    try:
        text = decode_source(data)
    except UnicodeDecodeError as e:
        return ("error", f"cannot decode file: {e.reason} at byte {e.start}")
    except SyntaxError as e:
        return ("error", f"cannot decode file: {e.msg}")
    try:
        return ("ok", summarize(text, spec, str(path), mask))
    except SyntaxError as e:
        line = e.text
        if e.lineno and not line:
            lines = text.splitlines()
            line = lines[e.lineno - 1] if 0 < e.lineno <= len(lines) else None
        msg = explain_syntax_error(e.msg or "invalid syntax", line)
        return ("syntax", (msg, e.lineno or 1, (e.offset or 1) - 1))
    except (RecursionError, MemoryError):  # nesting too deep for the parser (as CPython's own)
        return ("syntax", ("too many nested parentheses or operators to parse", 1, 0))


def read_file_bytes(path: str) -> bytes | str:
    """The file's bytes, or the message of the error that reading it raised."""
    from ..textio import read_regular

    try:
        return read_regular(path)  # never a named pipe or a device (they can block or never end)
    except OSError as e:
        return f"cannot read file: {e.strerror or e}"


def unchanged(touched: dict, skip=None) -> bool:
    """Whether every file in ``touched`` still has its ``(mtime_ns, size)`` and every path
    recorded as missing (``None``) is still missing; paths for which ``skip(path)`` is true (the
    cache's own folder) are not looked at."""
    for path, key in touched.items():
        if skip is not None and skip(path):
            continue
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


class Project:
    """The files being checked and every module resolvable from them (a :class:`SummarySource`)."""

    def __init__(self, roots: list[Path], spec: IndexSpec, cache: Cache,
                 env_roots: list[str] = (),
                 external: frozenset[str] = frozenset(("torch", "builtins", "typing", "typing_extensions", "abc"))):
        """``roots``: the checked tree's folder and ``--src`` folders (a top-level package found
        in two of them is ambiguous).  ``spec``: what the enabled rules ask of the index.
        ``env_roots``: the environment's import folders, searched in order, like ``sys.path``, for
        top-level packages no root holds; packages named in ``external`` are never read from
        there nor from a root (torch stays what the facts' attribute-less base list says it is,
        also when the checked folder is a site-packages that holds it)."""
        self.roots = [str(r) for r in dict.fromkeys(Path(os.path.abspath(r)) for r in roots)]
        self.spec = spec
        self.cache = cache
        self.prefilter = make_rule_prefilter(spec.wanting, spec.everything)
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
        # set by a scan that resolves ahead (pp_attr_lint.engine.scan): the dependencies summarized
        # while resolving ahead, as (module, path, digest, prefilter mask, result, stat key)
        self._fetched: list[tuple] | None = None
        self._claims = None  # during a scan that resolves ahead: the file of claimed modules
        # set by checks run in worker processes (pp_attr_lint.engine.check): the modules summarized
        # there, in the same form, for the parent to adopt (see adopt)
        self._loaded: list[tuple] | None = None

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
        got = read_file_bytes(st.path)
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
        if self._fetched is not None and (st.hit or not self._claim(st.digest)):
            # resolving ahead in a scan: a file the scan summarizes anyway, or another process does
            return None
        result = summarize_file(data, self.spec, st.path, st.hit if isinstance(st.hit, int) else None)
        # what another process adopts (see adopt): resolved ahead in a scan, or loaded by checks
        # in a worker
        kept = self._fetched if self._fetched is not None else self._loaded
        if kept is not None:
            kept.append((st.module, st.path, st.digest, st.hit, result, self.touched.get(st.path)))
        return self._apply_result(st, result)

    def facts(self, module: str, key: str):
        """What collector ``key`` found in ``module`` (see :meth:`facts_of`); ``None`` when the
        module has no summary."""
        st = self._find(module)
        return None if st is None else self.facts_of(st, key)

    def facts_of(self, st: FileState, key: str):
        """What collector ``key`` (a facts key of this run's spec) found in ``st``'s file, ``None``
        when nothing or when the file has no summary.  A collector the gate skipped there (its
        rules' prefilters turned the file down: :func:`pp_attr_lint.rule_api.index_spec`) runs
        now, on the file parsed again, and its facts join the summary, which then lists ``key``
        under ``held``: the answer is the one an ungated summary gives.  A file whose content no
        longer has the summary's hash (changed during the run) answers ``None``."""
        s = self.load(st)
        if s is None:
            return None
        held = s.get("held")
        if held is not None and key not in held:
            collect = next((fn for k, fn in self.spec.collectors if k == key), None)
            if collect is not None:
                data = read_file_bytes(st.path)
                if isinstance(data, str) or (st.digest is not None and
                                             hashlib.blake2b(data, digest_size=16).hexdigest() != st.digest):
                    return None
                from ..index.summary import complete_facts
                from ..textio import decode_source

                got = complete_facts(decode_source(data), collect)
                if got is not None:
                    s.setdefault("facts", {})[key] = got
                s["held"] = list(held) + [key]
        return s.get("facts", {}).get(key)

    def sizes(self, states) -> list[int]:
        """The size in bytes of each of ``states``' files from its recorded stat (0 when none): the
        weights that balance work over processes."""
        out = []
        for st in states:
            key = self.touched.get(st.path)
            out.append(key[1] if key else 0)
        return out

    def adopt(self, entries) -> None:
        """Take summaries another process made of this project's modules, ``(module, path,
        digest, prefilter mask, summarize_file result, stat key)`` each (a scan's modules resolved
        ahead, or those a worker's checks loaded): recorded in the stat index and the cache as if
        made here; a module this process has summarized already, or that is now another file,
        is left as it is."""
        for module, path, digest, hit, result, key in entries:
            dep = self._find(module)
            if dep is not None and dep.path == path and dep.summary is None and not (dep.error or dep.syntax_error):
                self._record(dep, digest, hit, key)
                self._apply_result(dep, result)

    def _apply_result(self, st: FileState, result: tuple) -> dict | None:
        """Take a new :func:`summarize_file` result for ``st``: into the file state and the cache."""
        kind, value = result
        if kind == "error":
            st.error = value
            return None
        self.cache.put_summary(st.digest, result, st.root)
        return self._apply_cached(st, result)


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
        # torch, typing, ...: never read, also when a checked or --src folder holds them (a
        # site-packages folder): they stay what the facts' attribute-less bases say they are
        for root in (self.roots if module.split(".", 1)[0] not in self.external else ()):
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
        :mod:`pp_attr_lint.unjudged`: ``syntax-error`` (the file does not parse), ``io-error``
        (it cannot be read or decoded), ``file-vanished`` (it was deleted meanwhile), ``ambiguous`` (its package is in two folders) or ``module-not-found``."""
        st = self._find(module)
        if st is not None:
            self.load(st)
            rel = os.path.relpath(st.path) if st.path.startswith(os.getcwd() + os.sep) else st.path
            if st.syntax_error:
                return ("syntax-error", f"{rel}:{st.syntax_error[1]} does not parse: {st.syntax_error[0]}", st.path)
            if st.error:
                from ..unjudged import file_reason

                return (file_reason(st.error), f"{rel}: {st.error}", st.path)
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

    def exists(self, module: str) -> bool:
        """Whether ``module`` is a file of the project (checked, ``--src`` or the environment),
        without reading or summarizing it; its path joins the run's dependencies either way."""
        return self._find(module) is not None

    def may_mention(self, module: str, words: tuple[bytes, ...]) -> bool:
        """Whether ``module``'s source can hold one of ``words`` (bytes): ``False`` only when the
        file was read and none occurs in it, so a summary fact that needs one of them in the text
        (an attribute stored by name, a ``setattr`` call) cannot be there; ``True`` when it may,
        or when the file is summarized already, cannot be read or is not found (then its summary
        says why).  The file's stat joins the run's dependencies, as a summary's would."""
        st = self._find(module)
        if st is None or st.summary is not None or st.error or st.syntax_error:
            return True
        data = getattr(st, "_data", None)
        if data is None:
            self._indexed(st)
            data = read_file_bytes(st.path)
            if isinstance(data, str):
                return True
        return any(w in data for w in words)

    def is_package(self, module: str) -> bool:
        st = self._find(module)
        return bool(st and st.is_package)

    def path(self, module: str) -> str | None:
        st = self._find(module)
        return None if st is None else st.path

    def in_checked_root(self, module: str) -> bool:
        st = self._find(module)
        return st is not None and st.root in self.checked_roots



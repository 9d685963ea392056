"""The scan: read, prefilter and summarize a project group's checked files, over forked worker
processes when many of them changed (:mod:`pp_attr_lint.engine.parallel`), and let the rules
resolve ahead there what their checks will ask (:meth:`pp_attr_lint.rule_api.Rule.prefetch`).

Summaries are a function of a file's content alone, so neither the number of processes nor
resolving ahead changes any result: they only decide where the work is done.
"""

from __future__ import annotations

from ..rule_api import Rule, wants
from ..workspace import project as _project
from ..workspace.project import FileState, summarize_file


class Scan:
    """One scan of a :class:`~pp_attr_lint.workspace.project.Project`'s files for ``rules``.

    ``ahead``: ``project -> resolver`` (a :class:`pp_attr_lint.resolve.Resolver` of the project),
    or ``None`` not to resolve ahead; the rules that resolve ahead are those that override
    :meth:`~pp_attr_lint.rule_api.Rule.prefetch`."""

    def __init__(self, project, rules=(), ahead=None):
        self.project = project
        self.prefetchers = tuple(r for r in rules if type(r).prefetch is not Rule.prefetch)
        self.ahead = ahead
        self._ahead = None  # during run's fork: `ahead`, then (the resolver of this process,)

    def run(self, states: list[FileState], explicit=frozenset(), jobs: int = 1) -> list[FileState]:
        """Prefilter ``states`` and summarize those the prefilter accepts or that are named in
        ``explicit`` (absolute paths): the checked files, in the order given.  Files whose stat
        index entry is stale or missing are read, hashed, prefiltered and (when wanted and not in
        the summary cache) summarized over up to ``jobs`` forked processes (see
        :func:`pp_attr_lint.engine.parallel.fork_map`); the rest, or everything when the work is
        not split, as the project's ``prefilter_hit`` and ``load`` do it.  The result is the same
        for any ``jobs``.

        With ``ahead``, each process that summarizes a file also lets the rules resolve ahead
        what their checks will ask there (:meth:`~pp_attr_lint.rule_api.Rule.prefetch`: the MRO of
        the classes they judge), summarizing the modules that leads to (not the files the scan
        summarizes anyway), and those summaries come back with the file's: the checks then find
        them ready instead of making them one by one.  Summaries are a function of a file's
        content alone, so this changes no result."""
        fresh = []
        if jobs > 1:
            for st in states:
                entry = self.project._indexed(st)
                if entry is None:
                    fresh.append(st)
                else:
                    st.digest, st.hit = entry[2], entry[3]
        if fresh:
            from .parallel import fork_map

            sizes = self.project.sizes(fresh)
            for root in {st.root for st in fresh}:
                self.project.cache.load_pack(root)  # read once here, not once in every worker
            items = [(st.path, st.path in explicit, st.root) for st in fresh]
            # no rule resolves ahead: the workers then neither apply the summaries they make nor
            # open the claims file (that cost 10% of a 2-job run's CPU for nothing)
            self._ahead = self.ahead if self.prefetchers else None
            if self._ahead is not None:
                import tempfile

                # a module resolved ahead is summarized by the first process that claims it, in a
                # file they share that has no name (nothing is left behind, even by a killed run)
                try:
                    self.project._claims = tempfile.TemporaryFile()
                except OSError:
                    self.project._claims = None  # then every process summarizes what it needs
            try:
                got = fork_map(self._scan_one, items, jobs, sizes)
            finally:
                self._ahead = None
                if self.project._claims is not None:
                    self.project._claims.close()
                    self.project._claims = None
            fetched = []
            for st, r in zip(fresh if got is not None else (), got or ()):
                digest, hit, result, deps = r
                fetched += deps
                if hit < 0:  # the file could not be read
                    st.error = result[1]
                    continue
                self.project._record(st, digest, hit)
                if result == "cached":
                    cached = self.project.cache.summary(digest, st.root)
                    if cached is not None:
                        self.project._apply_cached(st, cached)
                    else:  # a damaged entry: summarized here
                        self.project.load(st)
                elif result is not None:
                    self.project._apply_result(st, result)
            self.project.adopt(fetched)  # the modules resolved ahead
        return [st for st in states if (self.project.prefilter_hit(st) if st.hit is None else st.hit) or st.path in explicit]

    def _scan_one(self, item: tuple[str, bool, str]) -> tuple:
        """A worker's share of :meth:`scan` for one file of a root: ``(digest, prefilter mask,
        new summarize_file result, the modules resolved ahead (see :meth:`_resolve_ahead`))``;
        ``"cached"`` instead of the result when the cache the parent read holds it, ``None`` when
        the file is not wanted (the digest is ``None`` then too), and ``(None, -1, ("error",
        message), [])`` when the file cannot be read."""
        path, named, root = item
        data = _project.read_file_bytes(path)  # the project's reader (one place to read a file)
        if isinstance(data, str):
            return (None, -1, ("error", data), [])
        digest, hit = self.project._examine(data, always=named)
        if not (hit or named):
            return (digest, hit, None, [])
        if self.project.cache.has_summary(digest, root):
            if not self._ahead:
                return (digest, hit, "cached", [])  # read by the parent (which redoes a damaged entry)
            cached = self.project.cache.summary(digest, root)
            if cached is not None:  # None: a damaged entry, made anew below
                return (digest, hit, "cached", self._resolve_ahead(path, digest, hit, cached))
        result = summarize_file(data, self.project.spec, path, hit)
        return (digest, hit, result, self._resolve_ahead(path, digest, hit, result))

    def _resolve_ahead(self, path: str, digest: str, hit: int, result: tuple) -> list[tuple]:
        """In a scan with ``ahead``: let the rules that want this file resolve ahead what their
        checks will ask (:meth:`pp_attr_lint.rule_api.Rule.prefetch`); ``[(module, path, digest,
        mask, result)]`` of the modules that summarized."""
        st = self.project.by_path.get(path)
        if self._ahead is None or st is None or result[0] != "ok":
            return []
        if st.summary is None:  # this process's view of the file, for resolutions that start here
            st.digest, st.hit = digest, hit
            self.project._apply_cached(st, result)
        rules = [rule for rule in self.prefetchers if wants(self.project.spec, rule, hit)]
        if not rules:
            return []
        from ..resolve import Unresolved

        if not isinstance(self._ahead, tuple):
            self._ahead = (self._ahead(self.project),)  # one resolver per process, made at its first use
        resolver = self._ahead[0]
        self.project._fetched = []
        try:
            for rule in rules:
                try:
                    rule.prefetch(st.module, result[1], resolver)
                except (Unresolved, RecursionError):
                    pass
                except Exception:  # noqa: BLE001  (a hint that failed: the checks do the work and report)
                    pass
            return self.project._fetched
        finally:
            self.project._fetched = None

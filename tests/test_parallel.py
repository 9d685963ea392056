"""Per-file work in forked workers (``--jobs``): the same report as one process, broken files
still reported, and the helper's own contract."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from helpers import FIXTURES, REPO, run_cli
from pp_attr_lint.engine import parallel
from pp_attr_lint.workspace.cache import _read_pack

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked on Linux only")


def _tree(tmp_path):
    """The fixtures and the rule cases side by side: 109 files, 47 of them prefilter hits."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES, root / "fixtures", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", root / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_jobs_give_the_same_report_as_one_process(tmp_path):
    root = _tree(tmp_path)
    # a broken file and an undecodable one among the hits: reported the same way by the workers
    models = root / "fixtures" / "seed" / "minivllm" / "model_executor" / "models"
    (models / "broken.py").write_text("x = self.model.start_layer\ndef broken(:\n", encoding="utf-8")
    (models / "latin.py").write_bytes(b"x = self.model.start_layer\ny = '\xe9'\n")
    runs = {}
    for jobs in ("1", "2", "4"):
        r = run_cli("check", ".", "--no-cache", "--output-format", "json", "--show-unresolved", "--jobs", jobs,
                    cwd=root)
        # the rule cases import `vllm`, which no folder of this tree resolves (the stub is not on
        # their path): the engine-not-found error, exit 3, after the same report
        assert r.rc == 3 and "the checked code imports `vllm`, which cannot be found" in r.stderr, r.stderr
        runs[jobs] = r.stdout
    assert runs["1"] == runs["2"] == runs["4"]
    names = [d["name"] for d in run_cli("check", ".", "--no-cache", "--output-format", "json", "-j", "2",
                                        cwd=root).json()]
    assert names.count("invalid-syntax") >= 1 and names.count("io-error") == 1


def test_cache_written_by_workers_is_read_back(tmp_path):
    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    cold = run_cli("check", ".", "--cache-dir", cache, "--output-format", "json", "-j", "2", cwd=root)
    stored = [_read_pack(p)[0] for p in cache.rglob("sums-*")]  # the root's summary pack
    assert sum(len(index) for index in stored) >= 47  # every prefilter hit summarized by a worker, stored by the parent
    os.utime(root / "rules" / "PPA101" / "README.md")  # not a checked file: the memo still holds
    (root / "fixtures" / "seed" / "minivllm" / "__init__.py").touch()  # the memo is stale: re-run
    warm = run_cli("check", ".", "--cache-dir", cache, "--output-format", "json", "-j", "2", cwd=root)
    assert (cold.rc, cold.stdout) == (warm.rc, warm.stdout)


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_bad_jobs_is_a_usage_error(tmp_path, value):
    r = run_cli("check", ".", "--jobs", value, cwd=tmp_path)
    assert r.rc == 2 and "--jobs" in r.stderr and "expected a number of processes >= 1" in r.stderr


def _square(x):
    return x * x


def _fail(x):
    raise ValueError(f"bad item {x}")


def test_fork_map_keeps_the_order_and_declines_small_work():
    items = list(range(40))
    assert parallel.fork_map(_square, items, 2, weights=[40 - i for i in items]) == [i * i for i in items]
    assert parallel.fork_map(_square, items, 1) is None  # one job: the caller does the work
    assert parallel.fork_map(_square, items[:3], 4) is None  # too few items to be worth a worker


def test_fork_map_passes_on_an_error_of_the_function():
    with pytest.raises(ValueError, match="bad item"):
        parallel.fork_map(_fail, list(range(20)), 2)


_PARENT = os.getpid()


def _die_in_worker(x):
    if os.getpid() != _PARENT:
        os._exit(3)  # a worker killed mid-run, as by the OOM killer
    time.sleep(0.01)  # slow here, so that the worker surely takes a chunk
    return x


def test_fork_map_declines_when_a_worker_dies():
    assert parallel.fork_map(_die_in_worker, list(range(40)), 2) is None  # the caller redoes the work
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the dead worker was reaped: no child of this process is left


def test_default_jobs_is_within_bounds():
    assert 1 <= parallel.default_jobs() <= parallel.MAX_JOBS


def test_workers_end_with_a_killed_parent(tmp_path):
    """A run killed from outside (a CI timeout) leaves no worker waiting on its queue."""
    import signal
    import subprocess
    import sys
    import time

    root = tmp_path / "big"
    for k in range(12):  # long enough a scan for the workers to be caught running
        shutil.copytree(FIXTURES, root / f"copy{k}" / "fixtures", ignore=shutil.ignore_patterns("__pycache__"))

    def ours() -> list[int]:
        out = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if str(root).encode() in f.read():
                            out.append(int(pid))
                except OSError:
                    pass
        return out

    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "pp_attr_lint", "check", str(root), "--no-cache", "-j", "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while len(ours()) < 2 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert p.poll() is None and len(ours()) >= 2, "the worker was not seen running"
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 10
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = ours()
    for pid in left:  # do not leave them behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_jobs_are_capped_at_the_cpus_available():
    cpus = parallel.available_cpus()
    assert parallel.jobs_for(None) == min(parallel.MAX_JOBS, cpus)
    assert parallel.jobs_for(1) == 1
    assert parallel.jobs_for(100000) == cpus  # -j 100000 used to start that many workers


def test_scan_resolves_ahead_the_bases_the_rules_name(tmp_path):
    """With ``ahead``, the processes that summarize the files also summarize the modules the MROs
    of the classes a rule's ``prefetch`` names lead to (here the skipping class of PPA301's case:
    its base's module, which no prefilter selects), so the checks find them ready; without it
    they are left to the checks.  No builtin rule prefetches (it cost more than it saved), so a
    rule of this test does."""
    from pp_attr_lint.engine.scan import Scan
    from pp_attr_lint.facts import merged_settings
    from pp_attr_lint.resolve import Resolver
    from pp_attr_lint.rule_api import index_spec
    from pp_attr_lint.rule_registry import all_rules
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.project import Project

    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "rules" / "PPA301" / "cases" / "skipped_init" / "pkg", pkg)
    base_py = pkg / "base.py"  # without the docstring that names `end_layer` (PPA003's prefilter takes it)
    base_py.write_text("\n".join(line for line in base_py.read_text().splitlines() if "no end_layer" not in line) + "\n")
    for k in range(8):  # enough files for the scan to fork
        (pkg / f"filler{k}.py").write_text(f"x{k} = {k}\n")
    from pp_attr_lint.resolve import Unresolved
    from pp_attr_lint.rule_api import Rule

    class Prefetching(Rule):
        def prefilter(self, data):
            return False

        def prefetch(self, module, summary, resolver):
            for cname in summary["classes"]:
                try:
                    resolver.mro((module, cname))
                except Unresolved:
                    pass

    rules = all_rules()
    spec = index_spec(rules)
    settings = merged_settings([r.settings for r in rules if r.settings is not None])
    ahead_rules = rules + [Prefetching(code="PPA901", name="prefetching", summary="resolves ahead")]
    assert not Scan(None, rules).prefetchers  # the builtin rules do not prefetch
    got = {}
    for ahead in (None, lambda p: Resolver(p, settings)):
        project = Project([tmp_path], spec, Cache(None, spec.key, enabled=False))
        states = [project.file_state(str(p)) for p in sorted(pkg.glob("*.py"))]
        checked = Scan(project, ahead_rules, ahead=ahead).run(states, frozenset(), 2)
        base = project.state_of(str(pkg / "base.py"))
        got[ahead is None] = ([os.path.basename(st.path) for st in checked], base is not None and base.summary is not None)
    assert got[True][0] == got[False][0] == ["eagle.py"]  # base.py is no prefilter hit
    assert got[True][1] is False and got[False][1] is True


def _models(root, n: int = 20):
    """A package whose ``n`` model files each read the layer range through a wrapper defined in
    ``inner.py``: more checked files than the checks need to be split over workers."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "inner.py").write_text(
        "from torch import nn\n\n"
        "class Inner(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.start_layer, self.end_layer = 0, 4\n\n"
        "class Wrapper(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.model = Inner()\n", encoding="utf-8")
    for i in range(n):
        (pkg / f"m{i}.py").write_text(
            "from torch import nn\n"
            "from .inner import Wrapper\n\n"
            f"class M{i}(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.language_model = Wrapper()\n\n"
            "    def forward(self):\n"
            "        return self.language_model.start_layer\n", encoding="utf-8")
    return pkg


def test_checks_split_over_workers_give_the_report_of_one_process(tmp_path):
    _models(tmp_path)
    runs = {jobs: run_cli("check", "pkg", "--no-cache", "--python", "none", "--output-format", "json",
                          "--show-unresolved", "-j", jobs, cwd=tmp_path) for jobs in ("1", "2")}
    assert runs["1"].rc == 1 and len([f for f in runs["1"].json() if f["code"] == "PPA001"]) == 20
    assert runs["1"].stdout == runs["2"].stdout


def test_a_dependency_only_the_workers_checks_read_invalidates_the_memo(tmp_path):
    # inner.py is read while checking (the wrapper's class), in the workers: the run's result
    # depends on it, so giving Wrapper the range makes the next run recompute, not replay
    pkg = _models(tmp_path)
    cache = tmp_path / "cache"
    cold = run_cli("check", "pkg", "--cache-dir", cache, "--python", "none", "--output-format", "json", "-j", "2",
                   cwd=tmp_path)
    assert len([f for f in cold.json() if f["code"] == "PPA001"]) == 20
    inner = pkg / "inner.py"
    inner.write_text(inner.read_text(encoding="utf-8") + "        self.start_layer = self.model.start_layer\n",
                     encoding="utf-8")
    warm = run_cli("check", "pkg", "--cache-dir", cache, "--python", "none", "--output-format", "json", "-j", "2",
                   cwd=tmp_path)
    assert [f for f in warm.json() if f["code"] == "PPA001"] == [], warm.stdout
    fresh = run_cli("check", "pkg", "--no-cache", "--python", "none", "--output-format", "json", "-j", "1",
                    cwd=tmp_path)
    assert warm.stdout == fresh.stdout


def test_the_files_the_workers_checks_read_are_what_the_run_depends_on(tmp_path):
    # a check run in a forked worker reads files the parent never sees (its tree scans, the
    # modules it summarizes): their stats come back and join the files the run depends on
    from pp_attr_lint.engine.check import _check_in_workers
    from pp_attr_lint.index.spec import IndexSpec
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.project import Project

    project = Project([tmp_path], IndexSpec(frozenset()), Cache(None, "", enabled=False))

    def check_file(st):
        time.sleep(0.02)  # long enough that both processes take chunks
        project.touched[f"/read/by/{os.getpid()}/{st.n}"] = (st.n, 1)
        return [], [], []

    from types import SimpleNamespace

    checked = [SimpleNamespace(path=f"/checked/{i}.py", n=i) for i in range(32)]
    project.touched.update((st.path, (0, 1000)) for st in checked)  # their stats: the chunks' weights
    got = _check_in_workers(project, checked, check_file, 2)
    assert got == [([], [], [])] * 32
    reads = [p for p in project.touched if p.startswith("/read/")]
    readers = {path.split("/")[3] for path in reads}
    assert len(readers) == 2 and str(os.getpid()) in readers  # this process's reads and the worker's
    assert sorted(int(p.rsplit("/", 1)[1]) for p in reads) == list(range(32))

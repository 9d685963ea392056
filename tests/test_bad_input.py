"""Bad input loses nothing: syntax errors, undecodable / empty / CRLF / BOM / unreadable files,
symlink loops, missing paths, folders without Python files, named pipes and devices, folders that
cannot be listed; --fix writes atomically and keeps
encoding, BOM, line endings and mode; concurrent runs share a cache safely.

Which files get parsed (documented behaviour of the core, tested here): a file named on the command
line is always parsed, so its syntax error is always reported; a file found by walking a folder is
parsed only when the text prefilter says it may hold a watched read (``x.start_layer``,
``getattr(x, "end_layer")``), so a syntax error in a file without one is not reported.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_faults import PYTHON, _env, _seed_package

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "fixtures" / "seed"
MODELS = Path("minivllm") / "model_executor" / "models"
SEED_HIT = f"{MODELS / 'qwen3_vl.py'}:29:20 PPA001"

# a module of the seed package with one fixable read (the wrapper class lives in qwen3_vl.py)
USER = """\
from .qwen3_vl import Qwen3LLMForCausalLM


class A:
    def __init__(self, c):
        self.lm = Qwen3LLMForCausalLM(vllm_config=c)

    def f(self):
        return self.lm.start_layer
"""
USER_FIXED = USER.replace("self.lm.start_layer", "self.lm.model.start_layer")


def cli(*args: str, cwd: Path = REPO, env: dict | None = None, prefix: list[str] = (), **kw) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    e["NO_COLOR"] = "1"
    e.update(env or {})
    return subprocess.run([*prefix, sys.executable, "-m", "pp_attr_lint", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def concise(root: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return cli("check", *(args or (".",)), "--no-cache", "--output-format", "concise", "-q", cwd=root, **kw)


def lines(r) -> list[str]:
    return r.stdout.splitlines()


def models(root: Path) -> Path:
    return root / MODELS


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# -- syntax errors -------------------------------------------------------------------------------

def test_syntax_error_is_its_own_diagnostic_and_the_rest_is_checked(seed):
    (models(seed) / "broken.py").write_text("def f(x):\n    return x.start_layer +\n")
    r = concise(seed)
    assert r.returncode == 1
    assert lines(r) == [
        f"{MODELS / 'broken.py'}:2:27: invalid-syntax SyntaxError: invalid syntax",
        lines(r)[1],
    ]
    assert lines(r)[1].startswith(f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001 [*] ")


def test_syntax_error_without_watched_read(seed):
    # found by walking: not parsed (the prefilter sees no watched read), so not reported
    (models(seed) / "nohit.py").write_text("def g(:\n    pass\n")
    r = concise(seed)
    assert r.returncode == 1
    assert [ln.split(": ")[0] for ln in lines(r)] == [f"{MODELS / 'qwen3_vl.py'}:29:20"]
    # named explicitly: always parsed and reported
    r = concise(seed, str(MODELS / "nohit.py"), str(MODELS / "qwen3_vl.py"))
    assert r.returncode == 1
    assert lines(r)[0] == f"{MODELS / 'nohit.py'}:1:7: invalid-syntax SyntaxError: invalid syntax"
    assert lines(r)[1].startswith(f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001")


def test_null_byte(seed):
    (models(seed) / "nul.py").write_bytes(b"x = a.start_layer\n\x00\n")
    r = concise(seed)
    assert lines(r)[0] == f"{MODELS / 'nul.py'}:1:1: invalid-syntax SyntaxError: source code string cannot contain null bytes"


# -- encodings, empty files, line endings, BOM -------------------------------------------------------

def test_undecodable_files(seed):
    m = models(seed)
    (m / "badutf8.py").write_bytes(b'# -*- coding: utf-8 -*-\nx = "\xff\xfe"\ny = a.start_layer\n')
    (m / "badcookie.py").write_bytes(b"# -*- coding: foobar -*-\ny = a.start_layer\n")
    (m / "latin1_nohit.py").write_bytes(b'x = "caf\xe9"\n')  # no watched read, not parsed: no report
    r = concise(seed)
    assert r.returncode == 1
    assert lines(r)[:2] == [
        f"{MODELS / 'badcookie.py'}:1:1: io-error cannot decode file: unknown encoding: foobar",
        f"{MODELS / 'badutf8.py'}:1:1: io-error cannot decode file: invalid start byte at byte 29",
    ]
    assert lines(r)[2].startswith(f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001")
    assert len(lines(r)) == 3
    r = concise(seed, str(MODELS / "latin1_nohit.py"))
    assert (r.returncode, lines(r)) == (1, [
        f"{MODELS / 'latin1_nohit.py'}:1:1: io-error cannot decode file: invalid continuation byte at byte 8"])


def test_empty_file(seed):
    (models(seed) / "empty.py").write_bytes(b"")
    r = cli("check", str(MODELS / "empty.py"), "--no-cache", cwd=seed)
    assert (r.returncode, r.stdout, r.stderr) == (0, "All checks passed!\n", "")
    r = concise(seed)
    assert [ln.split(": ")[0] for ln in lines(r)] == [f"{MODELS / 'qwen3_vl.py'}:29:20"]


VARIANTS = {
    "crlf.py": USER.replace("\n", "\r\n").encode(),
    "cr.py": USER.replace("\n", "\r").encode(),
    "bom.py": b"\xef\xbb\xbf" + USER.encode(),
    "bom_crlf.py": b"\xef\xbb\xbf" + USER.replace("\n", "\r\n").encode(),
    "latin1.py": ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + USER).encode("latin-1"),
}
@pytest.mark.parametrize("name", [
    "crlf.py", "cr.py",
    "bom.py", "bom_crlf.py", "latin1.py"])
def test_crlf_bom_encodings_are_checked_and_fixed_byte_exactly(seed, name):
    m = models(seed)
    data = VARIANTS[name]
    (m / name).write_bytes(data)
    os.chmod(m / name, 0o750)
    r = concise(seed)
    row = USER.splitlines().index("        return self.lm.start_layer") + 1 + (2 if name == "latin1.py" else 0)
    assert lines(r)[0].split(": ")[0] == f"{MODELS / name}:{row}:16"
    r = cli("check", ".", "--no-cache", "--fix", "-q", cwd=seed)
    assert r.returncode == 0, r.stdout + r.stderr
    # exactly the old bytes with `.model` inserted, in the file's encoding, BOM and line endings
    assert (m / name).read_bytes() == data.replace(b"self.lm.start_layer", b"self.lm.model.start_layer")
    assert stat.S_IMODE((m / name).stat().st_mode) == 0o750
    assert not [p for p in m.iterdir() if p.name.startswith(".")]  # no temporary files left


# -- paths: missing, loops, unreadable, no Python files ----------------------------------------------

def test_nonexistent_path(seed):
    r = cli("check", "nope.py", "--no-cache", cwd=seed)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "pp-attr-lint: error: nope.py: No such file or directory\n"
    r = cli("check", ".", "missing/dir", "--no-cache", cwd=seed)
    assert r.returncode == 2 and r.stderr == "pp-attr-lint: error: missing/dir: No such file or directory\n"


def test_folder_without_python_files(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("start_layer\n")
    r = cli("check", str(tmp_path / "docs"), "--no-cache", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "All checks passed!\n")
    assert r.stderr == "pp-attr-lint: warning: no Python files found under the given paths\n"


def test_symlink_loops(seed):
    m = models(seed)
    os.symlink("loop_b.py", m / "loop_a.py")
    os.symlink("loop_a.py", m / "loop_b.py")
    os.symlink(".", m / "self_dir")  # a folder loop: not followed
    os.symlink("..", m / "up")
    r = concise(seed, timeout=60)
    assert r.returncode == 1
    assert lines(r)[:2] == [
        f"{MODELS / 'loop_a.py'}:1:1: io-error cannot read file: Too many levels of symbolic links",
        f"{MODELS / 'loop_b.py'}:1:1: io-error cannot read file: Too many levels of symbolic links",
    ]
    assert lines(r)[2].startswith(f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001")
    assert len(lines(r)) == 3


def _unreadable_prefix() -> list[str]:
    """A command prefix under which chmod 000 stops reads: none for a normal user; for root,
    ``setpriv`` without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is missing: chmod 000 does not stop reads")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search",
              "--inh-caps=-dac_override,-dac_read_search", "--"]
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root and capabilities cannot be dropped: chmod 000 does not stop reads")
    return prefix


def test_unreadable_file(seed):
    prefix = _unreadable_prefix()
    p = models(seed) / "secret.py"
    p.write_text(USER)
    os.chmod(p, 0)
    try:
        r = cli("check", ".", "--no-cache", "--output-format", "concise", "-q", cwd=seed, prefix=prefix)
    finally:
        os.chmod(p, 0o644)
    assert r.returncode == 1, r.stderr
    assert lines(r)[0].startswith(f"{MODELS / 'qwen3_vl.py'}:29:20: PPA001")
    assert lines(r)[1] == f"{MODELS / 'secret.py'}:1:1: io-error cannot read file: Permission denied"
    assert len(lines(r)) == 2


# -- --fix: only fixable files change; never unparsable; atomic ------------------------------------

def test_fix_over_tree_with_broken_file_changes_only_fixable_files(seed):
    m = models(seed)
    (m / "user.py").write_text(USER)
    (m / "broken.py").write_text("def f(x):\n    return x.start_layer +\n")
    (m / "badutf8.py").write_bytes(b'x = "\xff"\ny = a.start_layer\n')
    before = snapshot(seed)
    r = cli("check", ".", "--no-cache", "--fix", "--output-format", "concise", "-q", cwd=seed)
    assert r.returncode == 1  # the broken files remain as diagnostics
    assert [ln.split(": ")[1].split()[0] for ln in lines(r)] == ["io-error", "invalid-syntax"]
    after = snapshot(seed)
    changed = sorted(k for k in before if before[k] != after.get(k))
    assert changed == [str(MODELS / "qwen3_vl.py"), str(MODELS / "user.py")]
    assert set(after) == set(before)
    assert (m / "user.py").read_text() == USER_FIXED
    assert (m / "qwen3_vl.py").read_bytes() == (SEED / MODELS / "qwen3_vl.py.fixed").read_bytes()


@pytest.mark.parametrize("also_edits,message", [
    (False, "libcst's output differs from the finding's edits"),
    (True, "fixed text would not parse"),
])
def test_fix_never_writes_text_that_does_not_parse(seed, monkeypatch, capsys, also_edits, message):
    from pp_attr_lint import fixes
    from pp_attr_lint.cli import main

    def spoil(text: str) -> str:
        return text.replace(".model.", ".model..", 1)

    real = fixes.transform_module
    monkeypatch.setattr(fixes, "transform_module", lambda cmd, code: (lambda res: type(res)(
        code=spoil(res.code), warning_messages=res.warning_messages))(real(cmd, code)))
    if also_edits:  # the expected text agrees with the spoiled output: only the parse check is left
        real_edits = fixes.apply_edits
        monkeypatch.setattr(fixes, "apply_edits", lambda text, edits: spoil(real_edits(text, edits)))
    vl = models(seed) / "qwen3_vl.py"
    before = vl.read_bytes()
    rc = main(["check", str(seed), "--no-cache", "--fix", "--output-format", "concise", "-q"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert vl.read_bytes() == before
    assert message in err and "file left unchanged" in err, err
    assert ":29:20: PPA001" in out  # still reported
    assert not [p for p in vl.parent.iterdir() if p.name.startswith(".")]


def test_interrupted_fix_leaves_each_file_old_or_new(seed, monkeypatch, capsys):
    from pp_attr_lint import textio
    from pp_attr_lint.cli import main

    m = models(seed)
    for i in range(3):
        (m / f"user{i}.py").write_text(USER)
    before = snapshot(seed)
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C between two files
        return real_replace(src, dst)

    monkeypatch.setattr(textio.os, "replace", replace)
    rc = main(["check", str(seed), "--no-cache", "--fix", "-q"])
    monkeypatch.undo()
    assert rc == 2
    assert "pp-attr-lint: interrupted" in capsys.readouterr().err
    after = snapshot(seed)
    assert set(after) == set(before)  # no temporary file left behind
    new = 0
    for k, old in before.items():
        if after[k] != old:
            new += 1
            ast.parse(after[k])
            assert after[k] == old.replace(b"start_layer", b"model.start_layer", 1)
    assert new == 1


def test_killed_fix_leaves_each_file_old_or_new(tmp_path):
    """SIGKILL a real --fix run over many files at several moments: every file is the old or the
    new text, never a mix."""
    root = tmp_path / "big"
    shutil.copytree(SEED, root, ignore=shutil.ignore_patterns("*.fixed", "__pycache__", "expected.json"))
    m = root / MODELS
    filler = "\n".join(f"x{i} = {i}" for i in range(100)) + "\n"
    for i in range(40):
        (m / f"user{i:03}.py").write_text(USER + filler)
    old = {p.name: p.read_bytes() for p in m.glob("user*.py")}
    new = {k: v.replace(b"self.lm.start_layer", b"self.lm.model.start_layer") for k, v in old.items()}
    cmd = [sys.executable, "-m", "pp_attr_lint", "check", ".", "--no-cache", "-q"]
    t0 = time.monotonic()
    r = subprocess.run([*cmd, "--diff"], cwd=root, capture_output=True, timeout=300)  # same work, no writes
    took = time.monotonic() - t0
    assert r.returncode == 1 and r.stdout.count(b"+++ b/") == 41
    for frac in (0.5, 0.7, 0.85, 0.95):
        proc = subprocess.Popen([*cmd, "--fix"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(took * frac)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        states = []
        for name in old:
            data = (m / name).read_bytes()
            assert data in (old[name], new[name]), name
            states.append(data == new[name])
        print(f"killed after {took * frac:.2f}s: {sum(states)} of {len(states)} files fixed")
    # a complete run finishes the job; stray temporary files of a killed run are never checked
    r = cli("check", ".", "--no-cache", "--fix", "-q", cwd=root, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in old:
        assert (m / name).read_bytes() == new[name]


# -- concurrent runs share a cache -------------------------------------------------------------------

def test_concurrent_runs_do_not_corrupt_the_cache(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(12):
        shutil.copytree(SEED / "minivllm", root / f"pkg{i}" / "minivllm")
        (root / f"pkg{i}" / "minivllm" / "model_executor" / "models" / "user.py").write_text(USER)
        (root / f"pkg{i}" / "minivllm" / "model_executor" / "models" / "broken.py").write_text(
            "def f(x):\n    return x.start_layer +\n")
    cache = tmp_path / "cache"
    args = ["check", ".", "--output-format", "concise", "--cache-dir", str(cache)]
    expected = cli(*args[:-2], "--no-cache", cwd=root)
    assert expected.returncode == 1 and expected.stdout.count("PPA001") == 24
    assert expected.stdout.count("invalid-syntax") == 12
    procs = [subprocess.Popen([sys.executable, "-m", "pp_attr_lint", *args], cwd=root, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(8)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    for rc, out, err in results:
        assert (rc, out, err) == (1, expected.stdout, "")
    for _ in range(2):  # and warm runs afterwards
        r = cli(*args, cwd=root)
        assert (r.returncode, r.stdout, r.stderr) == (1, expected.stdout, "")


# -- files that are not regular files, folders that cannot be listed, unreadable dependencies -----

def _limited(gb: int = 4):
    """A ``preexec_fn`` that caps the child's address space at ``gb`` GiB (``RLIMIT_AS``)."""
    import resource

    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (gb << 30, gb << 30))
    return apply


@pytest.mark.parametrize("named", ["folder", "other-file"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_dev_zero_link_and_a_pipe_among_the_package_files_are_skipped(tmp_path, named, jobs):
    """``bad.py -> /dev/zero`` took 24 GB and a named pipe ``pipe.py`` hung the run forever, also
    when another file of the package was the one named (the package scans read every ``.py``).
    Now neither is opened: the run ends well within 60 s under a 4 GB address-space limit, the
    real finding is kept, and the walk names both on stderr."""
    import time

    models = _seed_package(tmp_path)
    (models / "bad.py").symlink_to("/dev/zero")
    os.mkfifo(models / "pipe.py")
    target = "minivllm" if named == "folder" else "minivllm/model_executor/models/qwen3_vl.py"
    start = time.monotonic()
    got = subprocess.run([PYTHON, "-m", "pp_attr_lint", "check", target, "--no-cache", "-j", jobs,
                          "--output-format", "concise"], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=60, preexec_fn=_limited(4))
    assert time.monotonic() - start < 60
    assert "Traceback" not in got.stderr, got.stderr
    assert got.returncode == 1, got.stderr
    assert got.stdout.splitlines()[0].startswith("minivllm/model_executor/models/qwen3_vl.py:29:20: PPA001"), got.stdout
    assert "Found 1 error." in got.stdout
    if named == "folder":
        assert ("minivllm/model_executor/models/bad.py: not a regular file (a symbolic link to /dev/zero, a character "
                "device); skipped, never opened") in got.stderr, got.stderr
        assert "minivllm/model_executor/models/pipe.py: not a regular file (a named pipe); skipped" in got.stderr


@pytest.mark.parametrize("name,what", [("pipe.py", "a named pipe"), ("bad.py", "a symbolic link to /dev/zero"),
                                       ("dev", "a character device")])
def test_naming_a_pipe_or_a_device_is_an_error(tmp_path, name, what):
    models = _seed_package(tmp_path)
    os.mkfifo(models / "pipe.py")
    (models / "bad.py").symlink_to("/dev/zero")
    path = "/dev/null" if name == "dev" else f"minivllm/model_executor/models/{name}"
    got = subprocess.run([PYTHON, "-m", "pp_attr_lint", "check", path, "--no-cache"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=60, preexec_fn=_limited(4))
    assert got.returncode == 2, got.stderr
    assert f"pp-attr-lint: error: {path}: not a regular file ({what}" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr


def test_read_regular_refuses_pipes_without_blocking(tmp_path):
    """The one reader of source files opens without waiting for a writer and reads nothing that is
    not a regular file; a link to a regular file is read."""
    import errno

    from pp_attr_lint.textio import read_regular

    os.mkfifo(tmp_path / "p.py")
    for path, what in ((tmp_path / "p.py", "a named pipe"), ("/dev/zero", "a character device")):
        with pytest.raises(OSError) as e:
            read_regular(path)
        assert e.value.errno == errno.EINVAL and what in str(e.value)
    (tmp_path / "real.py").write_bytes(b"x = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "real.py")
    assert read_regular(tmp_path / "link.py") == b"x = 1\n"


_NOBODY = 65534


def _shared_dir() -> Path:
    """A folder another user can enter (pytest's own tmp folders are private to root)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="pp-attr-lint-faults-"))
    d.chmod(0o755)
    return d


def _as_other_user(args: list, cwd: Path) -> subprocess.CompletedProcess:
    """Run pp-attr-lint with ``args`` as a user without root's power to read anything: tests run as
    root, where ``chmod 000`` does not stop a read; ``setpriv`` drops to ``nobody`` then."""
    cmd = [PYTHON, "-m", "pp_attr_lint", *map(str, args)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: an unreadable folder cannot be made")
        cmd = [setpriv, f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups", *cmd]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture
def shared_tree():
    d = _shared_dir()
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            try:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o755)
            except OSError:
                pass
        shutil.rmtree(d, ignore_errors=True)


def test_an_unreadable_subfolder_is_an_io_error(shared_tree):
    """A folder that cannot be listed was skipped in silence ("All checks passed!" with nothing
    checked in it): it is an ``io-error`` entry now (exit 1), and the rest is checked."""
    _seed_package(shared_tree)
    locked = shared_tree / "minivllm" / "locked"
    locked.mkdir()
    (locked / "m.py").write_text("x = 1\n")
    locked.chmod(0)
    got = _as_other_user(["check", "minivllm", "--no-cache", "--output-format", "concise"], shared_tree)
    assert "Traceback" not in got.stderr, got.stderr
    assert got.returncode == 1, (got.stdout, got.stderr)
    assert "minivllm/locked:1:1: io-error cannot list folder: Permission denied" in got.stdout, got.stdout
    assert "PPA001" in got.stdout and "Found 2 errors." in got.stdout
    (shared_tree / "minivllm" / "model_executor" / "models" / "qwen3_vl.py").write_text("x = 1\n")
    again = _as_other_user(["check", "minivllm", "--no-cache"], shared_tree)
    assert again.returncode == 1 and "All checks passed!" not in again.stdout, again.stdout


@pytest.mark.parametrize("named,message", [
    ("minivllm/locked", "minivllm/locked: cannot list folder: Permission denied"),
    ("minivllm/locked/m.py", "minivllm/locked/m.py: cannot access: Permission denied"),
])
def test_naming_an_unreadable_folder_is_a_clear_error(shared_tree, named, message):
    """Naming the folder (or a file in a folder that cannot be searched) gave a traceback from the
    configuration search: it is one line and exit 2 now."""
    _seed_package(shared_tree)
    locked = shared_tree / "minivllm" / "locked"
    locked.mkdir()
    (locked / "m.py").write_text("x = 1\n")
    locked.chmod(0)
    got = _as_other_user(["check", named, "--no-cache"], shared_tree)
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert got.stderr.strip().splitlines() == [f"pp-attr-lint: error: {message}"], got.stderr


def test_an_unreadable_dependency_is_io_error_not_syntax_error(shared_tree):
    """A read that depends on a file that cannot be read was counted as "syntax-error"."""
    models = _seed_package(shared_tree)
    (models / "qwen2.py").chmod(0)
    got = _as_other_user(["check", "minivllm/model_executor/models/qwen3_vl.py", "--no-cache",
                          "--output-format", "concise", "--show-unresolved"], shared_tree)
    assert got.returncode == 1, got.stderr
    assert "minivllm/model_executor/models/qwen2.py:1:1: io-error cannot read file: Permission denied" in got.stdout
    assert "PPA001 not judged (io-error): base Qwen2Model of Qwen3Model" in got.stdout, got.stdout
    assert "syntax-error" not in got.stdout
    assert "3 reads not judged (3 io-error)" in got.stdout

"""``--fix`` loses no edit made while it runs: a file is written only if it still holds the bytes its
findings were computed on (checked when its fix starts and again immediately before the atomic
replace); otherwise it is left as it is, named on stderr, and the run exits 1.  And the fix loop
(:func:`pp_attr_lint.fixes.fix_until_stable`) fixes, checks again and stops when stable."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import REPO
from test_fix import CASES, _expected, make_project

ORIGINAL = CASES["lf-utf8"]
EDIT = b"# added by an editor while the fix ran\n"


def _main(argv, capsys):
    from pp_attr_lint.cli import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_edit_before_the_fix_starts_is_kept(tmp_path, monkeypatch, capsys):
    """An append made after the check read the file and before its fix reads it again."""
    from pp_attr_lint import fixes

    path = make_project(tmp_path, ORIGINAL)
    real = fixes.fix_file

    def fix_file(p, *a, **k):
        with open(p, "ab") as f:
            f.write(EDIT)
        return real(p, *a, **k)

    monkeypatch.setattr(fixes, "fix_file", fix_file)
    rc, out, err = _main(["check", str(tmp_path), "--no-cache", "--fix"], capsys)
    assert rc == 1, out + err
    assert path.read_bytes() == ORIGINAL + EDIT
    assert "target.py: changed during the run, not fixed" in err, err
    assert "2 fixed" not in out


def test_edit_while_the_fix_is_computed_is_kept(tmp_path, monkeypatch, capsys):
    """An append made after the fix read the file (inside the libcst step), before the replace."""
    from pp_attr_lint import fixes

    path = make_project(tmp_path, ORIGINAL)
    real = fixes.transform_module

    def transform_module(cmd, code):
        with open(path, "ab") as f:
            f.write(EDIT)
        return real(cmd, code)

    monkeypatch.setattr(fixes, "transform_module", transform_module)
    rc, out, err = _main(["check", str(tmp_path), "--no-cache", "--fix"], capsys)
    assert rc == 1, out + err
    assert path.read_bytes() == ORIGINAL + EDIT
    assert "changed during the run, not fixed" in err, err
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_edit_between_check_and_fix_is_kept_with_exit_zero_too(tmp_path, monkeypatch, capsys):
    from pp_attr_lint import fixes

    path = make_project(tmp_path, ORIGINAL)
    real = fixes.fix_file

    def fix_file(p, *a, **k):
        with open(p, "ab") as f:
            f.write(EDIT)
        return real(p, *a, **k)

    monkeypatch.setattr(fixes, "fix_file", fix_file)
    rc, _, err = _main(["check", str(tmp_path), "--no-cache", "--fix", "--exit-zero"], capsys)
    assert rc == 1 and "changed during the run" in err
    assert path.read_bytes() == ORIGINAL + EDIT


def test_a_replayed_run_compares_with_the_bytes_it_was_computed_on(tmp_path, monkeypatch, capsys):
    """A memoized run replays its findings without reading the files; the content hash it keeps
    still tells a same-size edit that kept the time stamp from the bytes the findings were made on."""
    cache = tmp_path / "cache"
    path = make_project(tmp_path / "p", ORIGINAL)
    rc, _, _ = _main(["check", str(tmp_path / "p"), "--cache-dir", str(cache)], capsys)
    assert rc == 1
    st = os.stat(path)
    edited = ORIGINAL.replace(b"nn.Module):\n    def", b"nn.Module):  \n  def", 1)
    assert edited != ORIGINAL and len(edited) == len(ORIGINAL)
    path.write_bytes(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the memo is replayed
    rc, _, err = _main(["check", str(tmp_path / "p"), "--cache-dir", str(cache), "--fix"], capsys)
    assert rc == 1 and "changed during the run, not fixed" in err, err
    assert path.read_bytes() == edited
    # unchanged since the check (warm again): fixed
    path.write_bytes(ORIGINAL)
    rc, _, _ = _main(["check", str(tmp_path / "p"), "--cache-dir", str(cache)], capsys)
    rc, out, err = _main(["check", str(tmp_path / "p"), "--cache-dir", str(cache), "--fix"], capsys)
    assert rc == 0, out + err
    assert path.read_bytes() == _expected(ORIGINAL)


def test_diff_of_a_file_changed_since_the_check_is_not_shown(tmp_path, monkeypatch, capsys):
    from pp_attr_lint import fixes

    path = make_project(tmp_path, ORIGINAL)
    real = fixes.fix_file

    def fix_file(p, *a, **k):
        with open(p, "ab") as f:
            f.write(EDIT)
        return real(p, *a, **k)

    monkeypatch.setattr(fixes, "fix_file", fix_file)
    rc, out, err = _main(["check", str(tmp_path), "--no-cache", "--diff"], capsys)
    assert rc == 1 and out == "" and "changed during the run" in err
    assert path.read_bytes() == ORIGINAL + EDIT


@pytest.mark.skipif(sys.platform == "win32", reason="appends while another process replaces the file")
def test_appends_every_0_3_s_during_a_long_fix_all_survive(tmp_path):
    """A long ``--fix`` of a big file while another process appends a line every 0.3 s: every
    appended line is in the file at the end, whatever the fix did."""
    filler = []
    i = 0
    while len(filler) < 40_000:
        filler += [f"def helper_{i}(x, y):", f"    z = x.weight + y * {i}", "    if z > 10:",
                   "        return [z, x.bias]", "    return {'a': z}", "", ""]
        i += 1
    path = make_project(tmp_path, ORIGINAL + b"\n\n" + "\n".join(filler).encode() + b"\n")
    stop = threading.Event()
    appended: list[bytes] = []

    def append():
        n = 0
        while not stop.is_set():
            line = f"# append {n}\n".encode()
            with open(path, "ab") as f:
                f.write(line)
            appended.append(line)
            n += 1
            stop.wait(0.3)

    env = dict(os.environ, PYTHONPATH=str(REPO))
    t = threading.Thread(target=append)
    t.start()
    try:
        start = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "pp_attr_lint", "check", ".", "--no-cache", "--fix", "-q"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
        elapsed = time.monotonic() - start
        stop.wait(0.7)  # appends after the run, too
    finally:
        stop.set()
        t.join()
    data = path.read_bytes()
    lost = [line for line in appended if line not in data]
    assert not lost, (len(lost), len(appended), p.stderr)
    assert len(appended) >= 3
    if p.returncode == 1:
        assert "changed during the run, not fixed" in p.stderr, p.stderr
    else:
        assert p.returncode == 0, p.stdout + p.stderr
        assert b"self.lm.model.start_layer" in data
    assert elapsed < 30


# -- the fix loop ------------------------------------------------------------------------------

def _finding(path: str, row: int, col: int):
    from pp_attr_lint.model import Edit, Finding, Fix

    return Finding(code="PPA001", name="x", message="m", path=path, row=row, column=col - 2, end_row=row,
                   end_column=col + 2, fix=Fix("safe", "insert", (Edit(".m", row, col, row, col),)))


def test_the_fix_loop_fixes_what_a_recheck_finds_until_stable(tmp_path):
    from pp_attr_lint.engine.check import CheckResult
    from pp_attr_lint.fixes import fix_until_stable

    path = tmp_path / "a.py"
    path.write_text("x = a.b\ny = c.d\n")
    p = str(path)
    rechecks = [CheckResult([_finding(p, 2, 6)], 1), CheckResult([], 1)]
    run = fix_until_stable(CheckResult([_finding(p, 1, 6)], 1), lambda: rechecks.pop(0), ("safe",))
    assert path.read_text() == "x = a.m.b\ny = c.m.d\n"
    assert (run.rounds, len(run.fixed), run.errors, run.changed, run.findings) == (2, 2, [], [], [])


def test_the_fix_loop_stops_after_max_rounds(tmp_path):
    from pp_attr_lint.engine.check import CheckResult
    from pp_attr_lint.fixes import fix_until_stable

    path = tmp_path / "a.py"
    path.write_text("x = a.b\n")
    p = str(path)
    run = fix_until_stable(CheckResult([_finding(p, 1, 6)], 1), lambda: CheckResult([_finding(p, 1, 6)], 1),
                           ("safe",), max_rounds=3)
    assert run.rounds == 3 and path.read_text() == "x = a.m.m.m.b\n"
    assert len(run.findings) == 1 and "did not converge after 3 rounds" in run.errors[0]


def test_the_fix_loop_runs_one_round_for_diff(tmp_path):
    from pp_attr_lint.engine.check import CheckResult
    from pp_attr_lint.fixes import fix_until_stable

    path = tmp_path / "a.py"
    path.write_text("x = a.b\n")
    first = CheckResult([_finding(str(path), 1, 6)], 1)
    run = fix_until_stable(first, lambda: pytest.fail("no re-check for --diff"), ("safe",), diff=True)
    assert run.rounds == 1 and "+x = a.m.b" in run.diff_text and path.read_text() == "x = a.b\n"
    assert run.findings == first.findings


# -- libcst on the regions that hold the edits ----------------------------------------------------

REGIONS = '''\
import os
top = wrapper.start_layer


@decorator(
    arg=1,
)
def f(x):
    """Doc
text at column 0
    """
    if x:
        for i in range(3):
            y = (x.lm
                 .start_layer)
    return getattr(x.lm, "end_layer")


class C:
    attr = holder.start_layer

    @property
    def p(self):
        return self.lm.start_layer

    async def q(self):
        try:
            pass
        except Exception:
            z = self.lm.start_layer; w = 2
        return z


class T:
\tdef t(self):
\t\treturn self.lm.start_layer
tail = last.start_layer'''


def _reads(text: str):
    """A submodule-path finding for every ``X.start_layer`` / ``getattr(X, "end_layer")`` read:
    (row, 1-based column of the read, receiver end (row, column), attr)."""
    import ast as _ast

    out = []
    for node in _ast.walk(_ast.parse(text)):
        if isinstance(node, _ast.Attribute) and node.attr == "start_layer":
            out.append((node.lineno, node.col_offset + 1, node.value.end_lineno, node.value.end_col_offset + 1, "start_layer"))
        if isinstance(node, _ast.Call) and getattr(node.func, "id", None) == "getattr":
            recv = node.args[0]
            out.append((node.lineno, node.col_offset + 1, recv.end_lineno, recv.end_col_offset + 1, "end_layer"))
    return out


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_insertions_anywhere_are_made_on_the_regions_that_hold_them(tmp_path, newline):
    from pp_attr_lint.fixes import apply_edits, fix_file
    from pp_attr_lint.model import Edit, Finding, Fix

    text = REGIONS.replace("\n", newline)
    path = tmp_path / "m.py"
    path.write_bytes(text.encode())
    findings = [Finding(code="PPA001", name="x", message="m", path=str(path), row=r, column=c, end_row=r, end_column=c + 1,
                        fix=Fix("safe", "insert", (Edit(".model", er, ec, er, ec),)),
                        fix_data={"path": ["model"], "attr": attr})
                for r, c, er, ec, attr in _reads(REGIONS)]
    assert len(findings) == 8
    for subset in (findings, findings[:1], findings[1:3], findings[3:5], findings[-2:]):
        ff = fix_file(str(path), subset)
        assert ff.error is None, ff.error
        assert len(ff.fixed) == len(subset)
        assert ff.new == apply_edits(text, [e for f in subset for e in f.fix.edits])
        assert ff.new.count(".model") == len(subset)


def test_edits_that_add_and_remove_lines_keep_the_regions_in_step(tmp_path):
    from pp_attr_lint.fixes import apply_edits, fix_file
    from pp_attr_lint.model import Edit, Finding, Fix

    path = tmp_path / "m.py"
    path.write_text(REGIONS)
    reads = [Finding(code="PPA001", name="x", message="m", path=str(path), row=r, column=c, end_row=r, end_column=c + 1,
                     fix=Fix("safe", "insert", (Edit(".model", er, ec, er, ec),)),
                     fix_data={"path": ["model"], "attr": attr})
             for r, c, er, ec, attr in _reads(REGIONS)]
    # other rules' edits: one adds two lines at the top, one joins the decorator's three lines
    grow = Finding(code="PPA999", name="y", message="m", path=str(path), row=1, column=1, end_row=1, end_column=10,
                   fix=Fix("safe", "grow", (Edit("import os\nimport sys\nimport re", 1, 1, 1, 10),)))
    shrink = Finding(code="PPA999", name="y", message="m", path=str(path), row=5, column=1, end_row=7, end_column=2,
                     fix=Fix("safe", "shrink", (Edit("@decorator(arg=1)", 5, 1, 7, 2),)))
    for subset in ([grow] + reads, [grow, shrink] + reads[2:], [shrink] + reads[3:6], [grow, shrink]):
        ff = fix_file(str(path), subset)
        assert ff.error is None, ff.error
        assert len(ff.fixed) == len(subset)
        assert ff.new == apply_edits(REGIONS, [e for f in subset for e in f.fix.edits])


def test_libcst_reads_only_the_regions_that_hold_the_edits(tmp_path, monkeypatch, capsys):
    """The speed of the fix path: a long file's fix parses with libcst only the function that
    holds the reads (libcst takes 11 s and 1.1 GB for 50,000 lines), once, and never imports
    libcst's codemod package (0.3 s)."""
    from pp_attr_lint import fixes

    filler = "".join(f"def helper_{i}(x):\n    return x.weight + {i}\n\n\n" for i in range(2000))
    path = make_project(tmp_path, ORIGINAL + b"\n\n" + filler.encode())
    parsed = []
    real = fixes.transform_module
    monkeypatch.setattr(fixes, "transform_module", lambda cmd, code: parsed.append(code) or real(cmd, code))
    rc, out, err = _main(["check", str(tmp_path), "--no-cache", "--fix"], capsys)
    assert rc == 0, out + err
    assert path.read_bytes() == _expected(ORIGINAL + b"\n\n" + filler.encode())
    [code] = parsed
    assert code.startswith("if 1:\n    def __init__(self, *, vllm_config):") and code.count("\n") < 10
    probe = ("import sys; from pp_attr_lint.cli import main; main(['check', sys.argv[1], '--no-cache', '--fix', '-q']); "
             "print('libcst.codemod' in sys.modules, 'libcst' in sys.modules)")
    path.write_bytes(ORIGINAL)
    p = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.stdout.splitlines()[-1] == "False True", p.stdout + p.stderr
    assert path.read_bytes() == _expected(ORIGINAL)

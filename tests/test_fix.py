"""``--fix`` keeps every byte it does not have to change; ``--diff`` only prints."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, check_json, run_cli, snapshot

BASE = textwrap.dedent('''\
    from torch import nn


    def make_layers(n, fn, prefix=""):
        return 0, n, nn.ModuleList()


    class Inner(nn.Module):
        def __init__(self, *, vllm_config):
            super().__init__()
            self.start_layer, self.end_layer, self.layers = make_layers(4, None)


    class Wrapper(nn.Module):
        def __init__(self, *, vllm_config):
            super().__init__()
            self.model = Inner(vllm_config=vllm_config)
''')

# `{pre}` is placed on the finding's line, before the read, to test character columns
TARGET = '''\
{header}"""Ünïcode docstring: {text}."""
from torch import nn

from .base import Wrapper


class VL(nn.Module):
    def __init__(self, *, vllm_config):
        super().__init__()
        self.lm = Wrapper(vllm_config=vllm_config)
        label, first = "{text}", self.lm.start_layer
        last = getattr(self.lm, "end_layer")  # {text}
        self.span = (label, first, last)
'''
BUGGY = (b'self.lm.start_layer', b'getattr(self.lm, "end_layer")')
FIXED = (b'self.lm.model.start_layer', b'getattr(self.lm.model, "end_layer")')


def _expected(data: bytes) -> bytes:
    for old, new in zip(BUGGY, FIXED):
        assert data.count(old) == 1
        data = data.replace(old, new)
    return data


def make_project(root: Path, target: bytes) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_bytes(b"")
    (pkg / "base.py").write_bytes(BASE.encode())
    path = pkg / "target.py"
    path.write_bytes(target)
    return path


def _target(encoding: str, newline: str = "\n", bom: bool = False, header: str = "", text: str = "größe") -> bytes:
    src = TARGET.format(header=header, text=text).replace("\n", newline)
    data = src.encode(encoding)
    return (b"\xef\xbb\xbf" + data) if bom else data


CASES = {
    "lf-utf8": _target("utf-8"),
    "crlf": _target("utf-8", newline="\r\n"),
    "cr": _target("utf-8", newline="\r"),
    "bom": _target("utf-8", bom=True),
    "bom-crlf": _target("utf-8", newline="\r\n", bom=True),
    "latin-1": _target("latin-1", header="# -*- coding: latin-1 -*-\n", text="größe café"),
    "latin-1-crlf": _target("latin-1", newline="\r\n", header="# -*- coding: latin-1 -*-\n", text="naïve"),
    "wide-chars": _target("utf-8", text="层 🙂"),
}


def _case_params():
    return [pytest.param(c, id=c) for c in CASES]


@pytest.mark.parametrize("case", _case_params())
def test_fix_keeps_encoding_bom_and_line_endings(tmp_path: Path, case: str):
    original = CASES[case]
    path = make_project(tmp_path, original)
    if "latin-1" in case:
        assert b"\xe9" in original or b"\xef" in original  # really non-ASCII latin-1 bytes
        with pytest.raises(UnicodeDecodeError):
            original.decode("utf-8")
    r, findings = check_json(tmp_path)
    assert r.rc == 1
    assert sorted((f["location"]["row"], f["location"]["column"]) for f in findings) == sorted(
        _columns(original))
    r = run_cli("check", ".", "--fix", "--no-cache", cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    assert path.read_bytes() == _expected(original)
    # nothing else was touched, and a re-check is clean
    assert (tmp_path / "pkg" / "base.py").read_bytes() == BASE.encode()
    _, findings = check_json(tmp_path)
    assert findings == []


def _columns(data: bytes) -> list[tuple[int, int]]:
    """(row, 1-based character column) of the two reads, computed independently of the tool."""
    from pp_attr_lint.textio import decode_source

    text = decode_source(data)
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for needle in ("self.lm.start_layer", 'getattr(self.lm, "end_layer")'):
        for i, line in enumerate(lines, start=1):
            if needle in line:
                out.append((i, line.index(needle) + 1))
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_fix_keeps_file_mode(tmp_path: Path):
    path = make_project(tmp_path, CASES["lf-utf8"])
    os.chmod(path, 0o754)
    r = run_cli("check", ".", "--fix", "--no-cache", cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    assert path.read_bytes() == _expected(CASES["lf-utf8"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    # no temporary file left behind
    assert sorted(p.name for p in path.parent.iterdir() if p.is_file()) == ["__init__.py", "base.py", "target.py"]


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_fix_through_a_symlink_rewrites_the_target(tmp_path: Path):
    real = tmp_path / "real_target.py"
    make_project(tmp_path / "proj", CASES["crlf"])
    link = tmp_path / "proj" / "pkg" / "target.py"
    real.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(real)
    r = run_cli("check", "pkg", "--fix", "--no-cache", cwd=tmp_path / "proj")
    assert r.rc == 0, r.stdout + r.stderr
    assert link.is_symlink()
    assert real.read_bytes() == _expected(CASES["crlf"])


@pytest.mark.parametrize("case", ["lf-utf8", "crlf", "latin-1"])
def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path, case: str):
    make_project(tmp_path, CASES[case])
    before = snapshot(tmp_path)
    r = run_cli("check", ".", "--diff", "--no-cache", cwd=tmp_path)
    assert r.rc == 1, r.stdout + r.stderr
    assert snapshot(tmp_path) == before
    out = r.stdout
    assert "--- a/pkg/target.py" in out and "+++ b/pkg/target.py" in out
    assert "@@ " in out
    minus = [ln for ln in out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln for ln in out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(minus) == len(plus) == 2
    assert any("self.lm.model.start_layer" in ln for ln in plus)
    assert any('getattr(self.lm.model, "end_layer")' in ln for ln in plus)
    assert all("model" not in ln for ln in minus)
    assert "base.py" not in out


def test_diff_on_a_clean_tree_prints_nothing(tmp_path: Path):
    make_project(tmp_path, _expected(CASES["lf-utf8"]))
    before = snapshot(tmp_path)
    r = run_cli("check", ".", "--diff", "--no-cache", cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.stdout == ""
    assert snapshot(tmp_path) == before


def test_fix_and_diff_skip_noqa(tmp_path: Path):
    data = CASES["lf-utf8"].replace(b"self.lm.start_layer\n", b"self.lm.start_layer  # noqa: PPA001\n")
    path = make_project(tmp_path, data)
    r = run_cli("check", ".", "--fix", "--no-cache", cwd=tmp_path)
    assert r.rc == 0, r.stdout + r.stderr
    assert path.read_bytes() == data.replace(BUGGY[1], FIXED[1])


def test_ctrl_c_inside_the_libcst_transform_is_an_interruption(seed, monkeypatch, capsys):
    """libcst's runner turns a KeyboardInterrupt in a transform into ``TransformExit``: ``--fix``
    then says "interrupted" (exit 2) and writes nothing, instead of failing an assertion."""
    from libcst.codemod import TransformExit

    from pp_attr_lint import fixes
    from pp_attr_lint.cli import main

    before = snapshot(seed)
    monkeypatch.setattr(fixes, "transform_module", lambda *a, **k: TransformExit())
    monkeypatch.chdir(seed)
    assert main(["check", ".", "--no-cache", "--fix", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "pp-attr-lint: interrupted" in err and "internal error" not in err
    assert snapshot(seed) == before


UNSAFE_CASES = [REPO / "rules" / "PPA411" / "cases" / "draft_layer_ids",
                REPO / "rules" / "PPA412" / "cases" / "mtp_first_rank"]


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe-only", "unsafe-fixes"])
@pytest.mark.parametrize("case", UNSAFE_CASES, ids=lambda c: c.parent.parent.name)
def test_fix_and_json_agree_on_unsafe_fixes(case: Path, unsafe: bool, tmp_path: Path):
    """What the JSON calls a fix is what ``--fix`` with the same options applies, edit for edit:
    an EAGLE head's stage layer count (PPA411) and an MTP head's rank test (PPA412) have unsafe
    fixes, shown and applied with ``--unsafe-fixes`` only; without it the help names the hidden
    fix and the text report counts it as ruff does."""
    from pp_attr_lint.fixes import apply_edits
    from pp_attr_lint.model import Edit

    work = tmp_path / case.name
    shutil.copytree(case, work, ignore=shutil.ignore_patterns("__pycache__"))
    opts = ["--src", REPO / "fixtures" / "ppstub", "--select", case.parent.parent.name,
            *(["--unsafe-fixes"] if unsafe else [])]
    r, findings = check_json(work, *opts)
    assert findings, r.stdout + r.stderr
    fixable = [f for f in findings if f["fix"] is not None]
    if unsafe:
        assert len(fixable) == len(findings) and all(f["fix"]["applicability"] == "unsafe" for f in fixable)
    else:
        assert not fixable
        assert all(f["help"].endswith("(1 hidden fix can be enabled with the `--unsafe-fixes` option)") for f in findings)
        text = run_cli("check", ".", "--no-cache", *opts, cwd=work).stdout
        assert "[*]" not in text
        n = len(findings)
        assert f"{n} hidden fix{'es' if n > 1 else ''} can be enabled with the `--unsafe-fixes` option." in text
    expected = {}
    for f in fixable:
        path = Path(f["filename"])
        old = expected.get(path, path.read_text(encoding="utf-8"))
        expected[path] = apply_edits(old, [Edit(e["content"], e["location"]["row"], e["location"]["column"],
                                                e["end_location"]["row"], e["end_location"]["column"])
                                           for e in f["fix"]["edits"]])
    before = snapshot(work)
    r = run_cli("check", ".", "--fix", "--no-cache", *opts, cwd=work)
    assert r.rc in (0, 1), r.stdout + r.stderr
    after = snapshot(work)
    changed = {rel for rel in after if after[rel] != before[rel]}
    assert changed == {p.resolve().relative_to(work.resolve()).as_posix() for p in expected}
    for path, text in expected.items():
        assert path.read_text(encoding="utf-8") == text

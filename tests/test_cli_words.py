"""What the command line says: paths it refuses or warns about, notes that ``-q`` keeps, messages
for undecodable and newer-Python files, the shape of each text finding (``= why:`` and one
``= help:``), not-judged details, and ``audit``'s rule selection
and source distributions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MODELS = Path("minivllm") / "model_executor" / "models"
SEED_HIT = f"{MODELS / 'qwen3_vl.py'}:29:20 PPA001"


def cli(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PP_ATTR_LINT_OUTPUT_FORMAT")}
    e["NO_COLOR"] = "1"
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pp_attr_lint", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=timeout)


# -- 1. paths and notes --------------------------------------------------------------------------

def test_empty_path_is_a_usage_error(seed):
    r = cli("check", "", "--no-cache", cwd=seed)
    assert (r.returncode, r.stdout) == (2, "")
    assert "pp-attr-lint: error: argument paths: an empty path" in r.stderr
    r = cli("check", ".", "--src", "", "--no-cache", cwd=seed)
    assert r.returncode == 2 and "argument --src: an empty path" in r.stderr
    for option in ("--cache-dir", "--config", "-o"):
        r = cli("check", ".", option, "", cwd=seed)
        assert r.returncode == 2 and "an empty path" in r.stderr, option


def test_stdin_dash_is_refused_clearly(seed):
    r = cli("check", "-", "--no-cache", cwd=seed)
    assert (r.returncode, r.stdout) == (2, "")
    assert "No such file" not in r.stderr
    assert "standard input is not supported" in r.stderr


def test_named_non_python_file_is_warned_about(seed):
    (seed / "notes.txt").write_text("x = 1\n")
    r = cli("check", "notes.txt", "--no-cache", cwd=seed)
    assert (r.returncode, r.stdout) == (0, "All checks passed!\n")
    assert r.stderr == ("pp-attr-lint: warning: notes.txt: not a Python file (no `.py` suffix); "
                        "checked as Python source\n")
    # a script with a python shebang is Python: no warning
    (seed / "tool").write_text("#!/usr/bin/env python3\nx = 1\n")
    r = cli("check", "tool", "--no-cache", cwd=seed)
    assert (r.returncode, r.stderr) == (0, "")


@pytest.mark.parametrize("how", ["cli", "config"])
def test_exclude_of_every_file_warns(seed, how):
    if how == "config":
        (seed / "pyproject.toml").write_text('[tool.pp-attr-lint]\nextend-exclude = ["*.py"]\n')
        r = cli("check", "minivllm", "--no-cache", cwd=seed)
    else:
        r = cli("check", "--no-cache", "--extend-exclude", "minivllm", cwd=seed)
    assert (r.returncode, r.stdout) == (0, "All checks passed!\n")
    n = len(list((seed / "minivllm").rglob("*.py")))
    assert r.stderr == (f"pp-attr-lint: warning: no Python files found under the given paths "
                        f"({n} files excluded by `exclude` / `extend-exclude`)\n")


def test_misspelled_as_module_is_warned_about_also_with_quiet(seed, tmp_path):
    lone = tmp_path / "qwen3_vl.py"
    lone.write_text((seed / MODELS / "qwen3_vl.py").read_text())
    for extra in ((), ("-q",)):
        r = cli("check", str(lone), "--as-module", "minivlm.model_executor.models.qwen3_vl", "--src", str(seed),
                "--no-cache", *extra, cwd=tmp_path)
        assert r.returncode == 0
        assert ("pp-attr-lint: warning: --as-module minivlm.model_executor.models.qwen3_vl: no package `minivlm` "
                "in the --src folders or the environment") in r.stderr
    # spelled right: no warning, and the finding
    r = cli("check", str(lone), "--as-module", "minivllm.model_executor.models.qwen3_vl", "--src", str(seed),
            "--no-cache", "-q", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == ""


# -- 2. undecodable bytes: where ----------------------------------------------------------------

@pytest.mark.parametrize("data,where", [
    (b'# caf\xe9\nx = 1\n', "invalid continuation byte at byte 5"),  # first line, no coding line
    (b'#!/usr/bin/env python\n# caf\xe9\n', "invalid continuation byte at byte 27"),  # second line
    (b'\xef\xbb\xbf# caf\xe9\n', "invalid continuation byte at byte 8"),  # after a BOM
    (b'x = 1\ny = "\xff"\n', "invalid start byte at byte 11"),  # later lines (as before)
])
def test_undecodable_byte_is_reported_with_its_position(seed, data, where):
    from pp_attr_lint.textio import decode_source

    (seed / "lat.py").write_bytes(data)
    r = cli("check", "lat.py", "--no-cache", "--output-format", "concise", "-q", cwd=seed)
    assert (r.returncode, r.stdout) == (1, f"lat.py:1:1: io-error cannot decode file: {where}\n")
    with pytest.raises(UnicodeDecodeError) as e:
        decode_source(data)
    assert f"{e.value.reason} at byte {e.value.start}" == where


def test_undecodable_dependency_says_where(seed):
    # the module a judged read depends on has a latin-1 byte in its first line
    q2 = seed / MODELS / "qwen3.py"
    q2.write_bytes(b"# Copyright caf\xe9\n" + q2.read_bytes())
    r = cli("check", str(MODELS / "qwen3_vl.py"), "--no-cache", "--show-unresolved", "--output-format", "concise",
            "-q", cwd=seed)
    assert "qwen3.py: cannot decode file: invalid continuation byte at byte 15" in r.stdout, r.stdout + r.stderr


# -- 3. syntax of a newer Python ------------------------------------------------------------------

@pytest.mark.parametrize("line,what", [
    ("type Alias = int", "a `type` alias statement"),
    ("type Pair[T] = tuple[T, T]", "a `type` alias statement"),
    ("def ident[T](x: T) -> T:", "a generic function"),
    ("    async def run[T](x: T):", "a generic function"),
    ("class Box[T]:", "a generic class"),
])
def test_pep695_syntax_is_explained_on_311(line, what):
    from pp_attr_lint.textio import explain_syntax_error

    got = explain_syntax_error("invalid syntax", line, (3, 11))
    assert got.startswith(f"invalid syntax: {what}")
    assert got.endswith("is Python 3.12 syntax (PEP 695), which this Python (3.11) cannot parse; "
                        "run pp-attr-lint with Python 3.12 or later")
    assert explain_syntax_error("invalid syntax", line, (3, 12)) == "invalid syntax"


@pytest.mark.parametrize("line", ["x = = 1", "type = 3 +", "def f(:", "typed X = 1"])
def test_other_syntax_errors_are_left_alone(line):
    from pp_attr_lint.textio import explain_syntax_error

    assert explain_syntax_error("invalid syntax", line, (3, 11)) == "invalid syntax"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 parses PEP 695 syntax")
def test_pep695_in_a_dependency_says_which_python(seed):
    dep = seed / MODELS / "qwen3.py"
    dep.write_text("type Alias = int\n\n\n" + dep.read_text())
    r = cli("check", ".", "--no-cache", "--output-format", "concise", "--show-unresolved", cwd=seed)
    assert r.returncode == 1
    first = r.stdout.splitlines()[0]
    v = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert first == (f"{MODELS / 'qwen3.py'}:1:6: invalid-syntax SyntaxError: invalid syntax: a `type` alias "
                     f"statement (`type X = ...`) is Python 3.12 syntax (PEP 695), which this Python ({v}) cannot "
                     "parse; run pp-attr-lint with Python 3.12 or later")
    assert f"qwen3.py:1 does not parse: invalid syntax: a `type` alias statement" in r.stdout
    r = cli("check", ".", "--no-cache", cwd=seed)
    assert "  = help: Run pp-attr-lint with a Python that parses this file\n" in r.stdout


# -- 4. the shape of a text finding -------------------------------------------------------------

RULE_CASES = sorted(p for p in (REPO / "rules").glob("PPA*/cases/*") if p.is_dir())
STUBS = REPO / "fixtures" / "ppstub"


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """``(header, [= lines])`` of each rule finding of a text report."""
    import re

    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if re.match(r"^\S+:\d+:\d+: PPA\d+ ", line):
            out.append((line, []))
        elif out and line.startswith("  = "):
            out[-1][1].append(line)
    return out


def _assert_shape(blocks) -> None:
    for head, notes in blocks:
        whys = [n for n in notes if n.startswith("  = why: ")]
        helps = [n for n in notes if n.startswith("  = help: ")]
        assert whys, f"no `= why:` line: {head}"
        assert len(helps) == 1 and len(helps[0]) > len("  = help: ") + 10, f"not one `= help:` line: {head}\n{notes}"
        assert len(whys) + len(helps) == len(notes), notes
        for n in whys:
            assert not n[len("  = why: "):].lower().startswith("help"), f"help inside a why line: {n}"
        for n in notes:
            assert "when always" not in n and "when never" not in n, n


def test_every_finding_of_every_rule_case_has_why_and_one_help():
    r = cli("check", *map(str, RULE_CASES), "--src", str(STUBS), "--no-cache", "--extend-select", "PPA002",
            timeout=300)
    assert r.returncode == 1, r.stderr
    blocks = _blocks(r.stdout)
    assert {h.split(": ")[1].split()[0] for h, _ in blocks} >= {
        "PPA001", "PPA002", "PPA003", "PPA101", "PPA102", "PPA103", "PPA201", "PPA301"}
    _assert_shape(blocks)
    text = r.stdout
    assert "this line runs on every rank" in text and "runs when always" not in text
    assert "= why: help:" not in text
    # unfixable findings get advice too, the fixable ones the fix's message
    assert "= help: Call `DeepseekModel.__init__` (or `super().__init__(...)`), or set `self.use_mha`" in text
    assert "= help: Set `self.start_layer` in `HostPool.__init__`" in text
    assert "= help: Run this line only when is_first_rank, where `self.embed_tokens` is a real module" in text


def test_wrapper_findings_without_a_fix_get_help(seed):
    # the inner model may be None: no fix, but advice
    p = seed / MODELS / "qwen3_vl.py"
    text = p.read_text()
    assert "self.model = Qwen3LLMModel(" in text
    p.write_text(text.replace("self.model = Qwen3LLMModel(", "self.model = None if vllm_config is None else Qwen3LLMModel(", 1))
    r = cli("check", ".", "--no-cache", cwd=seed)
    assert r.returncode == 1, r.stdout + r.stderr
    blocks = _blocks(r.stdout)
    assert blocks and "[*]" not in blocks[0][0]
    _assert_shape(blocks)
    assert "  = help: Read `self.language_model.model.start_layer` where `Qwen3LLMForCausalLM.model` is not None" \
        in r.stdout
    import json

    r = cli("check", ".", "--no-cache", "--output-format", "json", cwd=seed)
    data = json.loads(r.stdout)
    assert data[0]["fix"] is None and data[0]["help"].startswith("Read `self.language_model.model.start_layer`")


# -- 5. not-judged details name the rule's own attribute ----------------------------------------

EMBED_RULE = """\
code: PPX100
name: embed-on-wrapper
summary: embed_tokens read on a wrapper that only its inner model has
attributes: [embed_tokens]
message: "`{receiver}` is a `{wrapper}`, which has no `{attr}`; read `{fixed}` (set at {where})"
attributeless_bases: [builtins.object, torch.nn.Module, typing.Protocol]
"""


def test_not_judged_detail_of_a_project_rule_names_its_attribute(seed):
    (seed / "embed.yaml").write_text(EMBED_RULE)
    (seed / "pyproject.toml").write_text('[tool.pp-attr-lint]\nrules = ["embed.yaml"]\nselect = ["PPX100"]\n')
    q2 = seed / MODELS / "qwen2.py"
    q2.write_text(q2.read_text() + "\n    def emb(self):\n        return self.model.embed_tokens\n")
    r = cli("check", ".", "--no-cache", "--show-unresolved", "--output-format", "concise", cwd=seed)
    lines = [ln for ln in r.stdout.splitlines() if "not judged" in ln and "PPX100" in ln]
    assert len(lines) == 1, r.stdout + r.stderr
    assert "start_layer" not in lines[0] and "end_layer" not in lines[0]
    assert "`Qwen2Model` has no `embed_tokens`, and whether its submodule `Qwen2Model.layers` holds one " \
           "cannot be told" in lines[0]


# -- 6. the README's paths and options: tests/test_readme.py -----------------------------------


# -- 7. audit takes check's rule selection --------------------------------------------------------

SEED = REPO / "fixtures" / "seed"


def _small_wheel(folder: Path, name: str = "tinypkg", version: str = "1.0") -> Path:
    """A wheel of the seed package (``minivllm``, one PPA001 finding) named ``NAME-VERSION``."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for p in sorted((SEED / "minivllm").rglob("*.py")):
            z.write(p, p.relative_to(SEED).as_posix())
        z.writestr(f"{name}-{version}.dist-info/top_level.txt", "minivllm\n")
        z.writestr(f"{name}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")
    return whl


@pytest.mark.parametrize("options,codes", [
    ((), ["PPA001"]),
    (("--select", "PPA001"), ["PPA001"]),
    (("--select", "PPA201"), []),
    (("--ignore", "PPA001"), []),
    (("--select", "PPA201", "--extend-select", "PPA001"), ["PPA001"]),
])
def test_audit_takes_the_rule_selection(tmp_path, monkeypatch, capsys, options, codes):
    from pp_attr_lint import audit
    from pp_attr_lint.cli import main

    cache = tmp_path / "wheels"
    _small_wheel(cache)

    def no_pip(*a, **k):
        raise AssertionError("pip must not run when the wheel is cached")

    monkeypatch.setattr(audit, "download_wheel", no_pip)
    rc = main(["audit", "tinypkg==1.0", "--cache-dir", str(cache), "--output-format", "concise", *options])
    out, err = capsys.readouterr()
    assert "auditing tinypkg-1.0-py3-none-any.whl (minivllm)" in err
    assert [ln.split(": ", 1)[1].split()[0] for ln in out.splitlines()[:-1]] == codes
    assert rc == (1 if codes else 0)


def test_audit_rejects_a_bad_selection(tmp_path, monkeypatch, capsys):
    from pp_attr_lint import audit
    from pp_attr_lint.cli import main

    cache = tmp_path / "wheels"
    _small_wheel(cache)
    monkeypatch.setattr(audit, "download_wheel", lambda *a, **k: pytest.fail("no pip"))
    rc = main(["audit", "tinypkg==1.0", "--cache-dir", str(cache), "--select", "PPX999"])
    assert rc == 2 and "unknown rule code or prefix `PPX999`" in capsys.readouterr().err


# -- 8. audit of a package that has only a source distribution ----------------------------------

BACKEND = '''\
"""A PEP 517 backend that only writes metadata (pip prepares it for `pip download`)."""
import os


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, "tinysrc-1.0.dist-info")
    os.makedirs(d)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: tinysrc\\nVersion: 1.0\\n")
    return "tinysrc-1.0.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("audit must not build the package")
'''


def _local_sdist_index(folder: Path) -> Path:
    """``folder/tinysrc-1.0.tar.gz``: the seed package (one PPA001 finding) under ``src/``, a
    ``tests/`` package beside it, and a build backend that needs nothing (so pip prepares the
    metadata offline)."""
    import io
    import tarfile

    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / "tinysrc-1.0.tar.gz"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": BACKEND,
        "PKG-INFO": "Metadata-Version: 2.1\nName: tinysrc\nVersion: 1.0\n",
        "tests/__init__.py": "",
        "tests/test_it.py": "def test():\n    assert x.start_layer\n",
    }
    for p in sorted((SEED / "minivllm").rglob("*.py")):
        files["src/" + p.relative_to(SEED).as_posix()] = p.read_text()
    with tarfile.open(sdist, "w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"tinysrc-1.0/{name}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return sdist


def test_download_wheel_takes_pip_options_and_the_sdist_is_downloaded(tmp_path):
    from pp_attr_lint import audit

    index = tmp_path / "index"
    _local_sdist_index(index)
    local = ("--no-index", "--find-links", str(index))
    with pytest.raises(audit.AuditError, match=r"offline, or no such version\?"):
        audit.download_wheel("tinysrc==1.0", tmp_path / "c", local)  # there is no wheel
    got = audit.download("tinysrc==1.0", tmp_path / "c", local)
    assert got == tmp_path / "c" / "tinysrc-1.0.tar.gz" and got.is_file()
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["tinysrc-1.0.tar.gz"]  # no temporary folder left
    folder, pkgs = audit.unpack(got, tmp_path / "c" / "src")
    assert pkgs == ["minivllm"]
    assert (folder / MODELS / "qwen3_vl.py").is_file()
    assert not (folder / "tests").exists() and not (folder / "backend.py").exists()
    assert audit.cached_wheel("tinysrc==1.0", tmp_path / "c") == got


def test_audit_of_an_sdist_only_package(tmp_path, monkeypatch, capsys):
    from pp_attr_lint import audit
    from pp_attr_lint.cli import main

    index = tmp_path / "index"
    _local_sdist_index(index)
    monkeypatch.setattr(audit, "PIP_OPTIONS", ("--no-index", "--find-links", str(index)))
    cache = tmp_path / "c"
    rc = main(["audit", "tinysrc==1.0", "--cache-dir", str(cache), "--output-format", "concise"])
    out, err = capsys.readouterr()
    assert rc == 1, err
    assert [ln.split(": ")[0] for ln in out.splitlines()[:-1]] == [f"{MODELS / 'qwen3_vl.py'}:29:20"]
    assert ("pp-attr-lint: no wheel of `tinysrc==1.0` found: checking its source distribution tinysrc-1.0.tar.gz "
            "(its Python files unpacked, nothing built)") in err
    assert "auditing tinysrc-1.0.tar.gz (minivllm)" in err
    # the next run reuses the sdist: pip does not run
    monkeypatch.setattr(audit, "_pip_download", lambda *a, **k: pytest.fail("pip must not run"))
    assert main(["audit", "tinysrc==1.0", "--cache-dir", str(cache), "--output-format", "concise"]) == 1


def test_broken_files_get_help_too(seed):
    m = seed / MODELS
    (m / "broken.py").write_text("x = a.start_layer +\n")
    (m / "latin.py").write_bytes(b"# caf\xe9\ny = a.start_layer\n")
    r = cli("check", ".", "--no-cache", cwd=seed)
    assert r.returncode == 1
    text = r.stdout
    assert ("invalid-syntax SyntaxError: invalid syntax\n"
            "  = help: Fix the syntax error; the reads that depend on this file are not judged until it parses\n") in text
    assert ("io-error cannot decode file: invalid continuation byte at byte 5\n"
            "  = help: Save the file as UTF-8, or declare its encoding in a coding line") in text

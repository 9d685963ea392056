"""Adopting the linter on a tree that already has findings: PR mode (``--baseline-commit``),
``--add-noqa``, ``# noqa`` prefixes and unknown codes, SARIF fingerprints.

The trees are the seed package (``fixtures/seed``: one PPA001 finding at qwen3_vl.py:29) in
throwaway git repositories; the vLLM 0.32.0 measurements are in ``test_adoption_real.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, run_cli
from pp_attr_lint import noqa

SEED = FIXTURES / "seed" / "minivllm"
VL = Path("vllm") / "model_executor" / "models" / "qwen3_vl.py"
BUG = "assert self.language_model.start_layer >= len("


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                       cwd=cwd, capture_output=True, text=True, check=True)
    return r.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository whose ``main`` holds the seed package as ``vllm/`` (one finding), with a
    branch ``pr`` checked out."""
    root = tmp_path / "repo"
    shutil.copytree(SEED, root / "vllm", ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "pr")
    return root


def edit(root: Path, rel: Path, old: str, new: str, count: int = 1) -> None:
    p = root / rel
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, count))


def check(root: Path, *args: str):
    return run_cli("check", "--no-cache", "--python", "none", "--output-format", "json", *args, cwd=root)


def rows(r) -> list[tuple[str, int, str]]:
    return [(Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in r.json()]


# -- PR mode ---------------------------------------------------------------------------------------

def test_old_finding_under_added_and_edited_lines_is_not_new(repo):
    edit(repo, VL, '"""The seed bug', '# a new first line\nimport os\n"""The seed bug')
    edit(repo, VL, 'config = vllm_config.hf_config', 'config = vllm_config.hf_config  # edited')
    edit(repo, VL, "        super().__init__()\n", "        super().__init__()\n        x = 1\n")
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 0, r.stderr
    assert r.json() == []
    assert "0 new findings; 1 that main already has not shown" in r.stderr
    # the same tree without PR mode still has it, three lines down
    plain = check(repo, "vllm")
    assert plain.rc == 1 and rows(plain) == [("qwen3_vl.py", 32, "PPA001")]


def test_a_new_finding_is_reported_alone(repo):
    # a second class with the same bug: same line text, other enclosing class
    text = (repo / VL).read_text()
    start = text.index("class Qwen3VLForConditionalGeneration")
    end = text.index("    def layer_range")
    (repo / VL).write_text(text + "\n\n" + text[start:end].replace("Qwen3VLForConditionalGeneration", "Other"))
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 1, r.stderr
    [(name, row, code)] = rows(r)
    assert (name, code) == ("qwen3_vl.py", "PPA001")
    assert (repo / VL).read_text().splitlines()[row - 1].strip() == BUG and row > 36
    assert "1 new finding; 1 that main already has not shown" in r.stderr


def test_a_duplicate_of_an_old_line_in_the_same_function_is_new(repo):
    edit(repo, VL, "            ), \"start_layer should be greater than or equal to len(deepstack_visual_indexes)\"\n",
         "            ), \"start_layer should be greater than or equal to len(deepstack_visual_indexes)\"\n"
         f"            {BUG}\n                config.vision_config.deepstack_visual_indexes\n            )\n")
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 1 and len(r.json()) == 1  # two findings, one of them main's


def test_a_renamed_file_keeps_its_old_findings(repo):
    new = VL.with_name("qwen3_vl_renamed.py")
    git(repo, "mv", str(VL), str(new))
    edit(repo, new, '"""The seed bug', '# moved\n"""The seed bug')
    git(repo, "commit", "-qam", "rename")
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 0 and r.json() == [], r.stderr
    # without the rename, the same text in a new file is new
    git(repo, "checkout", "-q", "main")
    shutil.copy(repo / VL, repo / new)
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert rows(r) == [("qwen3_vl_renamed.py", 29, "PPA001")]


def test_a_moved_method_is_not_new(repo):
    text = (repo / VL).read_text()
    start = text.index("    def __init__(self, *, vllm_config, prefix=\"model\")")
    end = text.index("    def layer_range")
    init = text[start:end]
    (repo / VL).write_text(text[:start] + text[end:] + "\n" + init)
    r = check(repo, "--baseline-commit", "main", "vllm")
    assert r.rc == 0 and r.json() == [], r.stderr


def test_pr_mode_keeps_the_not_judged_line(repo):
    (repo / "vllm" / "model_executor" / "models" / "plug.py").write_text(
        "from nosuchpkg.models import Outer\n\n\nclass Plug(Outer):\n    def f(self):\n"
        "        return self.language_model.start_layer\n")
    git(repo, "add", "-A")
    r = run_cli("check", "--no-cache", "--python", "none", "--baseline-commit", "main", "vllm", cwd=repo)
    assert r.rc == 0, r.stderr
    assert "All checks passed!" in r.stdout
    assert "1 read not judged (1 module-not-found)" in r.stdout


def test_pr_mode_from_a_subfolder_and_on_one_file(repo):
    edit(repo, VL, '"""The seed bug', '# x\n"""The seed bug')
    models = repo / VL.parent
    r = run_cli("check", "--no-cache", "--python", "none", "--baseline-commit", "main", "qwen3_vl.py", cwd=models)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_cli("check", "--no-cache", "--python", "none", "--baseline-commit", "HEAD", str(repo / VL), cwd=repo.parent)
    assert r.rc == 0, r.stdout + r.stderr


def test_pr_mode_on_a_file_the_commit_lacks(repo):
    new = repo / VL.with_name("new_model.py")
    new.write_text((repo / VL).read_text())
    r = check(repo, "--baseline-commit", "main", str(new.relative_to(repo)))
    assert r.rc == 1 and rows(r) == [("new_model.py", 29, "PPA001")]


@pytest.mark.parametrize("ref,where,message", [
    ("no-such-ref", "repo", "`no-such-ref` is not a commit of the repository at"),
    ("main", "plain", "is not in a git repository"),
])
def test_pr_mode_errors_exit_2(repo, tmp_path, ref, where, message):
    cwd = repo
    if where == "plain":
        cwd = tmp_path / "plain"
        shutil.copytree(SEED, cwd / "vllm", ignore=shutil.ignore_patterns("*.fixed", "__pycache__"))
    r = check(cwd, "--baseline-commit", ref, "vllm")
    assert r.rc == 2 and r.stdout == ""
    assert r.stderr.startswith("pp-attr-lint: error: --baseline-commit: ") and message in r.stderr


@pytest.mark.parametrize("flags,message", [
    (("--baseline-commit", "main", "--fix"), "--baseline-commit cannot be combined with --fix"),
    (("--baseline-commit", "main", "--diff"), "--baseline-commit cannot be combined with --diff"),
    (("--add-noqa", "--fix"), "--add-noqa cannot be combined with --fix"),
    (("--add-noqa", "--baseline-commit", "main"), "--add-noqa cannot be combined with --baseline-commit"),
])
def test_conflicting_options(repo, flags, message):
    before = (repo / VL).read_bytes()
    r = check(repo, *flags, "vllm")
    assert r.rc == 2 and message in r.stderr
    assert (repo / VL).read_bytes() == before


# -- SARIF fingerprints ----------------------------------------------------------------------------

def sarif(root: Path, *args: str) -> dict:
    r = run_cli("check", "--no-cache", "--python", "none", "--output-format", "sarif", *args, "vllm", cwd=root)
    assert r.rc in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_sarif_fingerprints_follow_moved_lines(repo):
    before = sarif(repo)
    run = before["runs"][0]
    assert run["tool"]["driver"]["informationUri"].startswith("https://")
    [res] = run["results"]
    fp = res["partialFingerprints"]["ppAttrLint/v1"]
    edit(repo, VL, '"""The seed bug', '# one\n# two\n"""The seed bug')
    [moved] = sarif(repo)["runs"][0]["results"]
    assert moved["locations"][0]["physicalLocation"]["region"]["startLine"] == 31
    assert moved["partialFingerprints"] == res["partialFingerprints"]
    edit(repo, VL, BUG, BUG.replace(">=", ">"))
    [changed] = sarif(repo)["runs"][0]["results"]
    assert changed["partialFingerprints"]["ppAttrLint/v1"] != fp


# -- # noqa codes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("comment,suppressed", [
    ("# noqa: PPA", True),
    ("# noqa: PPA0", True),
    ("# noqa: PPA00", True),
    ("# noqa: ppa0", True),
    ("# noqa: PPA1", False),
    ("# noqa: PPA10", False),
    ("# noqa: E501 PPA001", True),
    ("# noqa: E501,PPA0", True),
    ("# noqa: PPA001  (the reason)", True),
])
def test_noqa_prefixes_select_their_rules(repo, comment, suppressed):
    edit(repo, VL, BUG, f"{BUG}  {comment}")
    r = check(repo, "vllm")
    assert rows(r) == ([] if suppressed else [("qwen3_vl.py", 29, "PPA001")])
    assert "unknown code" not in r.stderr


@pytest.mark.parametrize("comment,unknown", [
    ("# noqa: PPA999", ["PPA999"]),
    ("# noqa: PPA9", ["PPA9"]),
    ("# noqa: E501, PPA999, PPA001", ["PPA999"]),
    ("# noqa: E501, F401, XYZ", []),  # other linters' codes
    ("# noqa", []),
])
def test_unknown_noqa_codes_are_warned_about(repo, comment, unknown):
    edit(repo, VL, BUG, f"{BUG}  {comment}")
    other = repo / "vllm" / "model_executor" / "models" / "utils.py"
    other.write_text(other.read_text() + "\nx = 1  # noqa: PPA5\ns = '# noqa: PPA777'\n")
    r = check(repo, "vllm")
    want = [f"pp-attr-lint: warning: {VL}:29: unknown code in noqa: {c}" for c in unknown]
    want.append(f"pp-attr-lint: warning: {other.relative_to(repo)}:{len(other.read_text().splitlines()) - 1}: "
                "unknown code in noqa: PPA5")
    got = [ln for ln in r.stderr.splitlines() if "unknown code in noqa" in ln]
    assert sorted(got) == sorted(want)
    # an unknown code suppresses nothing; the warning comes again from the cached run
    assert bool(rows(r)) == (comment != "# noqa" and "PPA001" not in comment)
    for _ in range(2):  # the run that fills the cache, then the one replayed from it
        cached = run_cli("check", "--python", "none", "vllm", "--cache-dir", str(repo.parent / "cache"), cwd=repo)
        assert sorted(ln for ln in cached.stderr.splitlines() if "unknown code" in ln) == sorted(got)


def test_noqa_where_no_comment_can_go():
    """A line that ends inside a multi-line string or a backslash continuation takes its noqa on
    the line where that ends; reader and writer agree, and the tree is unchanged."""
    text = ('x = a.b + len("""\none\n""")\n'
            "y = a.c + \\\n    d\n"
            's = "# noqa: PPA001"; z = a.d\n'
            "w = f'''{a.e}\n'''\n")
    assert noqa.comment_rows(text) == {1: 3, 2: 3, 4: 5, 7: 8}
    new, n = noqa.add_noqa(text, {1: {"PPA001"}, 4: {"PPA101"}, 6: {"PPA002"}, 7: {"PPA003"}})
    new, n2 = noqa.add_noqa(new, {6: {"PPA003", "PPA002"}})  # merged into the comment added
    lines = new.splitlines()
    assert lines[2] == '""")  # noqa: PPA001'
    assert lines[4] == "    d  # noqa: PPA101"
    assert lines[5] == 's = "# noqa: PPA001"; z = a.d  # noqa: PPA002, PPA003'
    assert lines[7] == "\'\'\'  # noqa: PPA003" and (n, n2) == (4, 1)
    for row, code in ((1, "PPA001"), (2, "PPA001"), (4, "PPA101"), (6, "PPA002"), (7, "PPA003")):
        assert noqa.suppressed(new, row, code)
    assert not noqa.suppressed(new, 6, "PPA101") and not noqa.suppressed(text, 6, "PPA001")
    import ast

    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(text))
    assert noqa.add_noqa(new, {1: {"PPA001"}, 4: {"PPA101"}}) == (new, 0)


def test_noqa_for_a_read_inside_a_multi_line_f_string():
    text = "w = f'''\n{a.e}\n'''\nv = a.f\n"
    new, n = noqa.add_noqa(text, {2: {"PPA002"}, 4: {"PPA001"}})
    assert new == "w = f'''\n{a.e}\n'''  # noqa: PPA002\nv = a.f  # noqa: PPA001\n" and n == 2
    assert noqa.suppressed(new, 2, "PPA002") and noqa.suppressed(new, 4, "PPA001")
    assert not noqa.could_be_suppressed("x = a.b\ny = 1  # noqa\n", 1)


def test_noqa_lines_are_the_tokenizers():
    """A form feed inside a line (``str.splitlines`` would split there) does not shift the line
    the comment goes on."""
    text = "a = 1\x0c  # page\nb = x.y\n"
    new, n = noqa.add_noqa(text, {2: {"PPA001"}})
    assert new == "a = 1\x0c  # page\nb = x.y  # noqa: PPA001\n" and n == 1
    assert noqa.suppressed(new, 2, "PPA001")


# -- --add-noqa ------------------------------------------------------------------------------------

def test_add_noqa_marks_every_finding_and_changes_nothing_else(repo):
    # an existing noqa of another linter, another comment, CRLF line endings in one file
    edit(repo, VL, BUG, BUG + "  # noqa: E501  (long)")
    crlf = repo / "vllm" / "model_executor" / "models" / "crlf.py"
    body = (repo / VL).read_text().replace(BUG + "  # noqa: E501  (long)", BUG + "  # keep me")
    crlf.write_bytes(body.replace("\n", "\r\n").encode())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two findings")
    before = {p: p.read_bytes() for p in (repo / "vllm").rglob("*.py")}
    r = run_cli("check", "--no-cache", "--python", "none", "--add-noqa", "vllm", cwd=repo)
    assert r.rc == 0, r.stderr
    assert "Added 2 noqa directives." in r.stderr
    after = {p: p.read_bytes() for p in before}
    changed = {p for p in before if before[p] != after[p]}
    assert changed == {repo / VL, crlf}
    assert (repo / VL).read_text().count(BUG + "  # noqa: E501, PPA001  (long)") == 1
    assert crlf.read_bytes().count((BUG + "  # keep me  # noqa: PPA001\r\n").encode()) == 1
    for p in changed:  # every changed line only got a comment appended
        old, new = before[p].splitlines(keepends=True), after[p].splitlines(keepends=True)
        assert len(old) == len(new)
        diff = [(a, b) for a, b in zip(old, new) if a != b]
        assert len(diff) == 1
        a, b = diff[0]
        ending = a[len(a.rstrip(b"\r\n")):]
        assert b.endswith(ending)
        core_a, core_b = a[:len(a) - len(ending)], b[:len(b) - len(ending)]
        assert core_b.replace(b", PPA001", b"").replace(b"  # noqa: PPA001", b"") == core_a
    assert check(repo, "vllm").json() == []
    again = run_cli("check", "--no-cache", "--python", "none", "--add-noqa", "vllm", cwd=repo)
    assert again.rc == 0 and "Added 0 noqa directives." in again.stderr
    assert {p: p.read_bytes() for p in before} == after


def test_add_noqa_leaves_a_file_it_cannot_parse(repo):
    bad = repo / "vllm" / "model_executor" / "models" / "bad.py"
    bad.write_text("def broken(:\n")
    r = run_cli("check", "--no-cache", "--python", "none", "--add-noqa", "vllm", str(bad.relative_to(repo)), cwd=repo)
    assert r.rc == 1, r.stderr
    assert "invalid-syntax" in r.stdout and "no `# noqa` can suppress it" in r.stdout
    assert bad.read_text() == "def broken(:\n"
    assert "Added 1 noqa directive." in r.stderr

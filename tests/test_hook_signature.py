"""PPA201's signature kind: a hook assigned a callable the model runner's call does not bind."""

from __future__ import annotations

import shutil
import json
from pathlib import Path

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"
CASE = REPO / "rules" / "PPA201" / "cases" / "hook_signature"

BUILT = '''

class BuiltForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.talker = ThinkerModel(config) if config.model_stage == "talker" else None
        self.make_empty_intermediate_tensors = (
            self.talker.make_empty_intermediate_tensors if self.talker is not None else lambda: None
        )
'''


def _check(root: Path, *src: Path):
    args = [a for s in src for a in ("--src", s)]
    r = run_cli("check", ".", *args, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA201", cwd=root)
    assert r.rc in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)  # the findings and the reads not judged


def test_a_callable_picked_by_a_test_of_what_init_built_is_not_judged(tmp_path):
    root = tmp_path / "case"
    shutil.copytree(CASE, root)
    (root / "pkg" / "omni.py").write_text((root / "pkg" / "omni.py").read_text() + BUILT)
    got = _check(root, STUBS)
    line = 1 + (root / "pkg" / "omni.py").read_text().splitlines().index(
        "            self.talker.make_empty_intermediate_tensors if self.talker is not None else lambda: None")
    unjudged = [r for r in got if r.get("reason") and r["location"]["row"] == line]
    assert [r.get("reason") for r in unjudged] == ["branch-unread"], got


def test_no_runner_call_in_the_tree_is_not_judged(tmp_path):
    stubs = tmp_path / "stubs"
    shutil.copytree(STUBS, stubs)
    (stubs / "vllm" / "v1" / "worker" / "gpu_model_runner.py").write_text("def receive_buffers(model):\n    pass\n")
    root = tmp_path / "case"
    shutil.copytree(CASE, root)
    got = _check(root, stubs)
    assert {r["location"]["row"]: r.get("reason") for r in got if r.get("reason")} == {
        24: "engine-fact-unknown", 35: "engine-fact-unknown", 52: "engine-fact-unknown", 77: "engine-fact-unknown"}, got


FLOW = '''

class HandlerForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        try:
            self.make_empty_intermediate_tensors = config.inner.make_empty_intermediate_tensors
        except AttributeError:
            self.make_empty_intermediate_tensors = lambda: None  # handler


class NeverForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = ThinkerModel(config).make_empty_intermediate_tensors
        if False:
            self.make_empty_intermediate_tensors = lambda: None  # never


class AfterReturnForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.make_empty_intermediate_tensors = ThinkerModel(config).make_empty_intermediate_tensors
        return
        self.make_empty_intermediate_tensors = lambda: None  # unreached


class BuiltTestForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.talker = ThinkerModel(config) if config.model_stage == "talker" else None
        if self.talker is not None and config.model_stage == "talker":
            self.make_empty_intermediate_tensors = self.talker.make_empty_intermediate_tensors
            return
        self.make_empty_intermediate_tensors = lambda: None  # built


class EitherStageForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        if config.model_stage != "thinker" or config.model_stage == "talker":
            self.make_empty_intermediate_tensors = lambda: None  # either
'''


def test_the_flow_walker_decides_which_hook_runs(tmp_path):
    """A hook in an exception handler, or after a `return` a test of what `__init__` built
    decides, is not judged (`branch-unread`); one under `if False` or after an unconditional
    `return` is never assigned and says nothing; one picked by tests of settings alone is reported."""
    root = tmp_path / "case"
    shutil.copytree(CASE, root)
    (root / "pkg" / "omni.py").write_text((root / "pkg" / "omni.py").read_text() + FLOW)
    text = (root / "pkg" / "omni.py").read_text().splitlines()
    row = {tag: 1 + next(i for i, ln in enumerate(text) if ln.endswith(f"# {tag}"))
           for tag in ("handler", "never", "unreached", "built", "either")}
    got = {r["location"]["row"]: r.get("reason") or r["code"] for r in _check(root, STUBS)}
    assert {t: got.get(r) for t, r in row.items()} == {
        "handler": "branch-unread", "never": None, "unreached": None, "built": "branch-unread",
        "either": "PPA201"}, got
    detail = next(r["detail"] for r in _check(root, STUBS) if r["location"]["row"] == row["handler"])
    assert "exception handler" in detail, detail

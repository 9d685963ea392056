"""Masking (pp_attr_lint/semantic/mask.py): a finding whose line an earlier failure of the same
model always precedes, on the same ranks, is listed as ``masked-by`` instead of reported, whatever
rules are selected; its twin without the first failure is reported (rules/PPA103/cases).

Each masking case marks its masked lines ``# masked: CODE``; the runtime oracle shows that those
lines never fail on any simulated rank (the first failure always comes first) while the line named
as the first failure fails on every rank of every pipeline size."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

import oracle
from helpers import REPO, py_files, run_cli

STUBS = REPO / "fixtures" / "ppstub"
CASE = REPO / "rules" / "PPA103" / "cases" / "masked_failures"
SERVING = REPO / "rules" / "PPA202" / "cases" / "wrapper_without_proxy"
ROUTINE = REPO / "rules" / "PPA202" / "cases" / "routine_argument"
_MASKED = re.compile(r"#\s*masked\s*:\s*(?P<code>[A-Z]+[0-9]+)\s*$")


def _masked_annotations(folder: Path) -> set[tuple[str, int, str]]:
    out = set()
    for path in py_files(folder):
        rel = path.relative_to(folder).as_posix()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _MASKED.search(line)
            if m:
                out.add((rel, i + 1, m.group("code")))
    return out


def _run(folder: Path, *select: str):
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--extend-select", "PPA202", *select, cwd=folder)
    assert r.rc in (0, 1), r.stdout + r.stderr
    masked = {(Path(d["filename"]).resolve().relative_to(folder.resolve()).as_posix(), d["location"]["row"],
               d["rule"]): d["detail"] for d in r.not_judged() if d["reason"] == "masked-by"}
    reported = {(Path(d["filename"]).resolve().relative_to(folder.resolve()).as_posix(), d["location"]["row"],
                 d["code"]) for d in r.json()}
    return masked, reported


@pytest.mark.parametrize("select", [(), ("--select", "PPA103,PPA102"), ("--select", "PPA103"),
                                    ("--select", "PPA102")], ids=["all", "placeholder", "PPA103", "PPA102"])
def test_masked_lines_are_listed_not_reported_whatever_is_selected(select):
    masked, reported = _run(CASE, *select)
    wanted = {k for k in _masked_annotations(CASE) if not select or k[2] in select[1].split(",")}
    assert set(masked) == wanted
    assert not set(masked) & reported


def test_the_masked_record_names_the_first_failure_and_the_engines_path():
    masked, _ = _run(CASE)
    loader = next(d for (rel, row, code), d in masked.items() if code == "PPA103" and "PPA402" in d)
    assert loader.startswith("model.py:69 (PPA402: the lookup `params_dict[n]` raises KeyError")
    assert ("BrokenLoaderForCausalLM.load_weights -> BrokenLoaderModel.load_weights (line 99)" in loader
            and "BrokenLoaderForCausalLM.forward -> BrokenLoaderModel.forward (line 96)" in loader)
    asserted = [d for (rel, row, code), d in masked.items() if "assert isinstance(layer, DecoderLayer)" in d]
    assert len(asserted) == 2 and all(d.startswith("model.py:129 ") for d in asserted)


def test_masked_lines_never_fail_and_the_first_failure_always_does():
    outcome = oracle.run_case(CASE)
    raising = oracle.raising_lines(outcome)
    executed = oracle.executed_lines(outcome)
    for rel, row, code in sorted(_masked_annotations(CASE)):
        assert f"{rel}:{row}" not in raising, f"masked {code} at {rel}:{row} fails on its own"
    firsts = {"pkg/model.py:69": "broken_loader", "pkg/model.py:129": "asserting"}
    for line, probe in firsts.items():
        runs = [r for r in outcome["results"] if r["probe"] == probe]
        assert runs and all(r["error"] and r["error"]["innermost"] == line for r in runs), (line, runs)
    assert "pkg/model.py:37" in executed  # the reported twin's forward runs, and fails (rule case harness)


def test_a_model_without_the_first_failure_is_reported():
    """The twins: the same forward loop and the same slot read, reported where nothing fails first."""
    masked, reported = _run(CASE)
    assert ("pkg/model.py", 37, "PPA103") in reported and ("pkg/model.py", 112, "PPA103") in reported
    assert ("pkg/model.py", 69, "PPA402") in reported


@pytest.mark.parametrize("select", [(), ("--select", "PPA101")], ids=["all", "PPA101"])
def test_a_forward_that_cannot_run_masks_the_tied_head_used_after_it(select):
    """SGLang-shaped (an older fork without the runner's `support_pp` check): the wrapper's
    `forward` takes no `pp_proxy_tensors`; PPA202 reports the call, and the tied head that only the
    last rank uses after `forward` is masked, also when PPA202 is not selected."""
    masked, reported = _run(SERVING, *select)
    assert set(masked) == _masked_annotations(SERVING)
    detail = next(iter(masked.values()))
    assert detail.startswith("mimo.py:30 (PPA202: `MiMoForCausalLM.forward` passes no `pp_proxy_tensors`")
    if not select:
        assert reported == {("mysgl/srt/models/mimo.py", 30, "PPA202")}


@pytest.mark.parametrize("folder,probe,innermost,twin", [
    (SERVING, "wrapper_without_proxy", "mysgl/srt/models/qwen2.py:25", None),
    (ROUTINE, "routine_without_proxy", "mysgl/srt/models/qwen2.py:28", "routine_with_proxy")],
    ids=["serving", "routine"])
def test_the_case_fails_where_it_says(folder, probe, innermost, twin):
    """Under the oracle the masked lines never raise, the wrapper fails on every rank after the
    first at the inner model's assert, and the twin that passes the proxies through runs."""
    outcome = oracle.run_case(folder)
    raising = oracle.raising_lines(outcome)
    for rel, row, code in sorted(_masked_annotations(folder)):
        assert f"{rel}:{row}" not in raising
    runs = [r for r in outcome["results"] if r["probe"] == probe]
    assert runs and all((r["error"] is None) == (r["rank"] == 0) for r in runs)
    assert all(r["error"]["innermost"] == innermost for r in runs if r["rank"] > 0)
    if twin is not None:
        assert all(r["error"] is None for r in outcome["results"] if r["probe"] == twin)


@pytest.mark.parametrize("select", [(), ("--select", "PPA101")], ids=["all", "PPA101"])
def test_a_submodule_handed_to_a_routine_is_followed(select):
    """The wrapper hands its language model to a module-level routine (`general_mm_embed_routine(
    language_model=self.model)`) that calls it: that call is the wrapper's call of the inner
    `forward`, which gets no `pp_proxy_tensors`; the twin that passes it through the routine's
    `**kwargs` is not reported."""
    masked, reported = _run(ROUTINE, *select)
    assert set(masked) == _masked_annotations(ROUTINE)
    detail = next(iter(masked.values()))
    assert detail.startswith("qwen2_vl.py:31 (PPA202: `Qwen2VLForConditionalGeneration.forward` passes no "
                             "`pp_proxy_tensors` to `Qwen2Model.forward`")
    if not select:
        assert reported == {("mysgl/srt/models/qwen2_vl.py", 31, "PPA202")}




TIED_RECV = """import torch.nn as nn
from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import PPMissingLayer


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = [1.0]


class ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pp_group = get_pp_group()
        self.lm_head = Head() if self.pp_group.is_last_rank else PPMissingLayer()
        if config.tie_word_embeddings:
            if self.pp_group.is_first_rank:
                self.pp_group.send([1.0], dst=self.pp_group.{dst})
            else:
                weight = self.pp_group.recv(src=self.pp_group.first_rank)
                self.lm_head.weight.copy_(weight)
"""


@pytest.mark.parametrize("dst", ["last_rank", "next_rank"])
def test_a_recv_that_nothing_answers_is_named_as_the_first_symptom(tmp_path, dst):
    """sglang-usf's tied Qwen2 head: a middle rank takes the `recv` branch, but the first rank
    sends only to the last one, so that rank hangs before the placeholder read the finding names;
    the message says so.  A send to a receiver not named by position (`next_rank`) says nothing."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text(TIED_RECV.replace("{dst}", dst))
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA101",
                cwd=tmp_path)
    found = [f for f in r.json() if f["location"]["row"] == 22]
    assert len(found) == 1 and found[0]["witness"]["ranks"].startswith("a middle")
    said = "hangs in the `recv` at line 21: the first rank sends only to the last rank" in found[0]["message"]
    assert said == (dst == "last_rank")
    assert any(e.startswith("first, on a middle pipeline-parallel rank") for e in found[0]["explanation"]) == said


RUNNER_CHECK = """import inspect


class ModelRunner:
    def __init__(self, model, pp_size):
        self.model = model
        self.support_pp = "pp_proxy_tensors" in inspect.signature(self.model.forward).parameters
        if pp_size > 1:
            assert self.support_pp, "Pipeline Parallel is not compatible with this model."


def start(model, pp_size):
    return ModelRunner(model, pp_size)
"""


def test_an_engine_that_refuses_the_model_reports_nothing(tmp_path):
    """With the runner's check (SGLang 0.5.15 and later), the wrapper never runs under PP: no PPA202,
    and nothing is masked by it (the tied head is not judged as a PP bug either)."""
    work = tmp_path / "case"
    shutil.copytree(SERVING, work, ignore=shutil.ignore_patterns("__pycache__"))
    (work / "mysgl" / "srt" / "model_executor").mkdir()
    (work / "mysgl" / "srt" / "model_executor" / "__init__.py").write_text("")
    (work / "mysgl" / "srt" / "model_executor" / "model_runner.py").write_text(RUNNER_CHECK)
    masked, reported = _run(work)
    assert not masked
    assert not {k for k in reported if k[2] == "PPA202"}


def test_a_draft_model_with_the_same_forward_is_not_judged():
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                cwd=SERVING)
    got = [(Path(d["filename"]).name, d["location"]["row"], d["rule"], d["reason"]) for d in r.not_judged()
           if d["rule"] == "PPA202"]
    assert got == [("mimo_mtp.py", 16, "PPA202", "engine-fact-unknown")]
    assert not [f for f in r.json() if Path(f["filename"]).name == "mimo_mtp.py"]


def test_a_finding_carries_the_engines_path_to_its_line():
    """Verdicts with a path (semantic/entry.py engine_path): the entry class the registry loads, the
    engine's call and the calls down to the line, as the last `= why:` line."""
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", cwd=CASE)
    why = {(f["location"]["row"], f["code"]): f["explanation"][-1] for f in r.json()}
    assert why[(37, "PPA103")] == ("path: the engine calls `SkippingForCausalLM.forward` (serving, on every rank) -> "
                                   "`self.model(...)` runs the submodule's `forward` (line 83) -> "
                                   "`SkippingModel.forward` -> line 37")
    assert why[(69, "PPA402")] == ("path: the engine calls `BrokenLoaderForCausalLM.load_weights` (weight loading, on "
                                   "every rank) -> `self.model.load_weights(...)` (line 99) -> "
                                   "`BrokenLoaderModel.load_weights` -> line 69")
    assert why[(112, "PPA103")] == ("path: the engine calls `ReadingForCausalLM.__init__` (construction, on every "
                                    "rank) -> line 112")


def test_a_path_names_the_test_a_call_runs_under(tmp_path):
    """A call on the path that runs only under a configuration test names that test: the loop of
    a requantizer that the loader calls only for one checkpoint format (SGLang's
    `_weight_requant_ue8m0` under `DEEPGEMM_SCALE_UE8M0`) is not a failure of every deployment."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def register():\n    from vllm import ModelRegistry\n\n"
                                     "    ModelRegistry.register_model(\"RequantForCausalLM\", "
                                     "\"pkg.model:RequantForCausalLM\")\n")
    (pkg / "model.py").write_text(textwrap.dedent("""\
        import torch.nn as nn
        from vllm.model_executor.models.interfaces import SupportsPP
        from vllm.model_executor.models.utils import make_layers


        class DecoderLayer(nn.Module):
            def __init__(self, prefix=""):
                super().__init__()
                self.mlp = nn.Linear(1, 1)


        class RequantForCausalLM(nn.Module, SupportsPP):
            def __init__(self, config, prefix=""):
                super().__init__()
                self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))
                self.make_empty_intermediate_tensors = None

            def load_weights(self, weights):
                if self.config.scale_ue8m0:
                    self._requant()

            def _requant(self):
                for layer in self.layers:
                    layer.mlp.weight.data.mul_(2)
        """))
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--select", "PPA103",
                cwd=tmp_path)
    why = {(f["location"]["row"], f["code"]): f["explanation"][-1] for f in r.json()}
    assert why[(24, "PPA103")] == ("path: the engine calls `RequantForCausalLM.load_weights` (weight loading, on every "
                                   "rank) -> `self._requant(...)` (line 20, when scale_ue8m0) -> "
                                   "`RequantForCausalLM._requant` -> line 24"), why

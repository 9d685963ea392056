"""PPA402: a lookup whose key is computed by a method no class of the analysed tree defines."""

from __future__ import annotations

import json
import shutil

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"
CASE = REPO / "rules" / "PPA402" / "cases" / "checkpoint_names"


def _check(root):
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA402", cwd=root)
    assert r.rc in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)  # the findings and the reads not judged


def test_a_key_from_a_quant_method_no_class_defines_is_masked(tmp_path):
    """vLLM 0.30.0 has no ``get_cache_scale``: ``self.quant_config.get_cache_scale(name)`` raises
    AttributeError on every rank before ``params_dict[scale_name]`` is reached."""
    root = tmp_path / "case"
    shutil.copytree(CASE, root)
    model = root / "pkg" / "model.py"
    text = model.read_text()
    model.write_text(text.replace("    def get_cache_scale(self, name):", "    def cache_scale_of(self, name):"))
    row = 1 + text.splitlines().index("                param = params_dict[scale_name]")
    before = {(r["location"]["row"], r.get("code"), r.get("reason")) for r in _check(CASE)}
    after = {(r["location"]["row"], r.get("code"), r.get("reason")) for r in _check(root)}
    assert (row, "PPA402", None) in before
    assert (row, None, "masked-by") in after and (row, "PPA402", None) not in after, after


def test_a_loader_that_decides_on_the_rank_in_a_way_not_read_is_not_judged(tmp_path):
    """A loader that names the stage's layer range (``self.model.start_layer`` under an always
    false ``hasattr``, SGLang-kt's OPT) is listed as not judged, not passed in silence."""
    case = REPO / "rules" / "PPA402" / "cases" / "joined_tests"
    root = tmp_path / "case"
    shutil.copytree(case, root)
    model = root / "pkg" / "model.py"
    text = model.read_text()
    skip = ("            if hasattr(self, \"first_layer\") and self.start_layer > 0:\n"
            "                continue\n")
    anchor = "            # skip loading extra bias for GPTQ models: every other name goes on\n"
    model.write_text(text.replace(anchor, skip + anchor, 1))
    row = 2 + text.splitlines().index("            # ruleid: PPA402")
    got = {(r["location"]["row"], r.get("code"), r.get("reason")) for r in _check(root)}
    assert (row + 2, None, "stage-guard") in got and (row + 2, "PPA402", None) not in got, got


def test_a_helper_handed_the_dict_counts_as_a_test_only_when_its_body_tests_what_it_returns():
    """``name = helper(name, params_dict)`` covers the lookup when the helper tests every name it
    returns (a module function, a method); one that returns a name untested does not (the
    finding says where); one the run cannot resolve leaves the lookup not judged."""
    case = REPO / "rules" / "PPA402" / "cases" / "remap_helpers"
    text = (case / "pkg" / "model.py").read_text().splitlines()
    rows = [i + 2 for i, line in enumerate(text) if line.strip() in ("# ruleid: PPA402", "# ok: PPA402")]
    got = {(r["location"]["row"], r.get("code"), r.get("reason")) for r in _check(case)}
    assert got == {(rows[0], "PPA402", None), (rows[-1], None, "callee-unread")}, got
    finding = next(r for r in _check(case) if r.get("code") == "PPA402")
    assert any("remap_kv_scale_name(...)" in e and "returns `name` without a test" in e
               for e in finding["explanation"]), finding

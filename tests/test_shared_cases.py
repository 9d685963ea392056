"""The outside check: the reproducers of public pipeline-parallel bugs and their correct
look-alikes in ``../shared/cases`` (a folder beside the checkout, absent on a user's clone).

Each case is linted as its ``check.py`` does (``check --no-cache --output-format json CASE``) and
compared with the case's line of ``EXPECTED`` (or of a later batch's ``EXPECTED-contract``,
``EXPECTED-stage``): every expected finding (one of its ``|`` alternatives) is reported and
nothing else is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import REPO, run_cli

SHARED = Path(os.environ.get("PP_ATTR_LINT_SHARED_CASES", REPO.parent / "shared" / "cases"))


BATCHES = ("EXPECTED", "EXPECTED-contract", "EXPECTED-stage")


def _expected() -> list[tuple[str, list[set[str]]]]:
    out = []
    for batch in BATCHES:
        if not (SHARED / batch).is_file():
            continue
        for line in (SHARED / batch).read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            case, _, want = line.partition(":")
            out.append((case.strip(), [{g.strip() for g in item.split("|")} for item in want.split(";")
                                       if item.strip()]))
    return out


CASES = _expected()


@pytest.mark.skipif(not CASES, reason=f"the shared reproducers are not at {SHARED} (set PP_ATTR_LINT_SHARED_CASES)")
@pytest.mark.parametrize("case,groups", CASES, ids=[c for c, _ in CASES] or None)
def test_shared_case(case: str, groups: list[set[str]]):
    root = SHARED / case
    r = run_cli("check", "--no-cache", "--output-format", "json", root, cwd=REPO)
    assert r.rc in (0, 1), r.stderr
    found = {f"{Path(f['filename']).resolve().relative_to(root.resolve()).as_posix()}:{f['location']['row']}"
             for f in r.json()}
    missing = [sorted(g)[0] for g in groups if not g & found]
    extra = sorted(found - set().union(*groups)) if groups else sorted(found)
    assert not missing and not extra, f"missing {missing}, extra {extra}\n{r.stdout}"

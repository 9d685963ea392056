"""PPA407 and PPA408 take each line's guard from the shared flow walker
(``semantic.flow.FunctionGuards``): every spelling of the same rank test gives the same verdict,
and a test of global rank 0 held in a local flag is still read as the first rank."""

from __future__ import annotations

import ast
import textwrap

import pytest

from pp_attr_lint.index.spec import LineIndex
from pp_attr_lint.rule_registry import all_rules


def _collect(code: str, src: str) -> list:
    rule = next(r for r in all_rules() if r.code == code)
    return rule.collect(ast.parse(src), LineIndex(src)) or []


RUNNER = """\
from vllm.sequence import IntermediateTensors


class Runner:
    def _unpack(self, out):
        if isinstance(out, torch.Tensor):
            return out
        raise TypeError(type(out))

    def step(self, x):
        out = self.model(x)
{body}
"""

# the helper call runs only on the last rank: no finding, whatever the spelling
LAST_ONLY = {
    "early return": """
            if not get_pp_group().is_last_rank:
                return out
            return self._unpack(out)""",
    "conditional expression": """
            return self._unpack(out) if get_pp_group().is_last_rank else out""",
    "and": """
            return get_pp_group().is_last_rank and self._unpack(out)""",
    "assert": """
            assert get_pp_group().is_last_rank
            return self._unpack(out)""",
    "local flag": """
            last = get_pp_group().is_last_rank
            if not last:
                return out
            return self._unpack(out)""",
    "else returns": """
            if get_pp_group().is_last_rank:
                pass
            else:
                return out
            return self._unpack(out)""",
}


def _runner(body: str) -> str:
    return RUNNER.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))


@pytest.mark.parametrize("spelling", LAST_ONLY)
def test_ppa407_is_silent_when_only_the_last_rank_unpacks(spelling):
    assert _collect("PPA407", _runner(LAST_ONLY[spelling])) == []


@pytest.mark.parametrize("body, line", [
    ("""
        if get_pp_group().is_last_rank:
            print(out)
        return self._unpack(out)""", 15),
    ("""
        try:
            self.log(out.sum())
        except AttributeError:
            return self._unpack(out)
        if get_pp_group().is_last_rank:
            return out""", 16),
])
def test_ppa407_reports_a_call_that_a_non_last_rank_reaches(body, line):
    """Unguarded, or in a handler that runs where the output has no ``sum`` (an
    ``IntermediateTensors``, on a rank before the last)."""
    got = _collect("PPA407", _runner(body))
    assert [(r[1], r[2], r[4]) for r in got] == [("step", "_unpack", line)]
    assert got[0][10]["@last"] is False


PROFILER = """\
class Profiler:
    def __init__(self):
        self.events = []

    def record(self, e):
{put}

    def report(self):
{read}
"""
LAST_PUTS = {
    "if": """
        if get_pp_group().is_last_rank:
            self.events.append(e)""",
    "conditional expression": """
        self.events.append(e) if get_pp_group().is_last_rank else None""",
    "and": """
        get_pp_group().is_last_rank and self.events.append(e)""",
}
FIRST_READS = {
    "early return": """
        if not dist.is_global_first_rank():
            return
        print(self.events)""",
    "local flag": """
        first = torch.distributed.get_rank() == 0
        if first:
            print(self.events)""",
}


def _profiler(put: str, read: str) -> str:
    pad = " " * 8
    return PROFILER.format(put=textwrap.indent(textwrap.dedent(put), pad),
                           read=textwrap.indent(textwrap.dedent(read), pad))


@pytest.mark.parametrize("put", LAST_PUTS)
@pytest.mark.parametrize("read", FIRST_READS)
def test_ppa408_reads_every_spelling_of_the_two_ranks(put, read):
    got = _collect("PPA408", _profiler(LAST_PUTS[put], FIRST_READS[read]))
    assert [(r[0], r[1], r[2]) for r in got] == [("Profiler", "events", "report")]
    assert "last" in got[0][8] and "first" in got[0][7], got


def test_ppa408_is_silent_when_one_rank_fills_and_reads():
    put = """
        if get_pp_group().is_first_rank:
            self.events.append(e)"""
    assert _collect("PPA408", _profiler(put, FIRST_READS["local flag"])) == []

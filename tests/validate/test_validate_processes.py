"""No stray processes: a driver whose process tree outlives it is killed (no vLLM needed)."""

from __future__ import annotations

import argparse
import stat
import time

from pp_attr_lint import validate
from pp_attr_lint.validate import runner


def _args(**kw) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    ns = parser.parse_args(["--arch", "X"])
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_driver_exit_kills_its_children(tmp_path):
    """The driver (a fake interpreter here) leaves a child behind and exits: FAIL, child gone."""
    pidfile = tmp_path / "child.pid"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    rep = runner._run_one("X", [], _args(timeout=60), str(fake), quiet=True)
    assert rep["outcome"] == "FAIL" and rep["failure"]["type"] == "EngineExited"
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def test_timeout_kills_the_tree(tmp_path):
    pidfile = tmp_path / "child.pid"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    t = time.time()
    rep = runner._run_one("X", [], _args(timeout=2), str(fake), quiet=True)
    assert time.time() - t < 30
    assert rep["outcome"] == "FAIL" and rep["timed_out"] and rep["failure"]["type"] == "Timeout"
    assert not _alive(int(pidfile.read_text()))

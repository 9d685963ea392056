"""Runtime oracle probes (tests/oracle.py)."""

from pkg.patch import apply


def patched():
    apply(1.0)


PROBES = [patched]

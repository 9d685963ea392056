"""Runtime oracle probes (tests/oracle.py): pools as the model runner builds them."""

from pkg.pools import Guarded, HostPool, HybridPool, MHAPool, Prefill


def host_mha():
    HostPool(MHAPool(16, 4))


def host_hybrid():
    HostPool(HybridPool(16))


def prefill():
    Prefill(MHAPool(16, 4))
    Prefill(HybridPool(16))


def guarded():
    Guarded(HybridPool(16), False)


PROBES = [host_mha, host_hybrid, prefill, guarded]

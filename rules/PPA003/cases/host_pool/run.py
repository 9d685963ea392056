"""Runtime oracle probes (tests/oracle.py): the cache controller's loading thread."""

from pkg.pools import HostPool, KVCache, MirroredHostPool


def load_host():
    device = KVCache(4, 2)
    device.get_key_buffer(0)
    HostPool(device).load_to_device_per_layer(device, 0)


def load_mirrored():
    device = KVCache(4, 2)
    MirroredHostPool(device).load_to_device_per_layer(device, 0)


PROBES = [load_host, load_mirrored]

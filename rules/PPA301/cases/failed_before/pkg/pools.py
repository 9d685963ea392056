class KVCache:
    def __init__(self, size, layer_num, start_layer=None, end_layer=None):
        self.size = size
        self.store_dtype = "bfloat16"
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1


class MHAPool(KVCache):
    def __init__(self, size, layer_num):
        super().__init__(size, layer_num)


class HybridPool(KVCache):
    """Never calls KVCache.__init__: neither `store_dtype` nor `end_layer`."""

    def __init__(self, size, start_layer=None):
        self.size = size
        self.start_layer = start_layer or 0


class HostPool:
    """SGLang 0.5.15's HostKVCache: with a HybridPool the `store_dtype` read raises first, so the
    `end_layer` read after it never runs with one."""

    def __init__(self, device_pool: KVCache):
        self.dtype = device_pool.store_dtype
        # ok: PPA301
        self.end_layer = device_pool.end_layer


class Prefill:
    """SGLang PR 25476's shape (shared case N09): nothing before the read fails with a HybridPool."""

    def __init__(self, device_pool: KVCache):
        self.start_layer = device_pool.start_layer
        # ruleid: PPA301
        self.end_layer = device_pool.end_layer


class Guarded:
    """The earlier read runs only on one branch: it does not come first on every path."""

    def __init__(self, device_pool: KVCache, fast: bool):
        if fast:
            self.dtype = device_pool.store_dtype
        # ruleid: PPA301
        self.end_layer = device_pool.end_layer

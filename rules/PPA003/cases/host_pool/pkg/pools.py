class KVCache:
    def __init__(self, size, layer_num, start_layer=None, end_layer=None):
        self.size = size
        self.layer_num = layer_num
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1
        self.k_buffer = [[0.0] * size for _ in range(layer_num)]

    def get_key_buffer(self, layer_id):
        # ok: PPA003
        return self.k_buffer[layer_id - self.start_layer]


class HostKVCache:
    def __init__(self, device_pool):
        self.device_pool = device_pool
        self.layer_num = device_pool.layer_num
        self.k_buffer = [[1.0] * device_pool.size for _ in range(self.layer_num)]


class HostPool(HostKVCache):
    def load_to_device_per_layer(self, device_pool, layer_id):
        # ruleid: PPA003
        local = layer_id - self.start_layer
        device_pool.k_buffer[local] = list(self.k_buffer[local])


class MirroredHostPool(HostKVCache):
    def __init__(self, device_pool):
        super().__init__(device_pool)
        self.start_layer = device_pool.start_layer

    def load_to_device_per_layer(self, device_pool, layer_id):
        # ok: PPA003
        local = layer_id - self.start_layer
        device_pool.k_buffer[local] = list(self.k_buffer[local])

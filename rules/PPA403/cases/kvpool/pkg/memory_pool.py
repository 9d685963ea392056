class MHATokenToKVPool:
    """Holds only this pipeline stage's layers; a layer is addressed by its global id."""

    def __init__(self, size, head_dim, layer_num, start_layer=0):
        self.size = size
        self.start_layer = start_layer
        self.k_buffer = [[0.0] * head_dim for _ in range(layer_num)]
        self.v_buffer = [[0.0] * head_dim for _ in range(layer_num)]

    def _get_key_buffer(self, layer_id):
        local_layer_id = layer_id - self.start_layer
        # ruleid: PPA403
        return self.k_buffer[local_layer_id]

    def get_key_buffer(self, layer_id):
        return self._get_key_buffer(layer_id)

    def get_value_buffer(self, layer_id):
        # ruleid: PPA403
        return self.v_buffer[layer_id - self.start_layer]

    def key_head_dim(self):
        # ruleid: PPA403
        return len(self.get_key_buffer(0))

    def first_key_head_dim(self):
        # ok: PPA403
        return len(self.get_key_buffer(self.start_layer))

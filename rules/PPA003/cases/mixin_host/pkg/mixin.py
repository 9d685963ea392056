class KVCacheMixin:
    """The pools of a model runner; its host sets the layer range before calling it."""

    def init_pool(self):
        # ok: PPA003
        self.pool = [0.0] * (self.end_layer - self.start_layer)
        return self.pool


class OrphanCacheMixin:
    """The same pools, mixed into a runner that never sets the range."""

    def init_pool(self):
        # ruleid: PPA003
        self.pool = [0.0] * (8 - self.start_layer)
        return self.pool

from .mixin import KVCacheMixin, OrphanCacheMixin


class Model:
    start_layer = 2
    end_layer = 4


class ModelRunner(KVCacheMixin):
    def __init__(self):
        self.model = Model()

    def initialize(self):
        self.start_layer = getattr(self.model, "start_layer", 0)
        self.end_layer = getattr(self.model, "end_layer", 8)
        return self.init_pool()


class BareRunner(OrphanCacheMixin):
    def __init__(self):
        self.model = Model()

    def initialize(self):
        return self.init_pool()

import inspect


class ModelRunner:
    """Hands the model what the rank received only when its `forward` takes it (SGLang 0.4.6
    `support_pp`), and returns what the model returns; nothing refuses a model that does not."""

    def __init__(self, model):
        self.model = model
        self.support_pp = "pp_proxy_tensors" in inspect.signature(self.model.forward).parameters

    def forward(self, batch, pp_proxy_tensors=None):
        kwargs = {}
        if self.support_pp:
            kwargs["pp_proxy_tensors"] = pp_proxy_tensors
        return self.model.forward(batch, [0, 1], **kwargs), False

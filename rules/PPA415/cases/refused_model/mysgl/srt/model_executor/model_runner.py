import inspect


class ModelRunner:
    """Refuses, under pipeline parallelism, a model whose `forward` takes no `pp_proxy_tensors`
    (SGLang 0.5.15 `support_pp`): the worker's read never meets such a model."""

    def __init__(self, model, pp_size=1):
        self.model = model
        self.support_pp = "pp_proxy_tensors" in inspect.signature(self.model.forward).parameters
        if pp_size > 1:
            assert self.support_pp, "Pipeline parallelism is not supported for this model"

    def forward(self, batch, pp_proxy_tensors=None):
        kwargs = {}
        if self.support_pp:
            kwargs["pp_proxy_tensors"] = pp_proxy_tensors
        return self.model.forward(batch, [0, 1], **kwargs), False

import torch.nn as nn

from .inner import InnerModel


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter()


class EmbeddingModel(nn.Module):
    """Looks names up in the parameters of the model it holds (SGLang 0.4.6
    `LlamaEmbeddingModel`: `dict(self.model.named_parameters())`), whose layers are this rank's
    slice."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)

    def load_weights(self, weights):
        params_dict = dict(self.model.named_parameters())
        for name, w in weights:
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class VisionLoader(nn.Module):
    """Looks names up in the parameters of a module that holds no layer list: every rank has
    them all."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)
        self.vision = Head()

    def load_weights(self, weights):
        params_dict = dict(self.vision.named_parameters())
        for name, w in weights:
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class BranchTest(nn.Module):
    """Tests the name only for some names (inside an `if` with no `else:`): the lookup after it
    is not covered for the others."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name.endswith(".g_idx"):
                if name not in params_dict:
                    continue
            # ruleid: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class ElifTest(nn.Module):
    """The test sits in an `elif`, but the branch before it skips the name: every name that
    reaches the lookup passed the test."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if name.endswith(".g_idx"):
                continue
            elif name not in params_dict:
                continue
            # ok: PPA402
            param = params_dict[name]
            param.weight_loader(param, w)


class PickedHead(nn.Module):
    """Looks up only names of a module of its own, picked by an `or` of `and` tests: not judged."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = InnerModel(config)
        self.projector = Head()

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if ("projector.lin" in name and ".weight" in name) or "projector" in name:
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)

"""The model registry of an SGLang-shaped engine (sglang/srt/models/registry.py): every module of
the models package that binds `EntryClass` is a model the engine loads. Its model runner (an older
fork's) has no check that a model's `forward` takes `pp_proxy_tensors`."""

import importlib
import pkgutil


def import_model_classes(package_name):
    out = {}
    package = importlib.import_module(package_name)
    for _, name, _ispkg in pkgutil.iter_modules(package.__path__, package_name + "."):
        module = importlib.import_module(name)
        if hasattr(module, "EntryClass"):
            out[module.EntryClass.__name__] = module.EntryClass
    return out

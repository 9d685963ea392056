"""A model runner that allocates its proxy buffers in the branches of a test of the model's config
(a dict literal per branch): `hidden_states` on every call, `residual` only for models that do not
fold it into `hidden_states`; a rank after the first gets proxies built from these buffers."""
from vllm.distributed import get_pp_group

from .forward_batch_info import PPProxyTensors


def zeros(n):
    return [0.0] * n


def allocate_pp_proxy_tensors(max_num_tokens, fold_residual=False):
    if fold_residual:
        pp_proxy_tensors = {"hidden_states": zeros(max_num_tokens)}
    else:
        pp_proxy_tensors = {"hidden_states": zeros(max_num_tokens), "residual": zeros(max_num_tokens)}
    return pp_proxy_tensors


def warm_up(model, num_tokens=2):
    """The capture / warm-up forward: proxies from the allocated buffers on ranks after the first."""
    proxy = None
    if not get_pp_group().is_first_rank:
        buffers = allocate_pp_proxy_tensors(num_tokens, fold_residual=getattr(model, "fold_residual", False))
        proxy = PPProxyTensors({k: v[:num_tokens] for k, v in buffers.items()})
    return model.forward(list(range(num_tokens)), pp_proxy_tensors=proxy)

"""The model runner's proxy buffers and warm-up (sglang/srt/model_executor/runner_utils/buffers.py
and runner/base_runner.py, paraphrased): a rank after the first gets proxies built from the
buffers allocated here, whatever the previous stage will send."""
from vllm.distributed import get_pp_group

from .forward_batch_info import PPProxyTensors


def zeros(n):
    return [0.0] * n


def allocate_pp_proxy_tensors(max_num_tokens, fold_residual=False):
    pp_proxy_tensors = {"hidden_states": zeros(max_num_tokens)}
    if not fold_residual:
        pp_proxy_tensors["residual"] = zeros(max_num_tokens)
    return pp_proxy_tensors


def warm_up(model, num_tokens=2):
    """The capture / warm-up forward: proxies from the allocated buffers on ranks after the first."""
    proxy = None
    if not get_pp_group().is_first_rank:
        buffers = allocate_pp_proxy_tensors(num_tokens)
        proxy = PPProxyTensors({k: v[:num_tokens] for k, v in buffers.items()})
    return model.forward(list(range(num_tokens)), pp_proxy_tensors=proxy)

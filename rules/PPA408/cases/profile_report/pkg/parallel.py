"""Global-rank tests as vLLM's parallel_state defines them, with one tensor-parallel rank."""

from vllm.distributed import get_pp_group


def is_global_first_rank():
    """Global rank 0: the first rank of the first pipeline stage."""
    return get_pp_group().rank_in_group == 0


def is_last_pp_first_tp_rank():
    """The first tensor-parallel rank of the last pipeline stage (PR 512's fix)."""
    return get_pp_group().is_last_rank

"""The server's checks of what runs under pipeline parallelism (SGLang's
sglang/srt/arg_groups/validation_hook.py, with EAGLE-3 allowed as a later release may)."""


def check_pipeline_parallel_compat(cfg):
    if cfg.speculative_algorithm == "DSPARK":
        assert cfg.disaggregation_mode == "prefill"
    elif cfg.speculative_algorithm is not None:
        assert cfg.speculative_algorithm.upper() == "EAGLE" or cfg.speculative_algorithm.upper() == "EAGLE3"


def check_server_args(cfg):
    if cfg.pp_size > 1:
        check_pipeline_parallel_compat(cfg)

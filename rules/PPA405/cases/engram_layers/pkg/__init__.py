"""A V4.1-style backbone that hangs a table on the layers a config list names (vllm-ascend PR 16925)."""

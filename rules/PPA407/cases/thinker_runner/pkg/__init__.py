"""A stage runner that splits the thinker output into hidden states and captures (vLLM-Omni PR 7345)."""

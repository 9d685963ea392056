"""MTP profile events collected on the last stage and reported on global rank 0 (1Cat-vLLM PR 512)."""

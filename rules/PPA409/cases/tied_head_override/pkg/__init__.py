"""A load_weights override that drops the parent's tied-head copy for the last rank (SGLang PR 21347)."""

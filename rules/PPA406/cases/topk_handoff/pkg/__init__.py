"""DSA top-k indices threaded through the layer loop (SGLang issue 28537, PR 28532), on vLLM stubs."""

def should_tie(config, quant_config):
    """Aphrodite 0.24.1's model_should_use_tied_lm_head: never ties unless the config does."""
    if not getattr(config, "tie_word_embeddings", False):
        return False
    if quant_config is None:
        return True
    has_quantized_head = False
    if getattr(quant_config, "head_bits", None):
        has_quantized_head = True
    return not has_quantized_head


def prefers_tie(config, quant_config):
    """Looks alike, but a quantization that ties its head ties even an untied config."""
    if quant_config is not None and getattr(quant_config, "tie_head", False):
        return True
    if not getattr(config, "tie_word_embeddings", False):
        return False
    return True

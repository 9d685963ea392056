class DeepVForConditionalGeneration:
    """DeepSeek-V4 vision (vLLM 0.32.0): every layer's MoE gate routes image tokens by their ids."""

    requires_raw_input_tokens = True

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if input_ids is None:
            raise ValueError("vision MoE routing requires input_ids.")
        hidden = intermediate_tensors or [float(p) for p in positions]
        return [h + t for h, t in zip(hidden, input_ids)]

from .base import VLForConditionalGeneration


class DenseForConditionalGeneration(VLForConditionalGeneration):
    """Qwen3.5 before PR 21347: its own name mapping, without the tie copy."""

    # ruleid: PPA409
    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, loaded in weights:
            name = name.replace("model.language_model.", "model.")
            if name in params:
                params[name].data = loaded


class FixedDenseForConditionalGeneration(VLForConditionalGeneration):
    """PR 21347: the override keeps the copy."""

    # ok: PPA409
    def load_weights(self, weights):
        params = dict(self.named_parameters())
        tied = self.config.tie_word_embeddings and "lm_head.weight" in params
        for name, loaded in weights:
            name = name.replace("model.language_model.", "model.")
            if tied and name == "model.embed_tokens.weight":
                params["lm_head.weight"].data = loaded
            if name in params:
                params[name].data = loaded


class RenamingForConditionalGeneration(VLForConditionalGeneration):
    """Renames and hands the rest to the parent, which keeps its branch."""

    # ok: PPA409
    def load_weights(self, weights):
        super().load_weights((name.replace("model.language_model.", "model."), w) for name, w in weights)

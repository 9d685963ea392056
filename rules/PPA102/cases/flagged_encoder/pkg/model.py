import torch.nn as nn
from vllm.model_executor.models.utils import make_layers


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.Identity()


class EncoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()


class AudioEncoder(nn.Module):
    """Splits its layers over the pipeline ranks only when asked to (vLLM's WhisperEncoder)."""

    def __init__(self, config, prefix="", enable_pp=True):
        super().__init__()
        if enable_pp:
            self.start_layer, self.end_layer, self.layers = make_layers(
                config.encoder_layers, lambda prefix: EncoderLayer(prefix))
        else:
            self.layers = nn.ModuleList([EncoderLayer() for _ in range(config.encoder_layers)])


class ChunkedAudioEncoder(AudioEncoder):
    """Every construction turns the split off (Ultravox's encoder, `enable_pp=False`)."""

    def forward(self, x):
        # ok: PPA102
        backend = self.layers[0].self_attn.attn
        return backend(x)


class SplitAudioEncoder(AudioEncoder):
    """Built with the split left on: slot 0 is a placeholder on every rank but the first."""

    def forward(self, x):
        # ruleid: PPA102
        backend = self.layers[0].self_attn.attn
        return backend(x)


class OpaqueAudioEncoder(AudioEncoder):
    """Built with the flag passed by position: which value it gets is not told by a keyword."""

    def forward(self, x):
        # ruleid: PPA102
        backend = self.layers[0].self_attn.attn
        return backend(x)


class AudioModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.chunked = ChunkedAudioEncoder(config, prefix="chunked", enable_pp=False)
        self.split = SplitAudioEncoder(config, prefix="split")
        self.opaque = OpaqueAudioEncoder(config, "opaque", True)

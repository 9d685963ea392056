"""Shrink any model config to toy sizes: the one generic mechanism of ``toy_sizes.yaml``.

Pure Python on plain dicts (a config's ``to_dict()``); imports only PyYAML, so it runs in the
linter's environment (unit tests) and in the validate environment (``toy_checkpoint.py``).
"""

from __future__ import annotations

import copy
import os
from typing import Any

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_sizes.yaml")
_INDEX_LIST_SUFFIXES = ("_layers", "_indexes", "_indices", "_layer_ids", "_layer_idx")


def load_rules(path: str = DATA_FILE) -> dict:
    """Load ``toy_sizes.yaml`` (or ``path``): ``sizes``, ``layer_keys``, ``vocab``,
    ``special_token_base``, ``families``. Raises OSError / yaml.YAMLError on a bad file and
    ValueError when a family override has no ``reason`` or a ``known_failures`` item lacks
    ``archs``, ``match`` or ``reason``."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        rules = yaml.safe_load(fh)
    for arch, fam in (rules.get("families") or {}).items():
        if not isinstance(fam, dict) or not fam.get("reason"):
            raise ValueError(f"{path}: families.{arch} needs a reason")
    for i, item in enumerate(rules.get("known_failures") or []):
        if not isinstance(item, dict) or not item.get("archs") or not item.get("match") or not item.get("reason"):
            raise ValueError(f"{path}: known_failures[{i}] needs archs, match and reason")
    rules.setdefault("families", {})
    return rules


def _is_token_key(key: str) -> bool:
    return key.endswith("_token_id") or key.endswith("_token_ids") or key in ("eos_token_id", "bos_token_id")


def shrink(cfg: dict, rules: dict, pp: int = 2) -> dict:
    """Return a copy of the config dict ``cfg`` at toy sizes.

    Inputs: ``cfg`` (``PretrainedConfig.to_dict()``, nested sub-configs as dicts), ``rules``
    (:func:`load_rules`), ``pp`` (the layer count is ``2 * pp``). At every dict level: an int
    under a key of ``rules["sizes"]`` is lowered to that value; an int under a key of
    ``rules["layer_keys"]`` becomes ``2 * pp`` (only lowered); a list as long as that level's
    old layer count is cut to the new count; a list of ints under a key ending in ``_layers``,
    ``_indexes``, ``_indices`` keeps the entries below the new count; token ids (keys ending in
    ``_token_id``) not below ``rules["vocab"]`` move to ``special_token_base + k``. A
    ``mrope_section`` is rescaled to sum to ``head_dim // 2``. Never raises for odd values:
    anything it does not recognize is kept.
    """
    out = copy.deepcopy(cfg)
    _shrink_level(out, rules, 2 * pp, parent_layers=None, head_dim=None)
    return out


def _layer_count(d: dict, rules: dict) -> int | None:
    for k in rules["layer_keys"]:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def _shrink_level(d: dict, rules: dict, layers: int, parent_layers: int | None, head_dim: int | None) -> None:
    sizes = rules["sizes"]
    vocab = int(rules["vocab"])
    base = int(rules["special_token_base"])
    old_layers = _layer_count(d, rules)
    new_layers = min(old_layers, layers) if old_layers else None
    # the level's own values first, sub-configs after (they see this level's head_dim)
    token_slot = [0]

    def token(v: int) -> int:
        if v < vocab:
            return v
        t = base + token_slot[0] % (vocab - base)
        token_slot[0] += 1
        return t

    for key in list(d):
        v = d[key]
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if key in rules["layer_keys"] and v > 0:
                d[key] = min(v, layers)
            elif key in sizes and v > int(sizes[key]):
                d[key] = int(sizes[key])
            elif _is_token_key(key) and v >= 0:
                d[key] = token(v)
        elif isinstance(v, list):
            ints = bool(v) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            if _is_token_key(key) and ints:
                d[key] = [token(x) for x in v]
            elif key in sizes and ints:  # per-layer sizes (Gemma-3n intermediate_size)
                d[key] = [min(x, int(sizes[key])) for x in v]
                if old_layers and new_layers and len(v) == old_layers:
                    d[key] = d[key][:new_layers]
            elif old_layers and new_layers and len(v) == old_layers and old_layers != new_layers:
                d[key] = v[:new_layers]
            elif (new_layers and key.endswith(_INDEX_LIST_SUFFIXES) and v
                  and all(isinstance(x, int) and not isinstance(x, bool) for x in v)):
                d[key] = [x for x in v if x < new_layers]
        elif isinstance(v, dict) and new_layers and v and all(isinstance(k, (int, str)) and str(k).isdigit() for k in v):
            # per-layer tables keyed by layer index (Gemma-4 per_layer_config)
            d[key] = {k: x for k, x in v.items() if int(k) < new_layers}
    hd = d.get("head_dim") if isinstance(d.get("head_dim"), int) else head_dim
    if hd is None and isinstance(d.get("hidden_size"), int) and isinstance(d.get("num_attention_heads"), int):
        if d["num_attention_heads"] > 0:
            hd = d["hidden_size"] // d["num_attention_heads"]
    for key, v in d.items():
        if isinstance(v, dict):
            if key in ("rope_scaling", "rope_parameters") or "mrope_section" in v:
                _fix_rope(v, hd)
            _shrink_level(v, rules, layers, new_layers or parent_layers, hd)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                _shrink_level(x, rules, layers, new_layers or parent_layers, hd)


def _fix_rope(rope: dict, head_dim: int | None) -> None:
    """``mrope_section`` must sum to ``head_dim // 2`` (vllm rotary_embedding/mrope.py)."""
    sec = rope.get("mrope_section")
    if not head_dim or not isinstance(sec, list) or not sec or not all(isinstance(x, int) for x in sec):
        for v in rope.values():
            if isinstance(v, dict):
                _fix_rope(v, head_dim)
        return
    half = head_dim // 2
    total = sum(sec) or 1
    new = [max(1, x * half // total) for x in sec]
    new[0] += half - sum(new)
    rope["mrope_section"] = new


# attributes every transformers PretrainedConfig has; some config classes (DBRX's attn_config /
# ffn_config) reject them when a sub-config dict produced by to_dict() is passed back
COMMON_CONFIG_KEYS = ("_name_or_path", "output_attentions", "output_hidden_states", "return_dict",
                      "torchscript", "dtype", "torch_dtype", "transformers_version", "id2label", "label2id",
                      "problem_type", "chunk_size_feed_forward", "is_encoder_decoder", "architectures",
                      "tie_word_embeddings", "pruned_heads", "tokenizer_class", "task_specific_params",
                      "finetuning_task", "use_return_dict", "add_cross_attention", "is_decoder",
                      "cross_attention_hidden_size", "tf_legacy_loss", "use_bfloat16")


def strip_common(cfg: dict) -> dict:
    """Copy of ``cfg`` whose nested dicts (not the top level) lack :data:`COMMON_CONFIG_KEYS`."""
    out = dict(cfg)
    for k, v in out.items():
        if isinstance(v, dict):
            inner = strip_common(v)
            out[k] = {x: y for x, y in inner.items() if x not in COMMON_CONFIG_KEYS}
    return out


def set_dotted(d: dict, key: str, value: Any) -> None:
    """``set_dotted(cfg, "text_config.num_hidden_layers", 8)``; creates missing dict levels."""
    parts = key.split(".")
    for p in parts[:-1]:
        nxt = d.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            d[p] = nxt
        d = nxt
    d[parts[-1]] = value


def apply_family(cfg: dict, arch: str, rules: dict) -> dict:
    """Apply ``families[arch]["config"]`` (dotted keys) to ``cfg`` in place; return it."""
    fam = rules["families"].get(arch) or {}
    for key, value in (fam.get("config") or {}).items():
        set_dotted(cfg, key, value)
    return cfg

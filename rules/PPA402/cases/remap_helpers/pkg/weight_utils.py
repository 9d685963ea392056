"""Helpers a loader hands its parameter dict, in the shape of vLLM's and SGLang's
`maybe_remap_kv_scale_name` (model_loader/weight_utils.py)."""


def remap_kv_scale_name(name, params_dict):
    """Tests only the names it remaps: every other name comes back unchanged, untested."""
    if name.endswith(".kv_scale"):
        remapped_name = name.replace(".kv_scale", ".attn.k_scale")
        if remapped_name not in params_dict:
            return None
        return remapped_name
    return name


def remap_checked(name, params_dict):
    """Tests every name it returns (`None` for one not in the dict)."""
    if name in params_dict:
        return name
    for suffix in (".k_scale", ".v_scale"):
        if name.endswith(suffix):
            remapped_name = name.replace(suffix, ".attn" + suffix)
            if remapped_name not in params_dict:
                return None
            return remapped_name
    return None

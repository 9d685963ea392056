import torch.nn as nn
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13_weight = nn.Parameter()


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv_proj = nn.Module()
        self.qkv_proj.weight = nn.Parameter()


class DecoderLayer(nn.Module):
    def __init__(self, prefix=""):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = nn.Module()
        self.mlp.experts = Experts()


STACKED = [(".qkv_proj.", ".q_proj.", "q"), (".qkv_proj.", ".k_proj.", "k")]
EXPERTS = [(".experts.w13_weight", ".experts.0.gate_proj.weight", 0, "w1")]


class MoeModel(nn.Module):
    """The stacked-parameter loop tests `name not in params_dict` in its body; the loop's `else:`
    (the name matched no stacked mapping) looks the expert weights up with no test of its own: the
    test in the loop body does not run on that path (SGLang-family MoE loaders)."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            for param_name, weight_name, shard_id in STACKED:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                if name not in params_dict:
                    continue
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w, shard_id)
                break
            else:
                for param_name, weight_name, expert_id, shard_id in EXPERTS:
                    if weight_name not in name:
                        continue
                    name = name.replace(weight_name, param_name)
                    # ruleid: PPA402
                    param = params_dict[name]
                    param.weight_loader(param, w, name, shard_id=shard_id, expert_id=expert_id)
                    break

    def load_weights_fixed(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            for param_name, weight_name, shard_id in STACKED:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                if name not in params_dict:
                    continue
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w, shard_id)
                break
            else:
                for param_name, weight_name, expert_id, shard_id in EXPERTS:
                    if weight_name not in name:
                        continue
                    name = name.replace(weight_name, param_name)
                    if is_pp_missing_parameter(name, self):
                        continue
                    # ok: PPA402
                    param = params_dict[name]
                    param.weight_loader(param, w, name, shard_id=shard_id, expert_id=expert_id)
                    break


class BranchModel(nn.Module):
    """A test in one branch of an `if` does not cover the lookup in its `else:`."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, w in weights:
            if ".q_proj." in name:
                name = name.replace(".q_proj.", ".qkv_proj.")
                if is_pp_missing_parameter(name, self):
                    continue
                # ok: PPA402
                param = params_dict[name]
                param.weight_loader(param, w, "q")
            else:
                name = name.replace(".experts.0.gate_proj.weight", ".experts.w13_weight")
                # ruleid: PPA402
                param = params_dict[name]
                param.weight_loader(param, w)


class ShardHelperModel(nn.Module):
    """Nested loader helpers (GraniteMoeHybrid's `_load`, `_load_shard`): a substring test on the
    mapping (`if weight_name in n:`) picks the stacked name, it does not test the key against the
    parameters, so `_load_shard`'s lookup is as unguarded as `_load`'s."""

    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(4, lambda prefix: DecoderLayer(prefix))

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())

        def _load(n, p):
            # ruleid: PPA402
            param = params_dict[n]
            param.weight_loader(param, p)

        def _load_shard(n, p, shard_id):
            # ruleid: PPA402
            param = params_dict[n]
            param.weight_loader(param, p, shard_id)

        for n, p in weights:
            loaded = False
            for param_name, weight_name, shard_id in STACKED:
                if weight_name in n:
                    _load_shard(n.replace(weight_name, param_name), p, shard_id=shard_id)
                    loaded = True
            if not loaded:
                _load(n, p)

    def load_weights_fixed(self, weights):
        params_dict = dict(self.named_parameters())

        def _load_shard(n, p, shard_id):
            if is_pp_missing_parameter(n, self):
                return
            # ok: PPA402
            param = params_dict[n]
            param.weight_loader(param, p, shard_id)

        for n, p in weights:
            for param_name, weight_name, shard_id in STACKED:
                if weight_name in n:
                    _load_shard(n.replace(weight_name, param_name), p, shard_id=shard_id)

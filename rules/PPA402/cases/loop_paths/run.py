"""Runtime oracle probes (tests/oracle.py): the model loader hands every rank the whole checkpoint."""

from types import SimpleNamespace

from pkg.model import BranchModel, MoeModel, ShardHelperModel

CONFIG = SimpleNamespace()
ATTN = [(f"layers.{i}.self_attn.q_proj.weight", 1.0) for i in range(4)]
EXPERT = [(f"layers.{i}.mlp.experts.0.gate_proj.weight", 2.0) for i in range(4)]
OTHER = [(f"layers.{i}.mlp.experts.w13_weight", 3.0) for i in range(4)]


def moe_attention():
    MoeModel(CONFIG).load_weights(ATTN)


def moe_experts():
    MoeModel(CONFIG).load_weights(EXPERT)


def moe_fixed():
    MoeModel(CONFIG).load_weights_fixed(ATTN + EXPERT)


def branch_attention():
    BranchModel(CONFIG).load_weights(ATTN)


def branch_experts():
    BranchModel(CONFIG).load_weights(EXPERT)


def shard_helper():
    ShardHelperModel(CONFIG).load_weights(ATTN)


def shard_helper_other():
    ShardHelperModel(CONFIG).load_weights(OTHER)


def shard_helper_fixed():
    ShardHelperModel(CONFIG).load_weights_fixed(ATTN)


PROBES = [moe_attention, moe_experts, moe_fixed, branch_attention, branch_experts, shard_helper, shard_helper_other,
          shard_helper_fixed]

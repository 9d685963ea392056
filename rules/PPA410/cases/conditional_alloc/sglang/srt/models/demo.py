from vllm.distributed import get_pp_group

from sglang.srt.forward_batch_info import PPProxyTensors


class AuxModel:
    """Reads back its auxiliary hidden states, which the runner allocates on no configuration: the
    warm-up of every later stage fails."""

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, aux = [float(p) for p in positions], []
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            # ruleid: PPA410
            aux = pp_proxy_tensors["aux_hidden_states"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "aux_hidden_states": aux})
        return hidden_states


class FoldedModel:
    """Folds the residual into `hidden_states`: reads only the key allocated in both branches."""

    fold_residual = True

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(p) for p in positions]
        else:
            # ok: PPA410
            hidden_states = pp_proxy_tensors["hidden_states"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states})
        return hidden_states


class ResidualModel:
    """Reads `residual`, which the runner allocates only when the model does not fold it: whether
    this model does is the config's, so the read is listed as not judged, not passed."""

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = [float(p) for p in positions], None
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            # ok: PPA410
            residual = pp_proxy_tensors["residual"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "residual": residual or hidden_states})
        return hidden_states

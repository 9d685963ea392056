from vllm.distributed import get_pp_group

from sglang.srt.forward_batch_info import PPProxyTensors


class AuxModel:
    """Sends its auxiliary hidden states to the next stage and reads them back there, but the
    runner allocates no `aux_hidden_states` buffer: the warm-up of every later stage fails."""

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual, aux = [float(p) for p in positions], None, []
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]
            # ruleid: PPA410
            aux = pp_proxy_tensors["aux_hidden_states"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "residual": residual or hidden_states,
                                   "aux_hidden_states": aux})
        return hidden_states


class FixedAuxModel(AuxModel):
    """Reads the optional key with `.get`: the warm-up proxies may lack it."""

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, aux = [float(p) for p in positions], []
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            # ok: PPA410
            aux = pp_proxy_tensors.tensors.get("aux_hidden_states") or []
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "residual": hidden_states,
                                   "aux_hidden_states": aux})
        return hidden_states


class ResidualModel:
    """Reads `residual`, which the runner allocates unless the model folds it into
    `hidden_states` (this one does not): listed as not judged (config-condition), not reported."""

    def forward(self, positions, pp_proxy_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = [float(p) for p in positions]
        else:
            # ok: PPA410
            hidden_states = pp_proxy_tensors["residual"]
        hidden_states = [h + 1 for h in hidden_states]
        if not get_pp_group().is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "residual": hidden_states})
        return hidden_states

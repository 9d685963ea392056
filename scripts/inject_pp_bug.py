#!/usr/bin/env python3
"""Re-inject a pipeline-parallel bug into a copy of a vLLM model file.

``--kind layer-range`` (the default) is the shape vLLM 0.20.0/0.21.0 shipped in Qwen3-VL (fixed
in 0.32.0): a read of the decoder's layer range through a wrapper that does not have it, in
``__init__``, under a guard that only runs on PP ranks > 0::

    if not get_pp_group().is_first_rank:
        assert self.<holder>.start_layer >= 0     # the wrapper has no start_layer

It is inserted right after the statement of ``CLASS.__init__`` that assigns ``self.<holder>``
(``model`` for *ForCausalLM wrappers, whose inner model is ``self.model``; ``language_model``
for VL models). ``get_pp_group`` is imported if the file lacks it.

``--kind unowned-load`` (PPA402): the body of ``CLASS.METHOD`` (third
argument, a ``load_weights(self, weights)``) becomes the hand-written loader Llama-style models
had before ``AutoWeightsLoader`` (q/k/v and gate/up stacked), whose ``params_dict[name]``
lookups have no ``is_pp_missing_parameter(name, self)`` skip, so each rank looks up the
parameters of layers another rank owns (KeyError there). ``--guarded`` writes the fix: the skip
before each lookup. Prints the lines of the two lookups.

``--kind rank-precondition`` (PPA404): ``CLASS`` gains ``_assert_on_<rank>_rank``,
which asserts it runs on the last (``--rank first``: the first) PP rank, and ``CLASS.METHOD``
(third argument, e.g. ``forward``) calls it, unguarded, right before its final ``return``
(AssertionError on every other rank). ``--guarded`` writes the fix: the call under
``if get_pp_group().is_<rank>_rank:``. Prints the line of the call.

``--kind stage-local-id`` (PPA403): ``CLASS`` builds a stage-local store (one entry per layer
of its stage, ``self.scales[layer_id - self.start_layer]``, as SGLang's KV pools are) and
``CLASS.METHOD`` (e.g. ``forward``) reads layer 0's entry at its start, a constant global layer
id: IndexError on a stage that starts after more layers than it holds (``VLLM_PP_LAYER_PARTITION``
front-loaded; under an even split the negative index silently reads another layer).
``--guarded`` writes the fix: the stage's own first layer. Prints the line of the call.

Usage: inject_pp_bug.py SRC.py CLASS HOLDER|METHOD DEST.py [--kind KIND] [--read EXPR]
                        [--rank last|first] [--guarded]
  --read EXPR   layer-range: the expression read instead of ``self.<holder>.start_layer``
                (e.g. ``self.start_layer`` for a wrapper reading its own missing attribute)
Exit 2 (with the reason on stderr) when the file has no place for the injection.
"""

from __future__ import annotations

import argparse
import ast
import sys


def inject(text: str, cls: str, holder: str, read: str | None = None) -> tuple[str, int]:
    """Return ``(new text, line number of the injected read)``; raises LookupError."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    for stmt in ast.walk(fn):
                        if not isinstance(stmt, (ast.Assign, ast.With)):
                            continue
                        body = stmt.body if isinstance(stmt, ast.With) else [stmt]
                        for sub in body:
                            if isinstance(sub, ast.Assign) and any(
                                isinstance(t, ast.Attribute) and t.attr == holder
                                and isinstance(t.value, ast.Name) and t.value.id == "self" for t in sub.targets):
                                end = stmt.end_lineno
                                indent = " " * stmt.col_offset
                                expr = read or f"self.{holder}.start_layer"
                                new = [f"{indent}if not get_pp_group().is_first_rank:\n",
                                       f"{indent}    assert {expr} >= 0\n"]
                                out = lines[:end] + new + lines[end:]
                                joined = "".join(out)
                                added = 0
                                if "get_pp_group" not in text.split(f"class {cls}")[0]:
                                    joined = "from vllm.distributed import get_pp_group\n" + joined
                                    added = 1
                                return joined, end + 2 + added
    raise LookupError(f"{cls}.__init__ assigns no self.{holder}")


RANK_METHOD = "_assert_on_{rank}_rank"


def _method(tree, cls: str, name: str):
    """The ``FunctionDef`` of ``cls.name`` in ``tree``; raises LookupError."""
    if not any(isinstance(n, ast.ClassDef) and n.name == cls for n in ast.walk(tree)):
        raise LookupError(f"no class {cls} in the file")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == name:
                    return fn
    raise LookupError(f"{cls} has no method {name}")


# The hand-written loader vLLM's Llama-style models had before AutoWeightsLoader: q/k/v and
# gate/up stacked into one parameter, every other name looked up as it is. {skip} is the
# `is_pp_missing_parameter` skip (empty for the bug).
_CLASSIC_LOADER = """\
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.utils import is_pp_missing_parameter

stacked_params_mapping = [
    (".qkv_proj", ".q_proj", "q"),
    (".qkv_proj", ".k_proj", "k"),
    (".qkv_proj", ".v_proj", "v"),
    (".gate_up_proj", ".gate_proj", 0),
    (".gate_up_proj", ".up_proj", 1),
]
params_dict = dict(self.named_parameters())
loaded_params = set()
for name, loaded_weight in weights:
    if "rotary_emb.inv_freq" in name:
        continue
    for param_name, weight_name, shard_id in stacked_params_mapping:
        if weight_name not in name:
            continue
        name = name.replace(weight_name, param_name)
{skip}        param = params_dict[name]
        param.weight_loader(param, loaded_weight, shard_id)
        break
    else:
{skip}        param = params_dict[name]
        weight_loader = getattr(param, "weight_loader", default_weight_loader)
        weight_loader(param, loaded_weight)
    loaded_params.add(name)
return loaded_params
"""
_SKIP = "        if is_pp_missing_parameter(name, self):\n            continue\n"


def inject_unowned_load(text: str, cls: str, method: str = "load_weights",
                        guarded: bool = False) -> tuple[str, list[int]]:
    """Replace the body of ``cls.method`` (a ``load_weights(self, weights)``) by the hand-written
    loader above, whose two ``params_dict[name]`` lookups have no ``is_pp_missing_parameter``
    skip (the loader looks up the parameters of layers another rank owns: KeyError there);
    ``guarded``: the fix, each lookup after the skip.

    Returns ``(new text, line numbers of the two lookups)``; raises LookupError when the method
    does not take ``(self, weights)``."""
    fn = _method(ast.parse(text), cls, method)
    if [a.arg for a in fn.args.args] != ["self", "weights"]:
        raise LookupError(f"{cls}.{method} does not take (self, weights)")
    lines = text.splitlines(keepends=True)
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(fn.body) > 1:
        first = fn.body[1]  # keep the docstring
    ind = " " * first.col_offset
    body = _CLASSIC_LOADER.format(skip=_SKIP if guarded else "")
    new_body = [(ind + ln if ln.strip() else ln) for ln in body.splitlines(keepends=True)]
    start = first.lineno - 1
    out = lines[:start] + new_body + lines[fn.end_lineno:]
    rows = [start + k + 1 for k, ln in enumerate(new_body) if "param = params_dict[name]" in ln]
    return "".join(out), rows


def inject_rank_precondition(text: str, cls: str, caller: str, rank: str = "last",
                             guarded: bool = False) -> tuple[str, int]:
    """Add to ``cls`` a method that asserts it runs on the ``rank`` ("last" or "first") PP rank,
    and call it from ``cls.caller`` right before the caller's last ``return`` (a rank's contract
    reached from a path every rank takes). ``guarded``: the fix, the
    call under ``if get_pp_group().is_<rank>_rank:``.

    Returns ``(new text, line number of the injected call)``; raises LookupError when the caller
    has no ``return`` at the end of its body."""
    if rank not in ("last", "first"):
        raise LookupError(f"rank must be 'last' or 'first', not {rank!r}")
    tree = ast.parse(text)
    fn = _method(tree, cls, caller)
    ret = fn.body[-1]
    if not isinstance(ret, ast.Return) or ret.value is None:
        raise LookupError(f"{cls}.{caller} does not end with `return VALUE`")
    lines = text.splitlines(keepends=True)
    ind = " " * ret.col_offset
    name = RANK_METHOD.format(rank=rank)
    call = f"self.{name}({ast.get_source_segment(text, ret.value)})\n"
    new_call = [f"{ind}if get_pp_group().is_{rank}_rank:\n", f"{ind}    {call}"] if guarded else [f"{ind}{call}"]
    mind = " " * fn.col_offset
    method = [
        "\n",
        f"{mind}def {name}(self, output):\n",
        f"{mind}    assert get_pp_group().is_{rank}_rank, \"only the {rank} pipeline-parallel rank may run this\"\n",
        f"{mind}    return output\n",
    ]
    out = lines[:ret.lineno - 1] + new_call + lines[ret.lineno - 1:fn.end_lineno] + method + lines[fn.end_lineno:]
    joined = "".join(out)
    call_line = ret.lineno + (1 if guarded else 0)
    if "get_pp_group" not in text:
        joined = "from vllm.distributed import get_pp_group\n" + joined
        call_line += 1
    return joined, call_line


# A stage-local store of the kind SGLang's KV pools are (one entry per layer of this stage,
# addressed by a global layer id minus the stage's first layer).
_STAGE_STORE = """\
class _StageLayerScales:
    \"\"\"One scale per decoder layer of this pipeline stage, addressed by global layer id.\"\"\"

    def __init__(self, start_layer: int, end_layer: int):
        self.start_layer = start_layer
        self.scales = [torch.ones(()) for _ in range(start_layer, end_layer)]

    def get_scale(self, layer_id: int):
        return self.scales[layer_id - self.start_layer]


"""


def inject_stage_local_id(text: str, cls: str, caller: str = "forward", guarded: bool = False) -> tuple[str, int]:
    """Give ``cls`` a stage-local store (``_StageLayerScales``, built in ``__init__`` right after
    the ``make_layers`` assignment from the stage's ``start_layer``/``end_layer``) and read layer
    0's entry at the start of ``cls.caller``: ``self.layer_scales.get_scale(0)``, a constant
    global layer id (IndexError on a stage that starts after more layers than it holds).
    ``guarded``: the fix, the stage's own first layer (``get_scale(self.start_layer)``).

    Returns ``(new text, line number of the injected call)``; raises LookupError when ``cls`` has
    no ``make_layers`` assignment in ``__init__`` or no ``caller``."""
    tree = ast.parse(text)
    init = _method(tree, cls, "__init__")
    fn = _method(tree, cls, caller)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls), None)
    made = next((st for st in ast.walk(init) if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)
                 and getattr(st.value.func, "id", None) == "make_layers"), None)
    if made is None:
        raise LookupError(f"{cls}.__init__ has no `... = make_layers(...)`")
    lines = text.splitlines(keepends=True)
    top = min([node.lineno] + [d.lineno for d in node.decorator_list])
    body = fn.body[1:] if (isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)) else fn.body
    first = body[0]
    ind = " " * first.col_offset
    arg = "self.start_layer" if guarded else "0"
    read = [f"{ind}_scale = self.layer_scales.get_scale({arg})\n"]
    build = [f"{' ' * made.col_offset}self.layer_scales = _StageLayerScales(self.start_layer, self.end_layer)\n"]
    store = _STAGE_STORE.splitlines(keepends=True)
    out = (lines[:top - 1] + store + lines[top - 1:made.end_lineno] + build
           + lines[made.end_lineno:first.lineno - 1] + read + lines[first.lineno - 1:])
    return "".join(out), first.lineno + len(store) + len(build)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Re-inject a pipeline-parallel bug into a copy of a vLLM model file.")
    ap.add_argument("src")
    ap.add_argument("cls")
    ap.add_argument("holder", metavar="HOLDER|METHOD")
    ap.add_argument("dest")
    ap.add_argument("--kind", choices=("layer-range", "unowned-load", "rank-precondition", "stage-local-id"),
                    default="layer-range")
    ap.add_argument("--read")
    ap.add_argument("--rank", choices=("last", "first"), default="last")
    ap.add_argument("--guarded", action="store_true")
    a = ap.parse_args(argv)
    with open(a.src) as fh:
        text = fh.read()
    try:
        if a.kind == "unowned-load":
            new, rows = inject_unowned_load(text, a.cls, a.holder, a.guarded)
            line = " ".join(map(str, rows))
        elif a.kind == "stage-local-id":
            new, line = inject_stage_local_id(text, a.cls, a.holder, a.guarded)
        elif a.kind == "rank-precondition":
            new, line = inject_rank_precondition(text, a.cls, a.holder, a.rank, a.guarded)
        else:
            new, line = inject(text, a.cls, a.holder, a.read)
    except LookupError as exc:
        print(f"inject_pp_bug: {exc}", file=sys.stderr)
        return 2
    with open(a.dest, "w") as fh:
        fh.write(new)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

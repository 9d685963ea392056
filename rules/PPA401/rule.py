"""PPA401 intermediate-tensor-keys: the keys a model allocates for what it receives from the
previous pipeline-parallel rank (``make_empty_intermediate_tensors``), the keys its ``forward``
sends to the next rank (``IntermediateTensors({...})``) and the keys it reads from what it received
(``intermediate_tensors["k"]``) do not agree (see README.md)."""

from __future__ import annotations

import re

from pp_attr_lint import facts as F
from pp_attr_lint.rule_api import Rule


_FACTORY_CALL = re.compile(rb"make_empty_intermediate_tensors_factory\s*\(\s*([\[(])")
_STR = re.compile(rb"""\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*""")
_READ = re.compile(rb"""\bintermediate_tensors\s*\[\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*\]""")
_SEND_DICT = re.compile(rb"IntermediateTensors\(\s*\{")
_SPREAD = frozenset({b"**"})  # a dict literal with `**spread`: its keys are not known


def _literal_keys(data: bytes, start: int, close: bytes) -> frozenset | None:
    """The string literals of a list, tuple or dict literal's keys starting at ``start`` (after its
    opening bracket) up to the bracket ``close`` at its depth; :data:`_SPREAD` for a dict with
    ``**spread``; ``None`` when it holds anything else that could be a key (a name, a nested
    bracket) or is not read here."""
    keys, i, n = set(), start, len(data)
    while i < n:
        m = _STR.match(data, i)
        if m is None:
            rest = data[i:i + 64].lstrip()
            if rest.startswith(b"**"):
                return _SPREAD  # keys it cannot read, as the rule cannot
            if rest.startswith(close) and not keys:
                return frozenset()
            return None
        keys.add(m.group(1) if m.group(1) is not None else m.group(2))
        i = m.end()
        if data[i:i + 1] == b":" and close == b"}":  # a dict key: skip its value to the next comma
            depth, i = 0, i + 1
            while i < n and not (depth == 0 and data[i:i + 1] in (b",", close)):
                c = data[i:i + 1]
                if c in (b"(", b"[", b"{"):
                    depth += 1
                elif c in (b")", b"]", b"}"):
                    depth -= 1
                elif c in (b"'", b'"', b"#"):
                    return None  # a string or comment inside a value: not read here (a yes)
                i += 1
        if data[i:i + 1] == b",":
            i += 1
            while i < n and data[i:i + 1] in b" \t\r\n":
                i += 1
        if data[i:i + 1] == close:
            return frozenset(keys)
    return None


def _may_disagree(data: bytes) -> bool:
    """A byte test of a file's text: ``True`` when it sends intermediate tensors and its keys may
    disagree, or sends a dict literal (one of whose values may be ``None``).  It says no only when
    there is no such literal and the one allocation is a factory call with a literal key list,
    every key read (``intermediate_tensors["k"]``) is allocated, and every
    ``IntermediateTensors({...})`` has exactly the allocated keys (or keys it cannot read:
    ``**spread``, which leaves the sends unjudged); anything else, a
    ``make_empty_intermediate_tensors`` method included, is a yes."""
    if b"IntermediateTensors(" not in data:
        return False
    if _SEND_DICT.search(data):
        return True  # a value it sends may be None (followed through the layers' returns)
    calls = list(_FACTORY_CALL.finditer(data))
    if b"def make_empty_intermediate_tensors" in data or len(calls) > 1:
        return True
    if not calls:
        return False  # nothing literal allocated here: nothing is judged
    m = calls[0]
    keys = _literal_keys(data, m.end(), b"]" if m.group(1) == b"[" else b")")
    if keys is None:
        return False  # a computed key list: the class is not judged
    reads = {a if a is not None else b for a, b in _READ.findall(data)}
    if not reads <= keys:
        return True
    i = data.find(b"IntermediateTensors(")
    while i >= 0:
        j = i + len(b"IntermediateTensors(")
        while data[j:j + 1] in (b" ", b"\t", b"\n", b"\r"):
            j += 1
        if data[j:j + 1] == b"{":
            sent = _literal_keys(data, j + 1, b"}")
            if sent is None or (sent is not _SPREAD and sent and sent != keys):
                return True  # keys that may differ, or a literal not read here
        elif data[j:j + 1] != b")":
            pass  # IntermediateTensors(tensors) built elsewhere: the sends are not judged
        i = data.find(b"IntermediateTensors(", j)
    return False


class IntermediateTensorKeys(Rule):
    def prefilter(self, data: bytes) -> bool:
        """The file may hold keys that disagree or a value sent as ``None`` (:func:`_may_disagree`);
        a byte test with nothing to import, as it runs on every file of a cold run."""
        return _may_disagree(data)

    def collect(self, tree, lines):
        """Per class: ``keys`` (what it allocates, sends and reads), ``none`` (values it may send as
        ``None``), ``returns`` (``[line, positions]`` of its ``forward``'s ``None`` tuple
        elements) and ``stores`` (its ``make_layers`` lists), as :mod:`pp_attr_lint.semantic.boundary`
        reads them; ``None`` when empty."""
        import ast

        from pp_attr_lint.semantic import boundary as B

        text = lines.source
        sends = "IntermediateTensors(" in text
        layers = "make_layers" in text
        out: dict = {}
        for c in tree.body:
            if not isinstance(c, ast.ClassDef):
                continue
            if sends and F.PP_HOOK in lines.span(c):
                got = B.class_keys(c, lines)
                if got is not None:
                    out.setdefault("keys", {})[c.name] = got
            fwd = next((m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward"),
                       None)
            if fwd is not None:
                body = lines.span(fwd)
                if sends and "IntermediateTensors(" in body:
                    ns = B.none_sends(fwd, lines)
                    if ns:
                        out.setdefault("none", {})[c.name] = ns
                # a tuple with a None element, on the line of its return (a return split over
                # lines is not read: a missed position only keeps a finding back)
                if B.RETURN_NONE.search(body):
                    pos = B.none_positions(fwd)
                    if pos:
                        out.setdefault("returns", {})[c.name] = [fwd.lineno, pos]
            # layer lists are read in files that send (a base's list elsewhere: not established)
            if sends and layers and "make_layers" in lines.span(c):
                st = B.layer_stores(c, lines)
                if st:
                    out.setdefault("stores", {})[c.name] = st
        return out or None

    def check(self, ctx):
        from pp_attr_lint.semantic.guards import LATER_RANKS_WORDS
        facts = ctx.facts(self.code)
        if not facts:
            return []
        from pp_attr_lint.semantic.model import RankFacts

        rf = RankFacts.of(ctx)
        try:
            if not rf.module_runs_under_pp(ctx.module):
                return []
        except Exception:  # noqa: BLE001  (cannot tell: judge it)
            pass
        out = []
        for cls, sends in facts.get("none", {}).items():
            out += rf.unless_refused(self.code, cls, self._none_findings(ctx, cls, sends))
        for cls, f in facts.get("keys", {}).items():
            start = len(out)
            allocated = {k for k, *_ in f["alloc"]}
            sent = {k for k, *_ in f["sent"]}
            for k, *p in f["reads"]:
                if k not in allocated:
                    out.append(self.finding(
                        ctx, *p, f"`{cls}.forward` reads `intermediate_tensors[{k!r}]`, a key its "
                        f"`make_empty_intermediate_tensors` does not allocate: the tensors a rank > 0 receives "
                        f"hold only the allocated keys, so the read raises KeyError on every pipeline-parallel "
                        f"rank but the first.",
                        [f"allocated: {', '.join(sorted(allocated))}",
                         "fails on every pipeline-parallel rank > 0 (it receives)"],
                        help=f"Allocate {k!r} in `make_empty_intermediate_tensors` (and send it), or stop reading it",
                        witness={"ranks": LATER_RANKS_WORDS, "config": {}}))
            if f["sent_known"]:
                for k, *p in f["sent"]:
                    if k not in allocated:
                        out.append(self.finding(
                            ctx, *p, f"`{cls}.forward` sends {k!r} to the next pipeline-parallel rank, a key its "
                            f"`make_empty_intermediate_tensors` does not allocate: the receiving rank has no "
                            f"buffer for it (KeyError in the model runner on every rank > 0).",
                            [f"allocated: {', '.join(sorted(allocated))}; sent: {', '.join(sorted(sent))}"],
                            help=f"Allocate {k!r} in `make_empty_intermediate_tensors`, or stop sending it",
                            witness={"ranks": LATER_RANKS_WORDS, "config": {}}))
                if f["reads_known"]:
                    read = {k for k, *_ in f["reads"]}
                    for k, *p in f["alloc"]:
                        if k not in sent and k not in read:
                            out.append(self.finding(
                                ctx, *p, f"`{cls}` allocates {k!r} for what it receives from the previous "
                                f"pipeline-parallel rank, but its `forward` never sends (nor reads) it: a model "
                                f"runner that fills every allocated key from what it received raises KeyError on "
                                f"every rank > 0 (vLLM's Model Runner V2, `vllm/v1/worker/gpu/model_runner.py`, "
                                f"chosen with `VLLM_USE_V2_MODEL_RUNNER=1`; the XPU runner, vLLM PR 55913); the "
                                f"default v1 GPU and CPU runners copy only the received keys and pass.",
                                [f"allocated: {', '.join(sorted(allocated))}; sent on ranks that are not last: "
                                 f"{', '.join(sorted(sent))}; read on ranks that are not first: "
                                 f"{', '.join(sorted(read)) or 'none'}"],
                                help=f"Allocate only the keys that are sent: drop {k!r} from "
                                     f"`make_empty_intermediate_tensors` (or send it)",
                                witness={"ranks": LATER_RANKS_WORDS + ", on a model runner "
                                                  "that fills every allocated key (vLLM's Model Runner V2, "
                                                  "VLLM_USE_V2_MODEL_RUNNER=1; the XPU runner)",
                                         "config": {}}))
            out[start:] = rf.unless_refused(self.code, cls, out[start:])
        return out

    def _none_findings(self, ctx, cls: str, sends: list) -> list:
        """Findings of the values ``cls.forward`` sends that are ``None`` on a rank: the literal,
        or an element every ``return`` of the layer's ``forward`` gives as ``None``."""
        from pp_attr_lint.semantic.guards import FIRST_RANK_WORDS, MIDDLE_RANK_WORDS
        out = []
        for key, scenario, sources, *p in sends:
            why = []
            nones = sorted({s[1] for s in sources if s[0] == "none"})
            if nones:
                why.append(f"the `None` literal of line{'s' if len(nones) > 1 else ''} "
                           f"{', '.join(map(str, nones))} reaches this line there")
            for s in sources:
                if s[0] == "none":
                    continue
                got = self._layer_none(ctx, (ctx.module, cls), s[1], s[2])
                if got is None:
                    break
                why.append(got)
            else:
                sender = f"{FIRST_RANK_WORDS} (rank 0)" if scenario == "first" \
                    else f"{MIDDLE_RANK_WORDS} (pipeline_parallel_size >= 3)"
                receiver = "rank 1" if scenario == "first" else "the rank after it"
                out.append(self.finding(
                    ctx, *p, f"`{cls}.forward` sends {key!r} to the next pipeline-parallel rank as `None` on {sender}: "
                    f"{receiver} receives `None` where a tensor is expected, and vLLM's v1 model runner copies every "
                    f"received tensor into its buffers (`v[:num_tokens]`): TypeError: 'NoneType' object is not "
                    f"subscriptable on {receiver}.",
                    [*why,
                     f"on {sender}, every value this line can send for {key!r} is `None`"],
                    help=f"Send a tensor for {key!r} (the layers' running residual), or stop sending and allocating it",
                    witness={"ranks": f"{receiver}, which receives what {sender} sends", "config": {}}))
        return out

    def _layer_none(self, ctx, key, attr: str, i: int) -> str | None:
        """:func:`pp_attr_lint.semantic.boundary.layer_none` over this rule's facts, once per run."""
        from pp_attr_lint.semantic.boundary import layer_none

        memo = ctx.shared.setdefault(("PPA401", "layer-none"), {})
        if (key, attr, i) not in memo:
            memo[(key, attr, i)] = layer_none(ctx.resolver, ctx.project, lambda m: ctx.facts(self.code, m),
                                             key, attr, i)
        return memo[(key, attr, i)]


RULE = IntermediateTensorKeys(
    code="PPA401",
    name="intermediate-tensor-keys",
    summary="intermediate-tensor keys allocated, sent and read by a model do not agree",
    needles=("IntermediateTensors(",),
    version=2,
)

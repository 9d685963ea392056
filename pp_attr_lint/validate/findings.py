"""``pp-attr-lint validate --findings PATHS``: the static findings against the engine.

For every finding of ``pp-attr-lint check --output-format json`` (any rule: only the JSON
fields ``code``, ``filename``, ``location.row``, ``end_location``, ``message`` and ``fix`` are
read, so rules added later work unchanged) in a file that a validatable architecture uses:

* **red**: the architecture runs with the file as it is (``--source``) under the finding's witness
  (its ``witness.config`` keys set on the toy config: ``tie_word_embeddings=True``; its
  ``witness.layer_partition``, ``"front-loaded"``, as the split of the layers over the stages:
  every stage after the first holds one layer); expected:
  FAIL, the failure raised at the finding's line or naming the finding's attribute, on some PP
  rank while another rank initialized (a PP-only crash).  A witness key the toy config cannot
  take (not a key of the config class, a condition of the code) makes a red run that does not
  fail "not provable here", with the reason, instead of a disagreement;
  a finding of a weight-loading kind (:func:`weight_loading`) runs with ``--weights toy``, a
  checkpoint of every layer that vLLM loads, so each rank sees weights of layers it does not own;
  such a red run that passes is "not provable here" too (the line needs a quantized or
  KV-cache-scale checkpoint); the finding's line on the failing rank's stack counts as its line;
* **green**: a copy fixed by ``pp-attr-lint check --fix --unsafe-fixes`` runs under the same
  witness; expected: PASS.

A finding *agrees* when both expectations hold. Findings in one file share the red and the
green run (the red run shows the first crash; a finding whose crash is masked by another
finding of the same file is reported as such).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from . import archmap
from .environment import EXIT_FAIL, EXIT_OK, env_error_of
from .runner import RunContext, run_arch

_IDENT_TAIL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\W*$")


def linter_argv(linter: str | None) -> list[str]:
    """The command that runs pp-attr-lint: ``linter`` (an executable, e.g. another checkout's
    ``.venv/bin/pp-attr-lint``) or this package with this Python."""
    return [linter] if linter else [sys.executable, "-m", "pp_attr_lint"]


def lint_json(paths: list[str], as_module: str | None, src: list[str], extra: list[str] | None = None,
              linter: str | None = None) -> list[dict]:
    """Run ``pp-attr-lint check --output-format json --exit-zero`` in a child process and return
    its findings. Raises RuntimeError with the linter's message when it exits with 2 (bad path,
    bad config, internal error) or prints no JSON."""
    argv = linter_argv(linter) + ["check", "--output-format", "json", "--exit-zero", "--no-cache"]
    if as_module:
        argv += ["--as-module", as_module]
    for d in src:
        argv += ["--src", d]
    argv += list(extra or []) + ["--", *paths]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"pp-attr-lint check exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    try:
        data = json.loads(proc.stdout or "[]")
    except ValueError as exc:
        raise RuntimeError(f"pp-attr-lint check printed no JSON ({exc}): {proc.stdout[:300]!r}") from None
    return [f for f in data if isinstance(f, dict) and f.get("filename") and f.get("code")]


def attribute_of(finding: dict) -> str | None:
    """The attribute a finding is about: the last identifier of the source text it points at
    (``self.language_model.start_layer`` -> ``start_layer``); None when unreadable."""
    loc, end = finding.get("location") or {}, finding.get("end_location") or {}
    try:
        with open(finding["filename"], encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        row, col = int(loc["row"]), int(loc["column"])
        erow, ecol = int(end.get("row", row)), int(end.get("column", len(lines[row - 1])))
        if erow == row:
            text = lines[row - 1][col - 1 if col > 0 else 0: ecol]
        else:
            text = lines[erow - 1][:ecol]
    except (OSError, KeyError, IndexError, ValueError, TypeError):
        return None
    m = _IDENT_TAIL.search(text)
    return m.group(1) if m else None


def fixed_copy(path: str, module: str, src: list[str], workdir: str, linter: str | None = None) -> tuple[str, bool, str]:
    """Copy ``path`` into ``workdir`` (same file name) and apply ``check --fix --unsafe-fixes``
    to the copy (as ``module``). Returns ``(copy, changed, linter output)``."""
    os.makedirs(workdir, exist_ok=True)
    copy = os.path.join(workdir, os.path.basename(path))
    shutil.copyfile(path, copy)
    with open(copy, "rb") as fh:
        before = fh.read()
    argv = linter_argv(linter) + ["check", "--fix", "--unsafe-fixes", "--no-cache", "--as-module", module]
    for d in src:
        argv += ["--src", d]
    proc = subprocess.run(argv + ["--", copy], capture_output=True, text=True)
    with open(copy, "rb") as fh:
        after = fh.read()
    return copy, after != before, (proc.stdout + proc.stderr).strip()[-2000:]


def red_agrees(finding: dict, attr: str | None, rep: dict) -> tuple[bool, str]:
    """Does the red run show this finding's crash? See the module docstring; the finding's line
    may also be a frame of the failing rank's traceback (a call into a method that raises).
    Returns ``(agrees, why)``."""
    if rep.get("outcome") != "FAIL":
        return False, f"expected FAIL, got {rep.get('outcome')}" + (f" ({rep.get('reason')})" if rep.get("reason") else "")
    f = rep.get("failure") or {}
    row = (finding.get("location") or {}).get("row")
    where = f.get("where") or ""
    base = os.path.basename(finding["filename"])
    at_line = bool(re.search(rf"(^|/){re.escape(base)}:{row}\b", where))
    ranks = rep.get("ranks") or []
    # a call whose callee raises (a rank precondition): the finding's line is on the failing
    # rank's stack, the raise one frame further in
    tb = next(((r.get("error") or {}).get("traceback") or "" for r in ranks
               if r.get("rank") == f.get("rank") and r.get("error")), "")
    on_stack = not at_line and bool(re.search(rf'File "[^"]*(^|/){re.escape(base)}", line {row},', tb))
    # the attribute the exception names ("... has no attribute 'x'") is the finding's attribute, or
    # one the finding's message names in backticks (a missing-hook finding points at the class)
    missing = re.findall(r"has no attribute '(\w+)'", f.get("message") or "")
    named = set(re.findall(r"`([A-Za-z_]\w*)`", finding.get("message") or "")) | ({attr} if attr else set())
    names_attr = bool(set(missing) & named)
    some_ok = any(r.get("status") == "initialized" for r in ranks)
    rank = f.get("rank")
    what = f"PP rank {rank} {f.get('type')}: {f.get('message')} at {where or '?'}" + (
        f" (called from {base}:{row})" if on_stack else "")
    if not (at_line or on_stack or names_attr):
        return False, f"FAIL elsewhere: {what}"
    if not some_ok and rank is None:
        return False, f"every rank failed (not a PP-only crash): {what}"
    return True, what


def enclosing_functions(path: str, row: int) -> list[str]:
    """The names of the functions (outermost first) whose body holds line ``row`` of ``path``;
    empty when the file does not parse or the line is at module level."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    out = []
    node = tree
    while True:
        inner = next((n for n in ast.iter_child_nodes(node) if getattr(n, "lineno", None) is not None
                      and n.lineno <= row <= (n.end_lineno or n.lineno)
                      and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))), None)
        if inner is None:
            # a statement holding nested definitions (if/with/try): look inside it too
            inner = next((n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)
                          and n.lineno <= row <= (n.end_lineno or n.lineno) and any(
                              isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for c in ast.walk(n))
                          and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))), None)
            if inner is None:
                return out
        elif not isinstance(inner, ast.ClassDef):
            out.append(inner.name)
        node = inner


def weight_loading(finding: dict) -> bool:
    """Whether a finding is of a weight-loading kind, whose code runs only when vLLM loads a
    checkpoint: its rule is PPA402, or its line is in a function named ``*load_weights*`` (or
    nested in one)."""
    if finding.get("code") == "PPA402":
        return True
    row = (finding.get("location") or {}).get("row") or 0
    return any("load_weights" in fn for fn in enclosing_functions(finding["filename"], row))


# the registry table of speculative-decoding drafters (EAGLE and MTP heads)
DRAFTER_TABLE = "_SPECULATIVE_DECODING_MODELS"


def not_run_note(module: str, registry: dict, graph: dict, version: str) -> str:
    """Why a finding in ``module``, which no generative architecture uses, is not run: the module
    is a speculative-decoding drafter's (only :data:`DRAFTER_TABLE` entries use it), engine code
    outside the model folders (a model runner), or neither. ``registry``: arch ->
    :class:`archmap.ArchEntry`; ``graph``: the import graph; ``version``: the installed vLLM's."""
    users = archmap.archs_for_modules([module], registry, graph, generative_only=False)[module]
    drafters = [a for a in users if registry[a].table == DRAFTER_TABLE]
    if drafters and len(drafters) == len(users):
        return (f"not run: a speculative-decoding drafter ({', '.join(drafters[:3])} in {DRAFTER_TABLE}); "
                f"{version} on CPU cannot serve a drafter under pipeline parallelism: its model runner builds the "
                "drafter on the last rank only and reads it in every rank's warm-up run, so rank 0 fails first "
                "(docs/validate.md, section 13)")
    if not any(module.startswith(f"vllm.{d.replace('/', '.')}.") for d in archmap.MODEL_DIRS):
        return (f"not run: engine code, not a model module (no architecture of the registry uses it); validate "
                f"runs model files under the model runner {version} itself picks (docs/validate.md, section 13)")
    return "no generative architecture of the registry uses this module"


def run_findings(args: argparse.Namespace, ctx: RunContext) -> int:
    """The ``--findings`` mode: see the module docstring. Exit status 0 every finding agrees (or
    there is none), 1 some finding disagrees or could not be run, 2 the linter or the
    environment failed (message printed)."""
    site = os.path.dirname(ctx.vllm_dir)
    src = list(args.src or []) or [site]
    try:
        findings = lint_json(list(args.findings), args.as_module, src, linter=getattr(args, "linter", None))
    except RuntimeError as exc:
        return env_error_of(str(exc), args)
    graph = None
    groups: dict[tuple[str, str], list[dict]] = {}
    results: list[dict] = []
    for f in findings:
        module = args.as_module or archmap.file_to_module(f["filename"], ctx.vllm_dir)
        entry = {"code": f["code"], "file": f["filename"], "row": (f.get("location") or {}).get("row"),
                 "message": f.get("message"), "attribute": attribute_of(f), "module": module,
                 "fixable": bool((f.get("fix") or {}).get("edits"))}
        results.append(entry)
        if not module:
            entry.update(agree=None, note="not a vLLM model module (give --as-module)")
            continue
        if graph is None:
            from .environment import validate_cache_dir

            graph = archmap.cached_import_graph(ctx.vllm_dir, ctx.vllm_version, validate_cache_dir())
        users = archmap.archs_for_modules([module], ctx.registry, graph)[module]
        direct = [a for a in users if ctx.registry[a].module == module]
        ranked = [a for a in (args.arch or []) if a in users] or (direct + [a for a in users if a not in direct])
        if not ranked:
            entry.update(agree=None, note=not_run_note(module, ctx.registry, graph, ctx.vllm_version))
            continue
        entry["candidates"] = ranked[:5]
        witness = f.get("witness") or {}
        entry["witness"] = witness
        # weight-loading code runs only when a checkpoint is loaded: a toy one with every layer
        entry["weights"] = "toy" if weight_loading(f) else "dummy"
        # findings that fail under the same configuration share one red run
        config = tuple(sorted((witness.get("config") or {}).items()))
        groups.setdefault((f["filename"], module, config, entry["weights"], witness.get("layer_partition")),
                          []).append((entry, f))
    tmp_root = tempfile.mkdtemp(prefix="pp-attr-lint-findings-")
    for (path, module, config, weights, partition), items in groups.items():
        candidates = items[0][0]["candidates"]
        overrides = dict(config)
        red = None
        arch = None
        for cand in candidates[:3]:  # the first arch that is not UNSUPPORTED here
            under = f" under its witness ({', '.join(f'{k}={v}' for k, v in config)})" if config else ""
            under += " loading a toy checkpoint of every layer's weights" if weights == "toy" else ""
            under += f" with a {partition} split of the layers over the stages" if partition else ""
            print(f"[findings] {os.path.basename(path)}: red run of {cand} with the file as it is{under}", file=sys.stderr)
            rep = run_arch(cand, [[module, os.path.abspath(path)]], args, ctx, quiet=True, config_overrides=overrides,
                           weights=weights, layer_partition=partition)
            if rep.get("outcome") == "UNSUPPORTED":
                for e, _f in items:
                    e.setdefault("skipped", []).append(f"{cand}: {rep.get('reason')}")
                continue
            red, arch = rep, cand
            break
        if red is None:
            for e, _f in items:
                toy = [r for r in e.get("skipped", []) if "toy weights:" in r]
                e.update(agree=None, note=("not provable here: no toy checkpoint of real weights can be written ("
                                           + "; ".join(toy) + ")") if toy and len(toy) == len(e.get("skipped", []))
                         else "every candidate architecture is UNSUPPORTED here")
            continue
        if red.get("outcome") == "ERROR":
            for e, _f in items:
                e.update(arch=arch, agree=False, red={"outcome": "ERROR", "reason": red.get("reason")},
                         note="the file as it is cannot run (see red.reason)")
            continue
        copy, changed, lint_out = fixed_copy(path, module, src, os.path.join(tmp_root, str(len(results))),
                                             linter=getattr(args, "linter", None))
        green = None
        if changed:
            print(f"[findings] {os.path.basename(path)}: green run of {arch} with the fixed copy", file=sys.stderr)
            green = run_arch(arch, [[module, copy]], args, ctx, quiet=True, config_overrides=overrides, weights=weights,
                             layer_partition=partition)
        not_set = ((red.get("toy_config") or {}).get("not_set") or {}) if overrides or partition else {}
        for e, f in items:
            ok_red, why = red_agrees(f, e["attribute"], red)
            if not ok_red and red.get("outcome") == "PASS" and weights == "toy":
                # the toy checkpoint was loaded and this line did not fail: its path needs names the
                # toy checkpoint does not have (quantized weights, KV-cache scales, another layout)
                e.update(arch=arch, agree=None, red={"outcome": red.get("outcome"), "agrees": False, "why": why,
                                                     "weights": weights, "wall_seconds": red.get("wall_seconds")},
                         note="not provable here: the red run loaded a toy checkpoint of every layer's weights "
                              "(transformers' own model class, unquantized) and passed, so this line's loading path "
                              "needs a checkpoint of another kind (quantized weights, KV-cache scales) that cannot "
                              "be made here")
                continue
            if not_set and not ok_red:
                # the red run could not take the whole witness: not a disagreement
                e.update(arch=arch, agree=None, red={"outcome": red.get("outcome"), "agrees": False, "why": why},
                         note="not provable here: the witness could not be set on the toy config ("
                              + "; ".join(f"{k}: {v}" for k, v in not_set.items()) + ")")
                continue
            e.update(arch=arch, red={"outcome": red.get("outcome"), "failure": red.get("failure"), "weights": weights,
                                     "layer_partition": red.get("layer_partition"),
                                     "ranks": [{"rank": r["rank"], "status": r["status"]} for r in red.get("ranks") or []],
                                     "wall_seconds": red.get("wall_seconds"), "agrees": ok_red, "why": why})
            if green is None and not e["fixable"]:
                e.update(green=None, agree=ok_red,
                         note="the rule has no automatic fix for this finding: red only, no green run")
            elif green is None:
                e.update(green=None, agree=False, note="check --fix --unsafe-fixes changed nothing in the copy" +
                         (f": {lint_out[-300:]}" if lint_out else ""))
            else:
                ok_green = green.get("outcome") == "PASS"
                e.update(green={"outcome": green.get("outcome"), "reason": green.get("reason"),
                                "fixed_copy": copy, "wall_seconds": green.get("wall_seconds"), "agrees": ok_green},
                         agree=ok_red and ok_green)
        masked = [e for e, _f in items if not e["red"]["agrees"] and red.get("outcome") == "FAIL"]
        if masked and len(masked) < len(items):
            for e in masked:
                e["note"] = "crash masked by another finding of the same file (the first crash ends the run)"
    ran = [e for e in results if e.get("agree") is not None]
    code = EXIT_OK if all(e["agree"] for e in ran) else EXIT_FAIL
    if args.output_format == "json":
        print(json.dumps({"ok": code == EXIT_OK, "exit_code": code, "vllm": ctx.vllm_version,
                          "findings": results}, indent=1, default=repr))
    else:
        _print_findings(results)
    if getattr(args, "report", None):
        with open(args.report, "w", encoding="utf-8") as fh:
            json.dump({"vllm": ctx.vllm_version, "findings": results}, fh, indent=1, default=repr)
    return code


def _print_findings(results: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=200)
    if not results:
        console.print("no finding: nothing to validate")
        return
    table = Table(title="static findings vs the engine (pp=2)")
    for col in ("finding", "attribute", "architecture", "red (file as is)", "green (fixed)", "agree"):
        table.add_column(col, overflow="fold")
    for e in results:
        red, green = e.get("red") or {}, e.get("green") or {}
        agree = {True: "[green]yes[/]", False: "[red]no[/]", None: "[yellow]not run[/]"}[e.get("agree")]
        red_txt = f"{red.get('outcome', '')}: {red.get('why', '')}" if red else ""
        green_txt = f"{green.get('outcome', '')} {green.get('reason') or ''}" if green else ""
        table.add_row(f"{e['code']} {os.path.basename(e['file'])}:{e['row']}", e.get("attribute") or "",
                      e.get("arch") or "", red_txt, green_txt, agree + (f" ({e['note']})" if e.get("note") else ""))
    console.print(table)

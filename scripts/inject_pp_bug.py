#!/usr/bin/env python3
"""Re-inject a historical pipeline-parallel bug into a copy of a vLLM model file.

The shape is the one vLLM 0.20.0/0.21.0 shipped in Qwen3-VL (fixed in 0.32.0): a read of the
decoder's layer range through a wrapper that does not have it, in ``__init__``, under a guard
that only runs on PP ranks > 0::

    if not get_pp_group().is_first_rank:
        assert self.<holder>.start_layer >= 0     # the wrapper has no start_layer

It is inserted right after the statement of ``CLASS.__init__`` that assigns ``self.<holder>``
(``model`` for *ForCausalLM wrappers, whose inner model is ``self.model``; ``language_model``
for VL models). ``get_pp_group`` is imported if the file lacks it.

Usage: inject_pp_bug.py SRC.py CLASS HOLDER DEST.py [--read EXPR]
  --read EXPR   the expression read instead of ``self.<holder>.start_layer``
                (e.g. ``self.start_layer`` for a wrapper reading its own missing attribute)
Prints the inserted line number. Exit 2 when CLASS.__init__ has no such assignment.
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("cls")
    ap.add_argument("holder")
    ap.add_argument("dest")
    ap.add_argument("--read")
    a = ap.parse_args(argv)
    with open(a.src) as fh:
        text = fh.read()
    try:
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

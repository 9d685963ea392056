"""What the code a file imports from does not have, read from that code: a plugin line ``from
vllm.x import f`` whose ``vllm.x`` (the module of the engine found in the checked folders,
``--src`` or the ``--python`` environment) binds no ``f`` raises ``ImportError`` whenever it runs,
so no statement after it in its block ever runs (all of the module, for an import at the top of a
module).  So does an engine's (or a fork's) own ``from .interfaces import SupportsPP`` where its
``interfaces`` binds no ``SupportsPP``: a model file left from another release.  A finding on such
a line is masked by the earlier failure: it is listed as not judged (``fails-earlier``), never
reported.
"""

from __future__ import annotations

import ast
import os
import re

from .. import facts as F
from ..semantic.service import Service


def _blocks(tree: ast.Module):
    """``(body, inside_function)`` of every statement list of ``tree`` (a module's, a function's,
    an ``if``'s, a loop's, a ``try``'s, a ``with``'s, a ``match`` case's), outer first."""
    todo = [(tree.body, False)]
    while todo:
        body, in_fn = todo.pop(0)
        yield body, in_fn
        for st in body:
            fn = in_fn or isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(st, ast.ClassDef):
                fn = in_fn
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(st, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    todo.append((sub, fn))
            for h in getattr(st, "handlers", ()) or ():
                todo.append((h.body, fn))
            for c in getattr(st, "cases", ()) or ():
                todo.append((c.body, fn))


class EngineRelease(Service):
    """The engine release's answers for a :class:`~pp_attr_lint.semantic.model.RankFacts`
    ``model`` (memoized per run)."""

    def failing_imports(self) -> list[tuple[int, int, int, str]]:
        """``(row, first_masked_row, last_masked_row, why)`` for each ``from m import name`` of the
        checked file that always raises ``ImportError``: ``m`` (relative or absolute) is a module of
        an engine (one of :data:`~pp_attr_lint.facts.ENGINES`) or of the file's own top-level
        package, it is in the analysed code, and it does not bind ``name`` (:meth:`lacks`).  The
        masked rows are those of the statements after it in its block; for a statement of the
        module's own body (at its top, not under ``if``/``try``), the whole file, since the module
        never finishes importing.  ``[]`` when the file cannot be read or parsed."""
        top = self.ctx.module.split(".", 1)[0]
        memo = self._memo.setdefault("failing", {})
        key = (self.ctx.file.path, self.ctx.module)
        if key in memo:
            return memo[key]
        memo[key] = out = []
        data = self.m.reader.read_bytes(self.ctx.file.path)
        if data is None or not (b"from ." in data or any(f"{e}.".encode() in data for e in (*F.ENGINES, top))):
            return out  # (no import from an engine or the own package: no parse)
        got = self.m.reader.parsed(self.ctx.file.path, self.ctx.module)
        if got is None:
            return out
        tree, lines = got[2], got[3]
        for body, in_fn in _blocks(tree):
            for i, st in enumerate(body):
                if not isinstance(st, ast.ImportFrom):
                    continue
                module = self.r.absolute_module(self.ctx.module, st.module, st.level)
                its_top = module.split(".", 1)[0] if module else None
                if its_top is None or not (its_top in F.ENGINES or its_top == top):
                    continue
                for alias in st.names:
                    why = self.lacks(module, alias.name, its_top != top)
                    if why is None:
                        continue
                    if body is tree.body:
                        first, last = 1, len(lines.lines)
                    else:
                        first = st.end_lineno + 1
                        last = body[-1].end_lineno if i + 1 < len(body) else st.end_lineno
                    out.append((st.lineno, first, last, why))
                    break
        return out

    def lacks(self, module: str, name: str, engine: bool = True) -> str | None:
        """Why ``from module import name`` always raises ``ImportError`` against the analysed code
        (``engine``: ``module`` is of the engine release a plugin is checked against, else of the
        file's own package), or ``None`` when it may not (or that cannot be told).  It always raises when
        ``module``'s file is found, its text never names ``name`` as a word, it has no ``from ...
        import *`` and no module-level ``__getattr__`` (PEP 562), no submodule ``module.name``
        exists, and no file of the analysed tree stores an attribute ``name`` (``x.name = ...``,
        ``setattr(x, "name", ...)``: a plugin may patch the engine's module)."""
        memo = self._memo.setdefault("lacks", {})
        if (module, name, engine) in memo:
            return memo[(module, name, engine)]
        memo[(module, name, engine)] = None
        path = self.ctx.project.path(module)
        data = self.m.reader.read_bytes(path) if path else None
        if data is None or name == "*":
            return None
        word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        if word.search(data) or b"import *" in data or re.search(rb"^def __getattr__", data, re.M):
            return None
        folder = os.path.dirname(path)
        if os.path.basename(path) == "__init__.py" and any(
                e == name or e.split(".", 1)[0] == name for e in self._listing(folder)):
            return None  # a submodule (or an extension module) of that name
        store = re.compile(rb"\.\s*" + re.escape(name.encode()) + rb"\s*=[^=]|setattr\([^)]*[\"']"
                           + re.escape(name.encode()) + rb"[\"']")
        for other, _mod in self.m.reader.tree_file_paths(name.encode()) or [None]:
            if other is None or store.search(self.m.reader.read_bytes(other) or b""):
                return None  # a file cannot be read, or one patches the name in
        why = f"the engine release checked against has no `{name}` in `{module}`" if engine else \
            f"`{module}` has no `{name}`"
        memo[(module, name, engine)] = why
        return why

    @staticmethod
    def _listing(folder: str) -> list[str]:
        try:
            return os.listdir(folder)
        except OSError:
            return []

    def mask(self, findings: list) -> tuple[list, list]:
        """``(kept, masked)``: ``findings`` of the checked file split by whether a
        :meth:`failing_imports` line always fails before the finding's line runs; ``masked`` are
        :class:`~pp_attr_lint.model.NotJudged` records (``fails-earlier``) at the findings' places."""
        if not findings:
            return findings, []
        failing = self.failing_imports()
        if not failing:
            return findings, []
        from ..model import NotJudged

        kept, masked = [], []
        for f in findings:
            hit = next(((row, why) for row, first, last, why in failing
                        if f.code and first <= f.row <= last and f.row != row), None)
            if hit is None:
                kept.append(f)
            else:
                masked.append(NotJudged(code=f.code, reason="fails-earlier", path=f.path, row=f.row, column=f.column,
                                        detail=f"line {hit[0]} always fails first (ImportError): {hit[1]}"))
        return kept, masked

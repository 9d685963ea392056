"""The one reader of the analysed tree's files beyond the checked ones: where callers can be, the
bytes and parse of each file (read once per run), and the stat of every file and folder read,
recorded in the project's ``touched`` so that a cached result knows what it depended on."""

from __future__ import annotations

import ast

from ..index.astutil import walk as fast_walk
from ..textio import read_regular
from .service import Service

# a store the question of TreeReader.attribute_stores cannot use: the judge's answer that stops it
NOT_ACCEPTED = object()


def store_pattern(attr: str):
    """A regular expression for a store of ``.<attr>`` in source text: ``x.attr = ...``, an
    augmented ``x.attr += ...``, or ``setattr(x, "attr", ...)``."""
    import re

    return re.compile(r"\." + re.escape(attr) + r"\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)"
                      r"|setattr\([^,()]+,\s*[\"']" + re.escape(attr) + r"[\"']")


def target_names_of(stmt) -> set:
    """The plain names a class-body statement binds (``x = ...``, ``x: T = ...``, ``def x``)."""
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {stmt.name}
    return set()


class TreeReader(Service):
    """Reads the ``.py`` files of the analysed tree for a :class:`~.model.RankFacts` (``model``:
    its ``ctx``, the file being checked, changes as the run goes; memoized per run)."""

    def scan_dirs(self) -> tuple | None:
        """Where callers of this file's methods can be: ``(folder, module prefix)`` of the checked
        root, and of the package of every top-level package this module imports from outside it
        (the engine a plugin runs in: vLLM from the environment or ``--src``); the standard library
        and the packages the facts keep external (torch) are left out, and so are packages found
        nowhere (the run cannot read them; a plugin's engine is found in the environment or
        ``--src``).  ``None`` when a package is found but not as a folder with an ``__init__.py``."""
        import os
        import sys

        memo = self._memo.setdefault("scan-dirs", {})
        if self.ctx.module in memo:
            return memo[self.ctx.module]
        summary = self.ctx.summary
        imports = [v for v in summary["imports"].values()] + [(t, None, lv) for t, lv in summary.get("star_imports", ())]
        scopes = [*summary["functions"].values(), *(m for c in summary["classes"].values() for m in c["methods"].values())]
        imports += [(d[1], d[2], d[3]) for sc in scopes for ds in sc["locals"].values() for d in ds if d[0] == "import"]
        own = self.ctx.module.split(".", 1)[0]
        external = set(getattr(self.ctx.project, "external", ()))
        dirs = [(self.ctx.file.root, "")]
        answer: tuple | None = None
        for top in sorted({t.split(".", 1)[0] for t, _n, level in imports if level == 0 and t} - {own}):
            if top in sys.stdlib_module_names or top in external or top == "__future__":
                continue
            if self.ctx.project.in_checked_root(top):
                continue
            if self.ctx.project.summary(top) is None:
                continue  # installed nowhere the run can see (transformers, safetensors): not read
            path = self.ctx.project.path(top)
            if not path or os.path.basename(path) != "__init__.py":
                break
            dirs.append((os.path.dirname(path), top))
        else:
            answer = tuple(dirs)
        memo[self.ctx.module] = answer
        return answer

    def scan_paths(self, dirs: tuple) -> list:
        """``(path, module)`` of every ``.py`` file of ``dirs`` (see :meth:`scan_dirs`); each
        folder's stat is recorded, so that a file added or removed there changes what a cached
        run depended on."""
        import os

        memo = self._memo.setdefault("scan-paths", {})
        touched = self.ctx.project.touched
        out = []
        for folder, prefix in dirs:
            if (folder, prefix) not in memo:
                got = []
                for d, subdirs, files in os.walk(folder):
                    try:
                        st = os.stat(d)
                        touched.setdefault(d, (st.st_mtime_ns, st.st_size))
                    except OSError:
                        touched.setdefault(d, None)
                    # the cache's own folder (when it is under the checked tree) is not the tree's code
                    subdirs[:] = sorted(x for x in subdirs if not x.startswith(".") and x != "__pycache__"
                                        and not self.ctx.project.cache.owns(os.path.join(d, x)))
                    for n in sorted(files):
                        if n.endswith(".py"):
                            path = os.path.join(d, n)
                            rel = os.path.relpath(path, folder)[:-3].replace(os.sep, ".")
                            rel = rel[:-len("__init__")].rstrip(".") if rel.endswith("__init__") else rel
                            got.append((path, ".".join(x for x in (prefix, rel) if x)))
                memo[(folder, prefix)] = got
            out += memo[(folder, prefix)]
        return out

    def module_parsed(self, module: str) -> tuple | None:
        """:meth:`parsed` of the file of ``module`` in the project (read once per run);
        ``None`` when it has none or it cannot be read or parsed."""
        path = self.ctx.project.path(module)
        return self.parsed(path, module) if path and self.read_bytes(path) is not None else None

    def class_node(self, key):
        """The top-level ``ClassDef`` of class ``key`` (``(module, name)``) in its module's tree
        (:meth:`module_parsed`); ``None`` for a nested class, a module the project lacks or a file
        that does not parse."""
        got = self.module_parsed(key[0])
        return next((n for n in got[2].body if isinstance(n, ast.ClassDef) and n.name == key[1]), None) if got else None

    def function_node(self, key):
        """The top-level function definition ``key`` (``(module, name)``) in its module's tree
        (:meth:`module_parsed`); ``None`` for a nested function, a module the project lacks or a
        file that does not parse."""
        got = self.module_parsed(key[0])
        return next((n for n in got[2].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == key[1]), None) if got else None

    def package_trees(self, top: str, *needles: bytes, matching=None):
        """``(module, tree, lines)`` of the files of package ``top`` among :meth:`tree_files`
        ``(*needles)`` that parse (another package's code says nothing of this engine);
        ``matching``: a compiled bytes regular expression a file's bytes must also match before
        it is parsed."""
        for path, module in self.tree_file_paths(*needles) or ():
            if (module == top or module.startswith(top + ".")) and (
                    matching is None or matching.search(self.read_bytes(path) or b"")):
                got = self.parsed(path, module)
                if got is not None:
                    yield module, got[2], got[3]

    def tree_files(self, *needles: bytes) -> list | None:
        """``(path, module, tree, lines)`` of the ``.py`` files of the analysed tree (the checked
        root and the packages this file imports from outside it) whose bytes hold one of
        ``needles``, parsed and memoized per run, their stats recorded for the cache; ``None`` when
        one cannot be read or parsed, or a folder is not found.  For rules that look for the
        callers or constructions of a name across the tree."""
        files = self.tree_file_paths(*needles)
        if files is None:
            return None
        out = []
        for path, module in files:
            got = self.parsed(path, module)
            if got is None:
                return None
            out.append(got)
        return out

    def tree_file_paths(self, *needles: bytes) -> list | None:
        """``(path, module)`` of the ``.py`` files where callers can be (:meth:`scan_dirs`) whose
        bytes hold one of ``needles``; ``None`` when one cannot be read or a folder is not found.
        Each file is read once per run (:meth:`read_bytes`); parse one with :meth:`parsed`."""
        got = list(self.tree_file_paths_lazily(*needles))
        return None if got and got[-1] is None else got

    def tree_file_paths_lazily(self, *needles: bytes):
        """:meth:`tree_files` listed as the files are read: a scan that stops at a file reads
        (and records as a dependency) no file after it; ``None`` is yielded (and nothing after)
        where :meth:`tree_files` answers ``None``.  Memoized once listed to the end."""
        import re

        dirs = self.scan_dirs()
        if dirs is None:
            yield None
            return
        by_needle = self._memo.setdefault("needle-files", {})
        key = (dirs, needles)
        if key in by_needle:
            got = by_needle[key]
            yield from (None,) if got is None else got
            return
        by_needle[key] = None  # while it is being listed
        # every needle holds the shortest one's longest word (the name asked about): one search
        # of that word turns most files down
        core = max(re.findall(rb"\w+", min(needles, key=len)) or [b""], key=len)
        if not all(core in n for n in needles):
            core = b""
        done = False
        try:
            out = []
            for path, module in self.with_checked(dirs):
                data = self.read_bytes(path)
                if data is None:
                    done = True  # unreadable: the answer stays None
                    yield None
                    return
                if core in data and any(n in data for n in needles):
                    out.append((path, module))
                    yield path, module
            by_needle[key] = out
            done = True
        finally:
            if not done:
                del by_needle[key]  # left before the end: nothing known of the rest

    def with_checked(self, dirs: tuple) -> list:
        """:meth:`scan_paths` of ``dirs`` with each checked file in place of the file of its
        module (a copy checked ``--as-module``, whose module's file in the tree is another), and
        the checked files it lacks added (a lone file outside the scanned folders)."""
        memo = self._memo.setdefault("with-checked", {})
        if dirs not in memo:
            listing = self.scan_paths(dirs)
            checked = {st.module: st.path for st in self.ctx.checked if st.module}
            out = [(checked.get(module, path), module) for path, module in listing]
            listed = {module for _path, module in listing}
            memo[dirs] = out + [(path, module) for module, path in sorted(checked.items()) if module not in listed]
        return memo[dirs]

    def read_bytes(self, path: str) -> bytes | None:
        """The content of a file under the scanned folders, read once per run (its stat recorded,
        so that the cache knows the run depended on it); ``None`` when it cannot be read."""
        import os

        contents = self._memo.setdefault("bytes", {})
        if path not in contents:
            try:
                stat = os.stat(path)
                self.ctx.project.touched.setdefault(path, (stat.st_mtime_ns, stat.st_size))
                contents[path] = read_regular(path)  # never a pipe or a device
            except OSError:
                contents[path] = None
        return contents[path]

    def parsed(self, path: str, module: str) -> tuple | None:
        """``(path, module, tree, lines)`` of a file :meth:`tree_files` listed (parsed once per
        run); ``None`` when it does not decode or parse."""
        from ..index.spec import LineIndex

        parsed = self._memo.setdefault("parsed", {})
        if path not in parsed:
            try:
                text = self._memo["bytes"][path].decode("utf-8")
                parsed[path] = (path, module, ast.parse(text), LineIndex(text))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                parsed[path] = None
        return parsed[path]

    def class_graph(self) -> dict | None:
        """Base name -> the names of the classes that list it, over every ``.py`` file where
        callers can be (:meth:`scan_dirs`; memoized)."""
        import re

        dirs = self.scan_dirs()
        if dirs is None:
            return None
        memo = self._memo.setdefault("class-graph", {})
        if dirs in memo:
            return memo[dirs]
        memo[dirs] = None
        header = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)
        per_file = self._memo.setdefault("class-headers", {})  # path -> [(base, class)]
        graph: dict = {}
        for path, _module in self.with_checked(dirs):
            if path not in per_file:
                data = self.read_bytes(path)
                if data is None:
                    return None
                per_file[path] = [(base.decode(), m.group(1).decode()) for m in header.finditer(data)
                                  for base in re.findall(rb"(\w+)\s*(?:\[[^\]]*\])?\s*(?:,|$)", m.group(2))
                                  ] if b"class" in data else []
            for base, name in per_file[path]:
                graph.setdefault(base, set()).add(name)
        memo[dirs] = graph
        return graph

    def subclass_names(self, name: str) -> set | None:
        """The names of ``name`` and of every class under the checked root that subclasses it,
        directly or not, by name (``class X(A, ...)`` headers read from the files' text,
        :meth:`class_graph`); ``None`` when the files cannot be read."""
        graph = self.class_graph()
        if graph is None:
            return None
        seen, todo = {name}, [name]
        while todo:
            for sub in graph.get(todo.pop(), ()):
                if sub not in seen:
                    seen.add(sub)
                    todo.append(sub)
        return seen

    def share_subclass(self, a: str, b: str) -> bool:
        """Whether some class under the checked root may have both the classes named ``a`` and
        ``b`` on its MRO, by name (:meth:`subclass_names`): ``True`` when the files cannot be
        read."""
        down_a = self.subclass_names(a.rsplit(".", 1)[-1])
        down_b = self.subclass_names(b.rsplit(".", 1)[-1])
        if down_a is None or down_b is None:
            return True
        return bool(down_a & down_b)

    def file_index(self, path: str, tree) -> tuple:
        """One walk of a parsed file: ``(strings, defs, attrs)``, each a name -> list:
        ``(constant, parent)`` of its string constants, ``(function, parent)`` of its function
        definitions, ``(attribute, parent, enclosing function, under a lambda)`` of its attribute
        nodes (memoized per file)."""
        from ..index.astutil import child_nodes

        memo = self._memo.setdefault("file-index", {})
        if path in memo:
            return memo[path]
        strings: dict = {}
        defs: dict = {}
        attrs: dict = {}
        stack = [(tree, None, None, False)]
        while stack:
            node, parent, fn, lam = stack.pop()
            if isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    strings.setdefault(node.value, []).append((node, parent))
                continue
            if isinstance(node, ast.Attribute):
                attrs.setdefault(node.attr, []).append((node, parent, fn, lam))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, []).append((node, parent))
                fn, lam = node, False
            elif isinstance(node, ast.Lambda):
                lam = True
            for c in child_nodes(node):
                stack.append((c, node, fn, lam))
        memo[path] = (strings, defs, attrs)
        return memo[path]

    def attribute_stores(self, attr: str, judge) -> list | None:
        """``[judge(module, store, target)]`` for every store of ``.<attr>`` (an ``Assign`` or
        ``AnnAssign`` whose ``target`` is that attribute) in the ``.py`` files under the checked
        root, file by file; ``None`` when there is none, when ``judge`` returns
        :data:`NOT_ACCEPTED` (the scan stops there), when another kind of store exists (augmented,
        a tuple target, ``del``, ``setattr``), when a function or a class body defines the name,
        or when a file cannot be read or parsed."""
        pat = store_pattern(attr)
        out = []
        found = False
        for item in self.tree_file_paths_lazily(attr.encode()):
            if item is None:
                return None
            found = True
            path, module = item
            got = self.parsed(path, module)
            if got is None:
                return None
            _path, module, tree, lines = got
            every = stores = 0
            for node in fast_walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                    return None
                if isinstance(node, ast.ClassDef) and any(attr in target_names_of(st) for st in node.body):
                    return None
                if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, (ast.Store, ast.Del)):
                    every += 1
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        if isinstance(t, ast.Attribute) and t.attr == attr:
                            stores += 1
                            got = judge(module, node, t)
                            if got is NOT_ACCEPTED:
                                return None
                            out.append(got)
            if every != stores or len(pat.findall(lines.source)) != stores:
                return None  # another kind of store (augmented, a tuple target, setattr)
        return out if found else None

"""The rule plug-in interface: what a rule folder provides and what the engine hands it.

A rule lives in one folder under ``rules/`` (``rules/PPA101/``):

* ``rule.py`` defines ``RULE``, an instance of a :class:`Rule` subclass, or ``rule.yaml`` declares
  a data rule of a kind the engine knows (``wrapper-attribute``: PPA001's resolution, see
  :mod:`pp_attr_lint.kinds.wrapper`);
* ``README.md`` holds its documentation in ruff's sections (``## What it does``, ``## Why is this
  bad?``, ``## Example``, ``## Fix safety``, ``## References``);
* ``cases/`` holds annotated case files (``# ruleid: CODE`` / ``# ok: CODE`` on the line before the
  line they are about) and ``FILE.py.fixed`` where the rule fixes; every case folder also runs under
  the runtime oracle (``tests/oracle``), which executes it on simulated pipeline-parallel ranks.

What a rule asks of the engine:

* :meth:`Rule.prefilter` (by default: one of :attr:`Rule.needles` occurs): whether a file's bytes
  make it worth parsing (the prefilter runs on every file; only hits are parsed);
* :attr:`Rule.attributes`: attribute names whose reads the index records with their receivers
  (``x.start_layer``, ``getattr(x, "start_layer")``), for rules that judge reads by name (a rule
  judges only the reads of its own attributes: the index records those of every enabled rule); a
  rule without a prefilter of its own wants the files that read one on another object, and so
  does one with :attr:`Rule.wants_attribute_reads`;
* :meth:`Rule.collect`: facts of its own, taken from a parsed module (``ast``) and cached with the
  module's summary (plain builtin data, ``marshal``-able); the collector runs on the files the
  rule's own prefilter accepts (the only ones it checks), and on another module when a check asks
  for its facts there (:meth:`FileContext.facts`: the file is parsed again then), unless the rule
  declares :attr:`Rule.facts_everywhere`;
* :meth:`Rule.check`: the findings of one checked file, given a :class:`FileContext` that reaches
  the shared :class:`~pp_attr_lint.resolve.Resolver` (one per project group and run).

The engine never needs to change for a new rule: it takes the union of the rules' prefilters and
attributes, runs each rule's collector on the parsed files that rule wants (and on other modules
when asked), and calls each rule's check on the checked files it wants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from .index.spec import IndexSpec, LineIndex
from .model import Edit, Finding, Fix

if TYPE_CHECKING:  # pragma: no cover
    import ast

    from .resolve import Resolver
    from .workspace.project import FileState, Project


@dataclass
class Rule:
    """Base class of every rule.  Subclasses set the class attributes and override
    :meth:`check` (and :meth:`collect` when they need facts the shared index does not keep)."""

    code: str = ""
    name: str = ""
    summary: str = ""
    url: str | None = None
    fix_applicability: str | None = None  # the best applicability its fixes can have, for listings
    fix_message: str | None = None
    attributes: tuple[str, ...] = ()
    needles: tuple[str, ...] = ()
    docs: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    source: str = field(default="", repr=False)
    settings: Any = None  # resolver facts a data rule adds to the shared ones (pp_attr_lint.settings)
    version: int = 1  # bump when collect() changes: part of the cache key
    # False: enabled only when its code is selected by name (`--extend-select PPA002`), e.g. a
    # rule whose prefilter passes too many files to be on by default
    default: bool = True
    # rules that share one collector (the placeholder family) name the same key; default: the code
    facts_key: str | None = None
    # ``(key, collect, version)`` of another collector whose facts the rule reads through the
    # semantic model (PPA405 asks it which lists come from make_layers): run whenever the rule is,
    # so that its verdict does not depend on which other rules are enabled (out of the repr: a
    # function's repr holds its address, and the run memo's key holds the rules' reprs)
    uses_facts: tuple = field(default=(), repr=False, compare=False, hash=False)

    # True: the rule also wants the files that read one of its `attributes` on another object
    # (`x.end_layer`), besides those its own prefilter accepts (the test is shared between rules)
    wants_attribute_reads = False

    # True: the rule's collector runs on every parsed file (a rule whose check reads its facts of
    # most modules it is handed); False: only on the files its own prefilter accepts, the ones it
    # checks, and on another module when ``ctx.facts(code, module)`` asks there (parsed again then:
    # cheaper when few are asked).  Rules that share a collector (``facts_key``) or name it in
    # ``uses_facts`` gate it by all their bits; one of them that declares this runs it everywhere.
    facts_everywhere = False

    @property
    def facts_name(self) -> str:
        return self.facts_key or self.code

    # -- what the rule asks of the index ---------------------------------------------------------
    def prefilter(self, data: bytes) -> bool:
        """Whether a file's bytes can hold something this rule reports (only such files are
        parsed; files are also parsed when another rule or a resolution needs them).  It may say
        yes too often, and should look at as few bytes as it can: it runs on every file of every
        run.  Default: one of :attr:`needles` occurs."""
        return any(n.encode() in data for n in self.needles)

    def collect(self, tree: ast.Module, lines: "LineIndex") -> Any:
        """Facts of this rule from one parsed module (plain builtin data, or ``None``).

        Args:
            tree: the module's ``ast``.
            lines: converts ``ast`` byte columns to character columns (``lines.col(row, col)``).
        """
        return None

    def prefetch(self, module: str, summary: dict, resolver: "Resolver") -> None:
        """Resolve now what :meth:`check` will ask the resolver about a checked module (``module``,
        its ``summary``), e.g. ``resolver.mro((module, name))`` of the classes it judges.  A speed
        hint, never a change of result: it runs in the processes that summarize the files (see
        :class:`pp_attr_lint.engine.scan.Scan`), with a resolver of their own whose answers are
        dropped; only the summaries of the modules it leads to are kept, so that the checks find
        them ready instead of making them one by one.  It may raise
        :class:`pp_attr_lint.resolve.Unresolved`.  Default: nothing."""
        return None

    # -- what the rule judges --------------------------------------------------------------------
    def check(self, ctx: "FileContext") -> Iterable[Finding]:
        """The findings of one checked file (unsorted); see :class:`FileContext`."""
        return ()

    # -- helpers for subclasses ------------------------------------------------------------------
    def finding(self, ctx: "FileContext", row: int, col: int, end_row: int, end_col: int, message: str,
                explanation: list[str], fix: Fix | None = None, fix_data: dict | None = None,
                help: str | None = None, witness: dict | None = None) -> Finding:
        """A :class:`Finding` of this rule in ``ctx``'s file (``row``/``end_row`` 1-based,
        ``col``/``end_col`` 0-based character columns, as the index stores them).  ``help`` is the
        advice shown when there is no ``fix`` (every finding should get one of them); ``witness``
        where it fails (``{"ranks": text, "config": {model config key: value}}``)."""
        return Finding(code=self.code, name=self.name, message=message, path=ctx.file.path,
                       row=row, column=col + 1, end_row=end_row, end_column=end_col + 1, fix=fix,
                       url=self.url, noqa_row=row, explanation=explanation, fix_data=fix_data,
                       help=help, witness=witness)

    def make_fix(self, applicability: str, message: str, edits: Iterable[Edit]) -> Fix:
        return Fix(applicability=applicability, message=message, edits=tuple(edits))

    @staticmethod
    def replace(pos: tuple[int, int, int, int], content: str) -> Edit:
        """An :class:`Edit` that replaces the span ``pos`` (``(row, col, end_row, end_col)``,
        1-based rows and 0-based character columns, as the index stores them) by ``content``;
        an empty span (``row, col`` twice) inserts."""
        row, col, end_row, end_col = pos
        return Edit(content, row, col + 1, end_row, end_col + 1)


@dataclass
class FileContext:
    """What :meth:`Rule.check` gets for one checked file.

    ``file.summary`` is the file's index summary (:mod:`pp_attr_lint.index.summary`), with the rule's own
    facts under ``facts(code)``; ``resolver`` answers questions across files; ``project`` finds other
    modules' summaries (``project.summary(module)``); ``checked`` lists every checked file of the
    project group (for rules that look at stores or uses in other files); ``shared`` is a dict kept
    for the whole run of one project group, where a rule may keep memos (key it by the rule code).
    """

    file: "FileState"
    project: "Project"
    resolver: "Resolver"
    checked: list
    shared: dict

    @property
    def summary(self) -> dict:
        return self.file.summary  # type: ignore[return-value]

    @property
    def module(self) -> str:
        return self.file.module

    def summary_function_name(self, cls: str | None, line: int) -> str | None:
        """The name of the method of class ``cls`` (or module function) defined at ``line``."""
        if cls is None:
            funcs = self.summary["functions"].items()
        else:
            rec = self.summary["classes"].get(cls)
            funcs = rec["methods"].items() if rec else ()
        return next((name for name, scope in funcs if scope["line"] == line), None)

    def accepts(self, st: "FileState", rule: "Rule") -> bool:
        """Whether ``rule``'s own prefilter accepts checked file ``st`` (from its bytes alone,
        whether it was named on the command line or found in a folder): a rule that looks at the
        other checked files looks only at those, so that what else is named, and which other rules
        made files parsed, changes none of its findings."""
        return isinstance(st.hit, int) and wants(self.project.spec, rule, st.hit)

    def facts(self, code: str, module: str | None = None) -> Any:
        """The facts :meth:`Rule.collect` of rule ``code`` took from ``module`` (default: this
        file); ``None`` when the module is not in the project or the rule collected nothing.  A
        module on which the gate skipped the collector (no rule it serves wanted the file) is
        parsed again and the collector runs now (:meth:`~pp_attr_lint.workspace.project.Project.facts_of`):
        the answer never depends on the gate."""
        if module is None:
            return self.project.facts_of(self.file, code)
        return self.project.facts(module, code)

    def holds(self, code: str) -> bool:
        """Whether this file's summary holds what the collector of ``code`` found (it ran here),
        so that :meth:`facts` answers without parsing the file again; ``True`` also when
        ``code`` names no collector of this run."""
        return code in self.summary.get("held", ()) or all(k != code for k, _ in self.project.spec.collectors)


def fast_walk(node):
    """The nodes under ``node`` (itself included) in :func:`ast.walk`'s order, without the context
    and operator leaves (:func:`pp_attr_lint.index.summary.walk`), for rules' analyses that look
    for other nodes (an iterable: do not change it).  In a collector, a function the summarizer
    walked is not walked again: its nodes come from the module's one walk
    (:class:`pp_attr_lint.index.view.ModuleView`).  Imported on use, so that a warm run, which
    loads the rules, loads no analysis code."""
    from .index import view

    v = view.active()
    if v is not None:
        got = v.cached(node)
        if got is not None:
            return got
    from .index.astutil import walk

    return walk(node)


def module_view(tree):
    """The :class:`~pp_attr_lint.index.view.ModuleView` of a parsed module (``tree``): in a
    collector, the one the summary was made with (its classes, functions and their nodes, from one
    walk); elsewhere a new one.  Raises nothing."""
    from .index.view import module_view as _view

    return _view(tree)


def module_classes(tree):
    """The classes of a parsed module (``tree``, an ``ast.Module``): those at its top level and in
    its top-level ``if`` / ``try`` blocks (no walk of the whole tree), in source order.  Yields
    ``ast.ClassDef`` nodes; raises nothing (:func:`pp_attr_lint.index.astutil.module_classes`)."""
    from .index.astutil import module_classes as _classes

    return _classes(tree)


def index_spec(rules, everything: bool = False, gate: bool = True) -> IndexSpec:
    """The :class:`~pp_attr_lint.index.spec.IndexSpec` of ``rules`` (:class:`Rule` instances);
    ``everything``: no prefilter (every file is wanted by every rule; for tests); ``gate=False``:
    every collector runs on every parsed file (the slow reference the gating is tested against).

    A collector's gate is the prefilter bits of the rules it serves (its own, or named in their
    ``uses_facts``): it runs on a file whose mask has one of them, or on every file (``None``)
    when one of those rules declares :attr:`Rule.facts_everywhere` or has no prefilter bit.  A
    module it skipped gets its facts when a check asks (:meth:`FileContext.facts`)."""
    attrs = frozenset(a for r in rules for a in r.attributes)
    # a rule whose prefilter is the default one and has no needles asks for nothing
    own_pf = [r for r in rules if type(r).prefilter is not Rule.prefilter or r.needles]
    prefilters = tuple(r.prefilter for r in own_pf)
    # the files each rule wants: its own prefilter, else reads of its own attributes
    own_ids = {id(r) for r in own_pf}
    wanting_rules = [r for r in rules if id(r) in own_ids or r.attributes]
    wanting = tuple((r.prefilter, frozenset(r.attributes) if r.wants_attribute_reads else None) if id(r) in own_ids
                    else (None, frozenset(r.attributes)) for r in wanting_rules)
    wanting_codes = tuple(r.code for r in wanting_rules)
    own = {}
    gates: dict = {}  # facts key -> the rule codes whose bits gate its collector (None: every file)

    def serves(key: str, r: Rule) -> None:
        """The collector ``key`` serves rule ``r``: its gate gets ``r``'s bit, or none at all."""
        if not gate or r.facts_everywhere or r.code not in wanting_codes:
            gates[key] = None
        elif gates.get(key, ()) is not None:
            gates[key] = gates.get(key, ()) + (r.code,)

    for r in rules:
        if type(r).collect is not Rule.collect:
            own.setdefault(r.facts_name, (r.collect, r.version))
            serves(r.facts_name, r)
        for k, fn, v in r.uses_facts:
            own.setdefault(k, (fn, v))
            serves(k, r)
    collectors = tuple((k, fn) for k, (fn, _) in sorted(own.items()))
    collector_gates = tuple(None if gates.get(k) is None else
                            sum(1 << wanting_codes.index(c) for c in set(gates[k])) for k, _ in collectors)
    key = "|".join([",".join(sorted(attrs)), ",".join(f"{r.code}:{r.version}:{','.join(r.needles)}" for r in rules),
                    ",".join(f"{k}:{v}:{'*' if gates.get(k) is None else '+'.join(sorted(set(gates[k])))}"
                             for k, (_, v) in sorted(own.items())), "all" if everything else ""])
    return IndexSpec(attrs, prefilters, collectors, key, tuple(r.code for r in own_pf), wanting,
                     wanting_codes, everything, collector_gates)


def wants(spec: IndexSpec, rule: Rule, mask: int | bool) -> bool:
    """Whether ``rule`` checks a file whose prefilter mask is ``mask`` (``True``: a file named on
    the command line, which every rule checks): the rule's own bit, set by its own prefilter (or,
    for a rule without one, by a read of its own attributes), never by another rule's, so that
    which rules are enabled changes no rule's findings; a rule with neither checks every file
    that is checked."""
    if mask is True:
        return True
    if rule.code in spec.wanting_codes:
        return bool(mask >> spec.wanting_codes.index(rule.code) & 1)
    return True

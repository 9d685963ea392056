"""The object a rule asks about pipeline-parallel execution: :class:`RankFacts`, one per run
(``RankFacts.of(ctx)``), which ties together the services of this package and the engines.

Each service keeps its own memo for the run and reaches the others through the model:

* ``reader``: :class:`~.reader.TreeReader`, the files of the analysed tree;
* ``values``: :class:`~.values.Values`, what an attribute holds on each rank;
* ``calls``: :class:`~.calls.Calls`, callers and the guards of their calls, helpers;
* ``entry``: :class:`~.entry.EntryPoints`, the classes the engine loads and what it calls on them;
* ``call_context``: :class:`~.calls.CallContext`, the calls a method makes and paths between methods;
* ``key_helpers``: :class:`~.key_helpers.KeyHelpers`, whether a helper handed a parameter dict
  tests the keys it returns;
* ``vllm`` / ``sglang``: :class:`~pp_attr_lint.engines.vllm.VllmEngine`,
  :class:`~pp_attr_lint.engines.sglang.SglangEngine`, what the engine loads and refuses;
* ``release``: :class:`~pp_attr_lint.engines.release.EngineRelease`, what the engine release
  a plugin is checked against does not have.

The methods below are the questions the rules ask; each says which service answers it.
"""

from __future__ import annotations


from ..engines.executors import Executors
from ..engines.release import EngineRelease
from ..engines.sglang import SglangEngine
from ..engines.vllm import VllmEngine
from ..index.spec import RANK_FACTS_KEY as FACTS_KEY  # one key for the collector and the rules
from ..resolve import Unresolved
from .calls import CallContext, Calls
from .entry import EntryPoints
from .key_helpers import KeyHelpers
from .reader import TreeReader
from .values import Values


class RankFacts:
    """Answers, across files, what runs on each rank and what each value is there (memoized per
    run).  ``ctx`` is the rule context of the file being checked; it changes as the run goes
    (:meth:`of` keeps one model per project and points it at the current file)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.r = ctx.resolver
        self.reader = TreeReader(self)
        self.values = Values(self)
        self.calls = Calls(self)
        self.entry = EntryPoints(self)
        self.call_context = CallContext(self)
        self.key_helpers = KeyHelpers(self)
        self.vllm = VllmEngine(self)
        self.sglang = SglangEngine(self)
        self.release = EngineRelease(self)
        self.executors = Executors(self)
        self._guards: dict = {}  # id(function node) -> (node, its FunctionGuards)

    @classmethod
    def of(cls, ctx) -> "RankFacts":
        """The model of ``ctx``'s run, pointed at ``ctx``'s file."""
        got = ctx.shared.get(FACTS_KEY)
        if got is None or got.ctx.project is not ctx.project:
            got = ctx.shared[FACTS_KEY] = cls(ctx)
        got.ctx = ctx
        return got

    # -- guards --------------------------------------------------------------------------------
    def guard_of(self, fn, node, cls: str | None = None) -> tuple | None:
        """The guard under which ``node`` runs in function ``fn`` (an ``ast`` function of the
        file being checked): a formula of :mod:`.guards`, from ``if``/``elif``/``else``, early
        ``return``/``raise``/``continue``/``break``, ``assert``, ``and``/``or``, conditional
        expressions, comprehension filters, ``while`` tests and local flags; a method the engine
        runs on one rank only (``compute_logits``) starts from that rank.  ``None`` for a node
        the walk does not reach (inside a nested function or class, or not in ``fn``)."""
        return self.function_guards(fn, cls).of(node)

    def function_guards(self, fn, cls: str | None = None):
        """The :class:`~.flow.FunctionGuards` of ``fn`` (walked once per run)."""
        from .. import facts as F
        from .flow import FunctionGuards
        from .guards import FIRST, LAST, TRUE

        memo = self._guards
        got = memo.get(id(fn))
        if got is None or got[0] is not fn:
            rank = F.RANK_OF_METHOD.get(fn.name) if cls is not None else None
            start = FIRST if rank == "first" else LAST if rank == "last" else TRUE
            got = memo[id(fn)] = (fn, FunctionGuards(fn, cls=cls, start=start))
        return got[1]

    @staticmethod
    def implies_rank(guard: tuple, rank: tuple) -> bool:
        """Whether ``guard`` holds only on ``rank`` (:data:`~.guards.FIRST`, :data:`~.guards.LAST`
        or a formula over them, ``f_not(LAST)``), whatever its other tests are."""
        from .guards import implies

        return implies(guard, rank)

    @staticmethod
    def can_hold(guard: tuple, rank: tuple | None = None) -> bool:
        """Whether ``guard`` can hold on some pipeline-parallel rank (on ``rank`` when given)."""
        from .guards import can_hold

        return can_hold(guard, rank)

    def satisfying(self, f, local, cls: str | None, fline: int):
        """:meth:`Calls.satisfying <pp_attr_lint.semantic.calls.Calls.satisfying>`: an assignment
        that makes ``f`` true on some rank, knowing what the helpers named in ``local`` imply."""
        return self.calls.satisfying(f, local, cls, fline)

    def atom_implies(self, atom: str, cls: str | None, fline: int):
        """:meth:`Calls.atom_implies <pp_attr_lint.semantic.calls.Calls.atom_implies>`."""
        return self.calls.atom_implies(atom, cls, fline)

    # -- values --------------------------------------------------------------------------------
    def module_facts(self, module: str) -> dict | None:
        """The collector's facts of ``module`` (:func:`~.values.collect`), ``None`` when none."""
        return self.values.module_facts(module)

    def lazy_readers(self, key, attr: str) -> list:
        """:meth:`Values.lazy_readers <pp_attr_lint.semantic.values.Values.lazy_readers>`."""
        return self.values.lazy_readers(key, attr)

    def is_placeholder_call(self, module: str, callee: str | None) -> bool:
        """Whether ``callee`` (a dotted name called in ``module``) builds a ``PPMissingLayer``."""
        return self.values.is_placeholder_call(module, callee)

    def placeholder_safe_attrs(self) -> frozenset | None:
        """:meth:`Values.placeholder_safe_attrs <pp_attr_lint.semantic.values.Values.placeholder_safe_attrs>`."""
        return self.values.placeholder_safe_attrs()

    def placeholder_dynamic(self):
        """:meth:`Values.placeholder_dynamic <pp_attr_lint.semantic.values.Values.placeholder_dynamic>`."""
        return self.values.placeholder_dynamic()

    def placeholder_condition(self, key, attr: str):
        """:meth:`Values.placeholder_condition <pp_attr_lint.semantic.values.Values.placeholder_condition>`;
        see :attr:`placeholder_failure` for why it gave ``None``."""
        return self.values.placeholder_condition(key, attr)

    @property
    def placeholder_failure(self):
        """What stopped the last :meth:`placeholder_condition`, when it is code the run does not have."""
        return self.values.pc_failure

    def is_layer_builder(self, module: str, callee: str | None) -> bool:
        """Whether ``callee`` (a dotted name called in ``module``) builds a ``make_layers`` list:
        named so, or a function of the analysed tree that returns one
        (:meth:`Values.is_layer_builder <pp_attr_lint.semantic.values.Values.is_layer_builder>`)."""
        return self.values.is_layer_builder(module, callee)

    def holds_layer_list(self, key) -> bool:
        """:func:`~.holders.holds_layer_list`:
        whether class ``key`` builds or holds (across files) a ``make_layers`` list."""
        from .holders import holds_layer_list

        return holds_layer_list(self.values, tuple(key))

    def attribute_holds_layer_list(self, key, attr: str):
        """:func:`~.holders.attribute_holds_layer_list`: whether attribute ``attr`` of class
        ``key`` may hold a model that builds or holds a ``make_layers`` list (``True``, ``False``,
        or the :class:`~pp_attr_lint.resolve.Unresolved` that keeps it from being told)."""
        from .holders import attribute_holds_layer_list

        return attribute_holds_layer_list(self.values, tuple(key), attr)

    def is_layer_list(self, key, attr: str) -> bool:
        """Whether ``attr`` of class ``key`` (or a base) comes from a ``make_layers`` tuple."""
        return self.values.is_layer_list(key, attr)

    def list_guard(self, key, attr: str) -> tuple:
        """:meth:`Values.list_guard <pp_attr_lint.semantic.values.Values.list_guard>`."""
        return self.values.list_guard(key, attr)

    def conditional_list_note(self, owners, attr: str) -> str | None:
        """:meth:`Values.conditional_list_note <pp_attr_lint.semantic.values.Values.conditional_list_note>`."""
        return self.values.conditional_list_note(owners, attr)

    def list_flag_off(self, key, attr: str) -> bool:
        """:meth:`Values.list_flag_off <pp_attr_lint.semantic.values.Values.list_flag_off>`."""
        return self.values.list_flag_off(key, attr)

    def receiver_classes(self, chain: tuple, cls: str | None, fline: int):
        """Classes ``chain`` may be in the function at ``fline`` of class ``cls`` of this file."""
        return self.values.receiver_classes(chain, cls, fline)

    def has_attribute(self, chain: tuple, attr: str, cls: str | None, fline: int) -> tuple:
        """:meth:`Values.has_attribute <pp_attr_lint.semantic.values.Values.has_attribute>`:
        whether ``hasattr(<chain>, attr)`` holds there (``True``/``False``/``None``, and why)."""
        return self.values.has_attribute(chain, attr, cls, fline)

    def list_owners(self, chain: tuple, cls: str | None, fline: int):
        """:meth:`Values.list_owners <pp_attr_lint.semantic.values.Values.list_owners>`; see
        :attr:`owner_failure` for why it found none."""
        return self.values.list_owners(chain, cls, fline)

    @property
    def owner_failure(self):
        """What stopped the last :meth:`list_owners`, when it is code the run does not have."""
        return self.values.owner_failure

    def where(self, entry_line) -> str:
        """``path:line`` of ``((module, class), line)``."""
        return self.values.where(entry_line)

    # -- calls ---------------------------------------------------------------------------------
    def caller_rank(self, cls: str, fname: str) -> tuple | None:
        """:meth:`Calls.caller_rank <pp_attr_lint.semantic.calls.Calls.caller_rank>`: the one rank
        every caller of method ``fname`` of class ``cls`` runs on, ``None`` when not known."""
        return self.calls.caller_rank(cls, fname)

    def rank_alias(self, attr: str) -> tuple | None:
        """:meth:`Calls.rank_alias <pp_attr_lint.semantic.calls.Calls.rank_alias>`."""
        return self.calls.rank_alias(attr)

    def helper_tests_keys(self, cls: str, callee) -> tuple:
        """:meth:`KeyHelpers.verdict <pp_attr_lint.semantic.key_helpers.KeyHelpers.verdict>`:
        whether the helper a loader of class ``cls`` hands its parameter dict tests every key it
        returns against it."""
        return self.key_helpers.verdict(cls, callee)

    def tree_files(self, *needles: bytes) -> list | None:
        """:meth:`TreeReader.tree_files <pp_attr_lint.semantic.reader.TreeReader.tree_files>`:
        ``(path, module, tree, lines)`` of the files of the analysed tree holding a needle."""
        return self.reader.tree_files(*needles)

    # -- engines -------------------------------------------------------------------------------
    def module_runs_under_pp(self, module: str) -> bool:
        """:meth:`VllmEngine.module_runs_under_pp <pp_attr_lint.engines.vllm.VllmEngine.module_runs_under_pp>`."""
        return self.vllm.module_runs_under_pp(module)

    def refuses_unsupported_models(self, top: str) -> bool:
        """:meth:`VllmEngine.refuses_unsupported_models <pp_attr_lint.engines.vllm.VllmEngine.refuses_unsupported_models>`."""
        return self.vllm.refuses_unsupported_models(top)

    def feature_refuses_pp(self, flag: str):
        """:meth:`VllmEngine.feature_refuses_pp <pp_attr_lint.engines.vllm.VllmEngine.feature_refuses_pp>`."""
        return self.vllm.feature_refuses_pp(flag)

    def defines_method(self, name: str) -> bool | None:
        """:meth:`VllmEngine.defines_method <pp_attr_lint.engines.vllm.VllmEngine.defines_method>`."""
        return self.vllm.defines_method(name)

    def drafter_module(self, module: str) -> bool | None:
        """:meth:`VllmEngine.drafter_module <pp_attr_lint.engines.vllm.VllmEngine.drafter_module>`."""
        return self.vllm.drafter_module(module)

    def raw_token_models(self, top: str) -> list:
        """:meth:`VllmEngine.raw_token_models <pp_attr_lint.engines.vllm.VllmEngine.raw_token_models>`."""
        return self.vllm.raw_token_models(top)

    def refused_by_platform(self, guard: tuple, flag: str | None = None) -> bool:
        """Whether a line under ``guard`` (in a method only the config flag ``flag`` calls, when
        given) never runs on the platform the checked plugin registers: every way ``guard`` can
        hold turns on a config flag (an atom of ``guard``) that the engine refuses on that platform
        (:meth:`VllmEngine.platform_refuses <pp_attr_lint.engines.vllm.VllmEngine.platform_refuses>`:
        ``enable_eplb`` on an ``OOT`` platform, vLLM 0.10.0-0.33.0).  False for a file that
        registers no platform (an engine's own), or when that is not shown."""
        from .guards import atoms, can_hold, f_and, f_not

        if not self.vllm.plugin_platforms():
            return False
        if flag and self.vllm.platform_refuses(flag):
            return True
        narrowed = guard
        for atom in sorted(atoms(guard, set())):
            if atom.isidentifier() and self.vllm.platform_refuses(atom):
                narrowed = f_and(narrowed, f_not(("a", atom)))
        return narrowed != guard and not can_hold(narrowed)

    def registrations(self) -> list:
        """:meth:`VllmEngine.registrations <pp_attr_lint.engines.vllm.VllmEngine.registrations>`."""
        return self.vllm.registrations()

    def pp_forward_requirement(self, top: str) -> tuple | None:
        """:meth:`SglangEngine.pp_forward_requirement <pp_attr_lint.engines.sglang.SglangEngine.pp_forward_requirement>`."""
        return self.sglang.pp_forward_requirement(top)

    def proxy_contract(self, top: str) -> dict | None:
        """:meth:`SglangEngine.proxy_contract <pp_attr_lint.engines.sglang.SglangEngine.proxy_contract>`."""
        return self.sglang.proxy_contract(top)

    def pp_speculative_algorithms(self, top: str) -> frozenset | None:
        """:meth:`SglangEngine.pp_speculative_algorithms <pp_attr_lint.engines.sglang.SglangEngine.pp_speculative_algorithms>`."""
        return self.sglang.pp_speculative_algorithms(top)

    def stage_output_reads(self, top: str) -> list:
        """:meth:`SglangEngine.stage_output_reads <pp_attr_lint.engines.sglang.SglangEngine.stage_output_reads>`."""
        return self.sglang.stage_output_reads(top)

    def models_without(self, top: str, parameter: str) -> list:
        """:meth:`SglangEngine.models_without <pp_attr_lint.engines.sglang.SglangEngine.models_without>`."""
        return self.sglang.models_without(top, parameter)

    def entry_classes(self, module: str) -> list | None:
        """:meth:`SglangEngine.entry_classes <pp_attr_lint.engines.sglang.SglangEngine.entry_classes>`."""
        return self.sglang.entry_classes(module)

    def forward_accepts(self, key, parameter: str) -> bool | None:
        """:meth:`SglangEngine.forward_accepts <pp_attr_lint.engines.sglang.SglangEngine.forward_accepts>`."""
        return self.sglang.forward_accepts(key, parameter)

    def refused_under_pp(self, module: str, cls: str | None) -> bool:
        """:meth:`SglangEngine.refused_under_pp <pp_attr_lint.engines.sglang.SglangEngine.refused_under_pp>`:
        whether the engine never runs class ``cls`` of ``module`` under PP."""
        return self.sglang.refused_under_pp(module, cls)

    def not_a_module(self, key) -> bool:
        """Whether class ``key`` (``(module, name)``) is known not to be a ``torch.nn.Module``:
        its MRO is read to the end and lists none of :data:`~pp_attr_lint.facts.MODULE_CLASSES`
        (a model runner, a config, a helper); ``False`` when the MRO cannot be read."""
        from .. import facts as F
        from ..resolve import EXTERNAL

        try:
            mro = self.r.mro(key)
        except Unresolved:
            return False
        return not any(k[0] == EXTERNAL and k[1] in F.MODULE_CLASSES for k in mro)

    def unless_refused(self, code: str, cls: str | None, findings: list) -> list:
        """``findings`` of rule ``code`` on lines of class ``cls`` in this file: none when the
        engine never runs the class under PP (:meth:`refused_under_pp`), a
        :class:`~pp_attr_lint.model.NotJudged` record at each one's place when that cannot be
        established, the findings themselves otherwise."""
        if not findings:
            return findings
        try:
            return [] if self.refused_under_pp(self.ctx.module, cls) else findings
        except Unresolved as e:
            from ..model import NotJudged

            return [NotJudged(code=code, reason=e.reason, path=self.ctx.file.path, row=f.row, column=f.column,
                              detail=e.detail) for f in findings]

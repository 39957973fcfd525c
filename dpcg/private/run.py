"""The engine room of the private algorithms: ``run_private``, the one run sequence of
every private algorithm, and ``discover_private`` (source, then ``run_private``).

Not a front door: the one public function is :func:`dpcg.discover`, whose pipeline
(:func:`dpcg.pipeline.run.execute`) validates the request, resolves the data and the
ledger policy, and is the only caller of this module in the product
(``tests/test_public_surface.py``). Tests call it directly to inspect a run's internals.

Order of a run: validate every input (``Params`` and :class:`RunSettings` validate
themselves; ``plan`` validates the rest; nothing is charged on bad input) -> the public
plan and its composition rule -> open the session (ledger run or in memory, by
:mod:`dpcg.private.ledger`'s policy) -> the algorithm's tester over the PC engine -> close
the session with its status -> :class:`PrivateResult` with the guarantee, the ledger
reference, the spent budget and the plan.

``result.json`` of every private run has the same keys (:meth:`PrivateResult.extra`):
``privacy`` (the guarantee: ``epsilon``, ``delta``, ``relation``, ``rule``; ``null`` for
a non-private run), ``guarantee`` (the same object, kept for readers of older files),
``spent`` (``epsilon``, ``delta``, ``rho`` and ``exact`` fractions), ``ledger``
(``path``, ``run_id``, ``dataset_id``, ``remaining_lifetime``; ``null`` in memory),
``budget_exhausted``, ``plan`` (the algorithm's public plan and what it used),
``mechanisms`` (entries by mechanism kind) and ``message``.

Release allow-list (``tests/hardening/test_allow_list.py``, ``docs/privacy/threat-model.md``):
every field is public (declared schema, ``n``, hyper-parameters, the guarantee, names,
the plan fixed from public information, declared budgets) or post-processing of the
outputs of charged primitives (the graph, the sepsets, the test records). Wall-clock
timings are a side channel that varies with the data: :meth:`PrivateResult.to_json`
leaves them out; :meth:`PrivateResult.diagnostics` returns them, marked as not
protected, for a user who asks (``dpcg discover --diagnostics FILE``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accounting.costs import Cost
from accounting.relations import Relation
from dpcg.citests.registry import get_test, make_options
from dpcg.data.dataset import Dataset
from dpcg.engines.base import TableEngine
from dpcg.engines.resolve import run_description
from dpcg.errors import AlgorithmError
from dpcg.graph import CPDAG
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.pc.limits import RunLimits
from dpcg.private.contract import RunSettings, ScoreCache
from dpcg.private.ledger import DEFAULT_RELATIONS, IN_MEMORY, LedgerTarget, open_session
from dpcg.private.registry import AnyAlgorithm, get_algorithm

__all__ = ["NOT_PROTECTED", "PrivateResult", "diagnostics_json", "discover_private",
           "released_pc_json", "run_private"]

Progress = Callable[[int, int], None]


@dataclass
class PrivateResult:
    """A private run: the engine's result plus the guarantee, the ledger reference and
    the public plan. :meth:`to_json` gives the fields of ``result.json``."""

    algorithm: str
    test: str
    pc: PCResult
    guarantee: dict[str, Any]
    ledger: dict[str, Any] | None
    budget_exhausted: bool
    spent: dict[str, Any]
    plan: dict[str, Any]
    mechanisms: dict[str, int] = field(default_factory=dict)
    message: str | None = None

    @property
    def cpdag(self) -> CPDAG:
        return self.pc.cpdag

    @property
    def n_tests(self) -> int:
        return self.pc.n_tests

    def extra(self) -> dict[str, Any]:
        """The fields a private run adds to the engine's JSON (one shape for all)."""
        return {
            "privacy": self.guarantee,
            "guarantee": self.guarantee,
            "ledger": self.ledger,
            "budget_exhausted": self.budget_exhausted,
            "spent": self.spent,
            "plan": self.plan,
            "mechanisms": self.mechanisms,
            "message": self.message,
            "private_test": self.test,
        }

    def to_json(self, *, include_tests: bool = False) -> dict[str, Any]:
        """The released fields (no timings: see :meth:`diagnostics`)."""
        out: dict[str, Any] = {"algorithm": self.algorithm, "test": self.test}
        out.update(released_pc_json(self.pc, include_tests=include_tests))
        out.update(self.extra())
        return out

    def diagnostics(self) -> dict[str, Any]:
        """NOT protected by the guarantee: wall-clock timings of the run (they vary with
        the data: a side channel). For the operator's own profiling only."""
        return diagnostics_json(self.pc)


#: The marker of every diagnostics document (``dpcg discover --diagnostics FILE``).
NOT_PROTECTED = ("not protected: side channel. These values are measured on the data "
                 "and are NOT covered by the run's differential-privacy guarantee; do not "
                 "release them (docs/privacy/threat-model.md)")


def released_pc_json(pc: PCResult, *, include_tests: bool = False) -> dict[str, Any]:
    """The engine's JSON of a private run, without its wall-clock ``timing``."""
    out = pc.to_json(include_tests=include_tests)
    out.pop("timing", None)
    return out


def diagnostics_json(pc: PCResult, **extra: float) -> dict[str, Any]:
    """The run's timings under the :data:`NOT_PROTECTED` marker."""
    timing: dict[str, float] = {"seconds": pc.seconds, "test_seconds": pc.test_seconds}
    timing.update(extra)
    return {"protected": False, "warning": NOT_PROTECTED, "timing": timing}


def _algorithm(algorithm: str | AnyAlgorithm) -> AnyAlgorithm:
    return get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm


#: The message of a completed run whose graph has no edge at all.
EMPTY_GRAPH_NOTE = ("no edge survived: every test came out independent. At this budget "
                    "the noise of each test may exceed any dependence in the data, so "
                    "the empty graph is not evidence of independence; raise epsilon, "
                    "use more rows, or use an algorithm with less noise per test")


def run_private(
    algorithm: str | AnyAlgorithm,
    source: object,
    names: tuple[str, ...],
    settings: RunSettings,
    params: object | None = None,
    *,
    ledger: LedgerTarget = IN_MEMORY,
    background: BackgroundKnowledge | None = None,
    progress: Progress | None = None,
    description: str = "",
    limits: RunLimits | None = None,
) -> PrivateResult:
    """Run ``algorithm`` on an already-built ``source`` (its ``source(...)``'s output).

    ``params`` is the algorithm's ``Params`` instance (default: ``Params()``).
    ``limits`` (:class:`dpcg.pc.limits.RunLimits`, ``public_only=True``) ends the run
    with the graph so far when a public test budget is reached; the spend stands.
    """
    if limits is not None and not (isinstance(limits, RunLimits) and limits.public_only):
        raise AlgorithmError("limits: a private run takes RunLimits(public_only=True) (its "
                             "stop must not depend on the clock or the memory)")
    algo = _algorithm(algorithm)
    if params is None:
        params = algo.params()
    if not isinstance(params, algo.params):
        raise AlgorithmError(f"params: {algo.name} takes {algo.params.__name__}, got "
                             f"{type(params).__name__}")
    if not isinstance(settings, RunSettings):
        raise AlgorithmError(f"settings: expected RunSettings, got {type(settings).__name__}")
    relation = getattr(source, "relation", None)
    if relation is not None and Relation.parse(relation) is not Relation.parse(settings.relation):
        # the mechanisms declare the source's bounds under the session's relation, so a
        # source built under another relation would be charged for the wrong bound
        raise AlgorithmError(
            f"source: its sensitivities are declared under {Relation.parse(relation).value}, "
            f"the run is under {Relation.parse(settings.relation).value}; build the source "
            "under the run's relation")
    if not isinstance(ledger, LedgerTarget):
        raise AlgorithmError(f"ledger: expected a LedgerTarget, got {type(ledger).__name__}")
    if background is not None:
        if not isinstance(background, BackgroundKnowledge):
            raise AlgorithmError(f"background: expected BackgroundKnowledge, got "
                                 f"{type(background).__name__}")
        background.resolve(names)  # public names only: an inconsistent one fails here
    plan = algo.plan(params, settings, source)
    budget = settings.budget()
    # Pre-flight inside open_session (signing key, relation, lifetime >= budget) before
    # the run is reserved; every input above was validated without touching the ledger.
    handle = open_session(budget, plan.rule, ledger, relation=settings.relation,
                          seed=settings.noise_seed,
                          description=description or f"dpcg {algo.name}/{settings.test}",
                          relations=getattr(algo, "relations", DEFAULT_RELATIONS),
                          algorithm=f"--algorithm {algo.name}")
    session = handle.session
    status = "error"
    try:
        tester = algo.tester(plan, source, session)
        result = pc_stable(tester, names, max_depth=plan.max_depth, background=background,
                           progress=progress, limits=limits)
        status = "budget-exhausted" if result.budget_exhausted else "completed"
    finally:
        handle.close(status)
    spent = session.spent()
    nothing = spent.epsilon in (None, 0) and spent.rho in (None, 0)
    message = None
    if result.budget_exhausted and nothing:
        message = ("the budget is smaller than the cost of one test of the plan: nothing "
                   "was spent and no test ran (the graph is the complete graph)")
    elif result.budget_exhausted:
        message = ("the run stopped before PC finished (the filter refused a release, or a "
                   "test's budget was too small for its noise sampler): the graph is the "
                   "graph so far (budget-limited)")
    note = getattr(tester, "exhaustion_note", None)  # what the user gets, if it says
    if result.budget_exhausted and not nothing and isinstance(note, str) and note:
        message = note
    stopped = result.info.get("stopped") if result.stop_reason is not None else None
    if message is None and isinstance(stopped, dict):
        message = (f"{stopped.get('message', 'a run limit was reached')}: the graph is the "
                   "graph so far; every release made stands in the ledger")
    if message is None and len(names) > 1 and result.cpdag.n_edges == 0:
        # never a silent empty graph (issue 20): say what it means (post-processing of
        # the released graph only)
        message = EMPTY_GRAPH_NOTE
    g = session.guarantee()
    guarantee = {"epsilon": float(g.epsilon), "delta": float(g.delta),
                 "relation": Relation.parse(g.relation).value, "rule": str(g.rule)}
    ledger_info = None
    if ledger.path is not None:
        remaining: dict[str, Any] | None = None
        if handle.remaining is not None:
            remaining = {"epsilon": handle.remaining[0], "delta": handle.remaining[1]}
        if remaining is not None and handle.remaining_rho is not None:
            # a zcdp lifetime: admission is on rho; epsilon/delta are its conversion
            remaining.update(lifetime_rule="zcdp", rho=handle.remaining_rho[0],
                             lifetime_rho=handle.remaining_rho[1])
        ledger_info = {"path": str(ledger.path), "run_id": handle.run_id,
                       "dataset_id": ledger.dataset_id, "remaining_lifetime": remaining}
        if handle.registered is not None:
            life, declared = handle.registered
            # public: the declared (or defaulted) lifetime of the id this run registered
            ledger_info["registered_lifetime"] = {
                "epsilon": float(life.epsilon), "delta": float(life.delta),
                "declared": declared}
    plan_info: dict[str, Any] = dict(plan.describe())
    plan_info.update(algo.usage(tester))
    return PrivateResult(
        algorithm=algo.name, test=settings.test, pc=result, guarantee=guarantee,
        ledger=ledger_info, budget_exhausted=result.budget_exhausted,
        spent=_spent_dict(spent, session.spent_summary()), plan=plan_info,
        mechanisms=dict(handle.recorder.counts), message=message,
    )


def _spent_dict(cost: Cost, stated: Mapping[str, Any]) -> dict[str, Any]:
    """``result.spent``: what the run used, stated under its rule
    (:func:`accounting.session.spent_summary`): under ``zcdp``, ``epsilon`` is spent rho
    converted at the run's delta, never the plain sum of pure costs (svt-pc at eps 1 used
    to show 4.41 beside its guarantee 1.0). ``exact`` keeps the exact sums the rule
    accounts by (``epsilon`` and ``delta`` under basic; ``rho`` and the mechanisms'
    ``delta`` under zcdp)."""
    keep = ("epsilon", "delta") if stated["rule"] == "basic" else ("rho", "delta")
    exact = {k: v for k, v in cost.as_dict().items() if k in keep}
    return {"rule": stated["rule"], "epsilon": stated.get("epsilon_float"),
            "delta": stated.get("delta_float"), "rho": stated.get("rho_float"),
            "exact": exact, "stated": dict(stated)}


def discover_private(
    dataset: Dataset | TableEngine,
    algorithm: str | AnyAlgorithm,
    *,
    epsilon: float,
    delta: float | None = None,
    test: str | None = None,
    alpha: float = 0.05,
    noise_seed: int | None = None,
    max_depth: int | None = None,
    params: object | None = None,
    test_options: Mapping[str, object] | object | None = None,
    ledger: LedgerTarget = IN_MEMORY,
    background: BackgroundKnowledge | None = None,
    progress: Progress | None = None,
    cache: ScoreCache | None = None,
    limits: RunLimits | None = None,
) -> PrivateResult:
    """A whole private run on ``dataset``: settings -> the test's options -> source ->
    :func:`run_private` (what the pipeline, :func:`dpcg.pipeline.run.execute`, calls).

    ``test_options`` is the test's options instance or a mapping of its fields.
    """
    algo = _algorithm(algorithm)
    requested = algo.default_test if test is None else test
    resolved = algo.resolve_test(requested)
    spec = get_test(resolved)
    if test_options is None:
        test_options = {}
    if isinstance(test_options, Mapping):
        test_options = make_options(spec.options, test_options)
    if not isinstance(test_options, spec.options):
        raise AlgorithmError(f"test_options: --test {resolved} takes "
                             f"{spec.options.__name__}, got {type(test_options).__name__}")
    settings = RunSettings(epsilon=epsilon,
                           delta=algo.default_delta if delta is None else delta,
                           test=resolved, alpha=alpha, noise_seed=noise_seed,
                           max_depth=max_depth)
    if params is None:
        params = algo.params()
    if not isinstance(params, algo.params):
        raise AlgorithmError(f"params: {algo.name} takes {algo.params.__name__}, got "
                             f"{type(params).__name__}")
    check_engine_algorithm(dataset, algo)  # engines: the discrete family (docs/scale.md)
    if isinstance(dataset, Dataset):  # every private door: n must be public (no deletion)
        from dpcg.data.checks import require_public_n

        require_public_n(dataset)
    source = algo.source(dataset, settings, test_options, cache)  # type: ignore[arg-type]
    return run_private(algo, source, tuple(str(n) for n in dataset.names), settings, params,
                       ledger=ledger, background=background, progress=progress,
                       description=run_description(algo.name, resolved, dataset),
                       limits=limits)


def check_engine_algorithm(data: object, algorithm: object) -> None:
    """A table engine feeds the discrete family only (contingency tables); refused before
    anything is charged otherwise."""
    from dpcg.private.common import DiscreteAlgorithm  # lazy: it loads scipy.stats

    if isinstance(data, TableEngine) and not isinstance(algorithm, DiscreteAlgorithm):
        name = getattr(algorithm, "name", type(algorithm).__name__)
        raise AlgorithmError(f"engine: {name} needs the rows in memory (engine numpy); the "
                             f"{data.name} engine serves the discrete algorithms")

"""``discover``: the Python entry point of the private PC family (and of the CLI).

::

    from dpcg.private import discover
    res = discover(dataset, algorithm="laplace-pc", test="kendall-split", epsilon=1.0,
                   delta=1e-6, ledger="runs.db", dataset_id="asia-100k")
    res.cpdag, res.guarantee, res.ledger, res.budget_exhausted, res.to_json()

Order of a run: validate every input (nothing is charged on bad input) -> build the
public plan and pick the composition rule from public information -> open the session
(ledger run or in memory) -> run the strategy over the PC engine -> close the session
with its status -> result with the guarantee, ledger reference and spent budget.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from accounting.costs import Budget, Cost
from accounting.relations import Relation
from dpcg.citests.private import StatisticSource, ThresholdCITest, source_for_dataset
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.private.common import (
    ALGORITHMS,
    PrivateResult,
    PrivateSettings,
    open_session,
    validate_settings,
)

_MODULES = {
    "laplace-pc": "dpcg.private.laplace_pc",
    "svt-pc": "dpcg.private.svt_pc",
    "priv-pc": "dpcg.private.priv_pc",
    "em-pc": "dpcg.private.em_pc",
    "curate": "dpcg.private.curate",
}


def _module(algorithm: str) -> Any:
    if algorithm not in _MODULES:
        raise AlgorithmError(
            f"algorithm: unknown private algorithm {algorithm!r}; choose from {ALGORITHMS}"
        )
    return importlib.import_module(_MODULES[algorithm])


def _count_mechanisms(handle: Any) -> dict[str, int]:
    """Entries the run's recorder accepted, by mechanism kind."""
    counts = getattr(handle.recorder, "counts", None)
    return dict(counts) if counts else {}


def _spent_dict(cost: Cost) -> dict[str, Any]:
    return {"exact": cost.as_dict(), **cost.summary()}


def run_private(
    algorithm: str,
    source: StatisticSource,
    names: tuple[str, ...],
    settings: PrivateSettings,
    *,
    ledger: str | Path | None = None,
    dataset_id: str | None = None,
    background: Any = None,
    progress: Any = None,
    description: str = "",
    lifetime: Budget | None = None,
) -> PrivateResult:
    """Run ``algorithm`` on an already-built :class:`StatisticSource`.

    ``lifetime`` is the lifetime budget used only when ``dataset_id`` is not yet
    registered in ``ledger`` (default: this run's budget).
    """
    validate_settings(settings)
    mod = _module(algorithm)
    if algorithm in ("em-pc", "curate") and (
        settings.plan_size is not None or settings.test_epsilon is not None
    ):
        raise AlgorithmError(
            f"plan_size/test_epsilon: {algorithm} plans its budget per level/order itself; "
            "these options apply to laplace-pc, svt-pc and priv-pc"
        )
    plan = mod.make_plan(settings, source)
    budget = settings.budget()
    handle = open_session(budget, plan.rule, relation=settings.relation, seed=settings.seed,
                          ledger=ledger, dataset_id=dataset_id, lifetime=lifetime,
                          description=description or f"dpcg {algorithm}/{settings.test}")
    session = handle.session
    status = "error"
    try:
        tester = mod.make_tester(plan, source, session)
        max_depth = getattr(plan, "max_depth", None)
        result: PCResult = pc_stable(tester, names, max_depth=max_depth,
                                     background=background, progress=progress)
        status = "budget-exhausted" if result.budget_exhausted else "completed"
    finally:
        handle.close(status)
    spent = session.spent()
    nothing = (spent.epsilon in (None, 0) and (spent.rho in (None, 0)))
    message = None
    if result.budget_exhausted and nothing:
        message = ("the budget is smaller than the cost of one test of the plan: nothing "
                   "was spent and no test ran (the graph is the complete graph)")
    elif result.budget_exhausted:
        message = "the filter stopped the run: the graph is the graph so far (budget-limited)"
    g = session.guarantee()
    guarantee = {
        "epsilon": float(g.epsilon),
        "delta": float(g.delta),
        "relation": Relation.parse(g.relation).value,
        "rule": str(g.rule),
    }
    ledger_info = None
    if handle.ledger_path is not None:
        ledger_info = {"path": handle.ledger_path, "run_id": handle.run_id,
                       "dataset_id": dataset_id}
    plan_info = plan.describe()
    info = getattr(tester, "history", None)
    if info:
        plan_info["orders"] = info
    for attr in ("instances", "rounds", "unused_sieves", "examines", "coins", "releases"):
        if hasattr(tester, attr):
            plan_info[f"used_{attr}"] = getattr(tester, attr)
    return PrivateResult(
        algorithm=algorithm, test=settings.test, pc=result, guarantee=guarantee,
        ledger=ledger_info, budget_exhausted=result.budget_exhausted,
        spent=_spent_dict(spent), plan=plan_info, mechanisms=_count_mechanisms(handle),
        message=message,
    )


def discover(
    dataset: Any,
    algorithm: str = "laplace-pc",
    test: str = "kendall-split",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    ledger: str | Path | None = None,
    dataset_id: str | None = None,
    seed: int | None = None,
    plan_size: int | None = None,
    *,
    test_epsilon: float | None = None,
    alpha: float = 0.05,
    threshold: float | None = None,
    rule: str | None = None,
    max_depth: int | None = None,
    background: Any = None,
    cache: dict[tuple[int, int, tuple[int, ...]], float] | None = None,
    **options: Any,
) -> PrivateResult:
    """Learn a CPDAG from a discrete :class:`dpcg.data.Dataset` with a private PC variant.

    ``epsilon``/``delta`` are the run's TOTAL budget; ``plan_size`` the public plan (tests
    for Laplace-PC, instances for SVT-PC, rounds for Priv-PC); ``seed`` makes the noise
    reproducible (marked as seeded in the ledger); ``ledger``/``dataset_id`` record the
    run in a ledger. Extra ``options``: ``cutoff`` (SVT-PC), ``tweak``, ``m`` (Priv-PC),
    ``beta1``, ``beta2`` (CURATE).
    """
    settings = PrivateSettings(
        epsilon=epsilon, delta=delta, test=test, alpha=alpha, threshold=threshold,
        plan_size=plan_size, test_epsilon=test_epsilon, rule=rule, seed=seed,
        max_depth=max_depth, options=dict(options),
    )
    validate_settings(settings)
    _module(algorithm)
    allowed = {"cutoff", "tweak", "m", "beta1", "beta2"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise AlgorithmError(f"unknown option(s) {unknown}; known: {sorted(allowed)}")
    if ledger is not None and dataset_id is None:
        raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")
    source = source_for_dataset(dataset, test, alpha=alpha, threshold=threshold, cache=cache)
    names = tuple(str(n) for n in dataset.names)
    return run_private(algorithm, source, names, settings, ledger=ledger,
                       dataset_id=dataset_id, background=background)


def nonprivate_pc(dataset: Any, test: str = "kendall-split", *, alpha: float = 0.05,
                  threshold: float | None = None, max_depth: int | None = None,
                  cache: dict[tuple[int, int, tuple[int, ...]], float] | None = None,
                  ) -> PCResult:
    """Non-private PC with the same score and threshold (no noise; NOT private)."""
    source = source_for_dataset(dataset, test, alpha=alpha, threshold=threshold, cache=cache)
    return pc_stable(ThresholdCITest(source), tuple(str(n) for n in dataset.names),
                     max_depth=max_depth)

"""``discover``: the Python entry point of the private PC family.

::

    from dpcg.private import discover
    res = discover(dataset, algorithm="laplace-pc", test="kendall-split", epsilon=1.0,
                   delta=1e-6, ledger="runs.db", dataset_id="asia-100k")
    res.cpdag, res.guarantee, res.ledger, res.budget_exhausted, res.to_json()

The run itself is :func:`dpcg.private.run.run_private` (the same sequence for every
registered algorithm). Unlike ``dpcg discover`` (which records every private run in the
durable ledger unless ``--no-ledger``), the Python API records in a ledger only when
``ledger`` is given, and in memory otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

from accounting.costs import Budget
from dpcg.citests.private import ThresholdCITest, source_for_dataset
from dpcg.citests.registry import make_options
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.engines.base import TableEngine
from dpcg.engines.resolve import resolve_engine
from dpcg.errors import AlgorithmError
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.private.contract import ScoreCache
from dpcg.private.ledger import IN_MEMORY, LedgerTarget
from dpcg.private.registry import get_algorithm
from dpcg.private.run import PrivateResult, discover_private

__all__ = ["discover", "nonprivate_pc"]


def discover(
    dataset: Dataset | TableEngine | object,
    algorithm: str = "laplace-pc",
    test: str | None = None,
    epsilon: float = 1.0,
    delta: float | None = None,
    ledger: str | Path | LedgerTarget | None = None,
    dataset_id: str | None = None,
    seed: int | None = None,
    plan_size: int | None = None,
    *,
    test_epsilon: float | None = None,
    alpha: float = 0.05,
    threshold: float | None = None,
    rule: str | None = None,
    max_depth: int | None = None,
    background: BackgroundKnowledge | None = None,
    cache: ScoreCache | None = None,
    lifetime: Budget | None = None,
    engine: object = None,
    schema: Schema | None = None,
    spark_master: str | None = None,
    memory_limit: str | None = None,
    **options: object,
) -> PrivateResult:
    """Learn a CPDAG with the registered private algorithm ``algorithm``.

    ``epsilon``/``delta`` are the run's TOTAL budget (``delta`` default: the algorithm's,
    1e-6 for the discrete family, 0 for private-ci-pc); ``seed`` makes the noise
    reproducible (marked as seeded in the ledger); ``ledger``/``dataset_id`` record the
    run in a ledger (``lifetime``: the lifetime budget of a new dataset id). The
    algorithm's own options (its ``Params`` fields: ``plan_size``, ``test_epsilon``,
    ``rule``, ``cutoff``, ``tweak``, ``m``, ``beta1``, ``beta2``) are keywords; an option
    the algorithm does not have is an error. ``threshold`` is the score tests' option.

    Engines (docs/scale.md): ``engine`` is ``"numpy"``, ``"duckdb"``, ``"spark"`` or an
    open DuckDB connection; ``dataset`` may then be a path/Parquet glob/``DB.duckdb:TABLE``
    (with ``schema``), a DuckDB relation or table name, a Spark DataFrame, or a
    :class:`~dpcg.engines.base.TableEngine` (:func:`dpcg.engines.resolve.resolve_engine`).
    """
    dataset = resolve_engine(dataset, engine, schema=schema, spark_master=spark_master,
                             memory_limit=memory_limit)
    algo = get_algorithm(algorithm)
    given = {k: v for k, v in (("plan_size", plan_size), ("test_epsilon", test_epsilon),
                               ("rule", rule), *options.items()) if v is not None}
    params = make_options(algo.params, given, AlgorithmError)
    if isinstance(ledger, LedgerTarget):
        target = ledger
    elif ledger is not None:
        if not isinstance(ledger, str | os.PathLike):
            raise AlgorithmError(
                f"ledger: expected the path of a ledger file (str or os.PathLike), a "
                f"LedgerTarget or None, got a {type(ledger).__name__}")
        if dataset_id is None:
            raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")
        target = LedgerTarget(Path(ledger), dataset_id, lifetime)
    else:
        target = IN_MEMORY
    test_options = {} if threshold is None else {"threshold": threshold}
    return discover_private(
        dataset, algo, epsilon=epsilon, delta=delta, test=test, alpha=alpha,
        noise_seed=seed, max_depth=max_depth, params=params, test_options=test_options,
        ledger=target, background=background, cache=cache)


def nonprivate_pc(dataset: Dataset, test: str = "kendall-split", *, alpha: float = 0.05,
                  threshold: float | None = None, max_depth: int | None = None,
                  cache: ScoreCache | None = None) -> PCResult:
    """Non-private PC with the same score and threshold (no noise; NOT private)."""
    source = source_for_dataset(dataset, test, alpha=alpha, threshold=threshold, cache=cache)
    return pc_stable(ThresholdCITest(source), tuple(str(n) for n in dataset.names),
                     max_depth=max_depth)

"""``dpcg.discover``: the one Python entry point (every algorithm, every kind of data).

::

    import pandas as pd
    import dpcg
    df = pd.read_csv("survey.csv")
    res = dpcg.discover(df, test="g2")            # non-private PC: the schema is inferred
    print(res.graph.edges, res.to_json()["edges"])

A private algorithm needs a DECLARED schema (``schema=``: a :class:`~dpcg.data.Schema`,
its dict or a JSON file; draft one with ``dpcg schema draft FILE`` and review it) and
records every release in the ledger chosen by THE ledger policy of
:func:`dpcg.private.ledger.ledger_target` (the same as ``dpcg discover``): the durable
default ledger unless ``ledger=`` names another file, or ``ledger=dpcg.NO_LEDGER`` for a
throw-away in-memory experiment.

Data that do not fit in memory stay where they are (docs/scale.md): ``engine=`` counts
the contingency tables with DuckDB (out of core) or Spark (distributed) and only the
small tables reach Python::

    res = dpcg.discover("lake/*.parquet", engine="duckdb", schema="schema.json",
                        algorithm="laplace-pc", epsilon=1.0, dataset_id="lake",
                        memory_limit="2GB")
    res = dpcg.discover(con.sql("SELECT * FROM events"), schema=s)   # a DuckDB relation
    res = dpcg.discover(con, table="events", schema=s)                # a DuckDB table
    res = dpcg.discover(spark.read.parquet("s3://lake/"), schema=s)   # a Spark DataFrame

Every algorithm returns a :class:`DiscoveryResult`; :meth:`DiscoveryResult.to_json` is
the document ``dpcg discover`` writes to ``result.json`` (both are built by
:func:`result_document`). The expert layers (:mod:`dpcg.pc`, :mod:`dpcg.citests`,
:mod:`dpcg.private`) stay importable for finer control.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dpcg.pipeline.data import load_schema
from dpcg.pipeline.request import DEFAULT, NO_LEDGER, NONPRIVATE, DiscoverRequest
from dpcg.pipeline.result import DiscoveryResult, result_document

__all__ = [
    "DEFAULT",
    "NONPRIVATE",
    "NO_LEDGER",
    "DiscoveryResult",
    "discover",
    "load_schema",
    "result_document",
]


def discover(
    data: object,
    *,
    schema: object = None,
    algorithm: str = NONPRIVATE,
    test: str | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    alpha: float = 0.05,
    ledger: str | os.PathLike[str] | None = DEFAULT,
    dataset_id: str | None = None,
    lifetime_epsilon: float | None = None,
    lifetime_delta: float | None = None,
    lifetime_rule: str | None = None,
    noise_seed: int | None = None,
    max_depth: int | None = None,
    columns: Sequence[str] | None = None,
    clip: bool = False,
    engine: object = None,
    table: str | None = None,
    spark_master: str | None = None,
    memory_limit: str | None = None,
    background: object = None,
    max_seconds: float | None = None,
    max_memory: int | str | None = None,
    workers: int | None = None,
    **options: object,
) -> DiscoveryResult:
    """Learn a causal graph (CPDAG) from ``data``.

    ``data``: a pandas DataFrame, a NumPy array (with ``schema=`` or ``columns=``), a
    CSV/TSV/Parquet path, or a :class:`dpcg.data.Dataset`.

    ``algorithm="pc"`` (default) is non-private PC-stable with ``test`` (default: chosen
    from the schema: ``g2`` on discrete columns, ``fisherz`` on continuous ones, the
    registered mixed test on mixed ones); the schema is inferred when none is given
    (nothing is released, so the data may shape it). ``algorithm="auto"`` picks the
    private algorithm and test from the declared schema, ``n`` and the budget
    (docs/choosing.md). Any other ``algorithm`` (``laplace-pc``, ``svt-pc``, ``priv-pc``,
    ``em-pc``, ``curate``, ``private-ci-pc``, ...; ``dpcg discover --list``) is private: it
    needs ``schema=`` (declared, never inferred) and ``epsilon`` (the run's TOTAL budget;
    ``delta`` defaults to the algorithm's), and follows the CLI's ledger policy:
    ``ledger=DEFAULT`` records the run in the default durable ledger, a path records it
    there, ``ledger=dpcg.NO_LEDGER`` (``None``) keeps it in memory only. A recorded run
    needs ``dataset_id`` (the declared id the lifetime budget belongs to);
    ``lifetime_epsilon``/``lifetime_delta`` set the lifetime of a new id,
    ``lifetime_rule="zcdp"`` keeps it in rho (docs/ledger.md, "A zCDP lifetime").
    ``background`` is a :class:`dpcg.pc.background.BackgroundKnowledge`.
    ``max_seconds`` / ``max_memory`` (bytes or ``"2GB"``) bound the run (docs/memory.md):
    past either it stops with the graph so far and says so (a private run decides from a
    public test budget, never from the clock); ``workers`` runs a non-private level's
    tests on that many processes (identical results; default: every usable core, for
    levels that may ask at least 5,000 tests).

    ``engine`` chooses where the contingency tables are counted (docs/scale.md):
    ``"numpy"`` (in memory), ``"duckdb"`` (embedded, out of core; ``memory_limit="2GB"``)
    or ``"spark"`` (``spark_master="spark://host:7077"``, default ``local[2]``), or an open
    DuckDB connection whose relation ``data`` is. Without it, the engine follows from
    ``data``: a DuckDB relation (of the default connection, or of ``engine=con``) or a
    DuckDB connection with ``table="name"`` (or a path ``"wh.duckdb"`` with ``table=``, or
    ``"wh.duckdb:name"``) runs on DuckDB, a ``pyspark.sql.DataFrame`` on its own Spark
    session, a Parquet glob or directory on DuckDB; a private discrete algorithm also
    sends a file larger than a quarter of the RAM to DuckDB. An engine needs ``schema=``
    (declared; a draft is fine for non-private PC) and validates the data against it
    before anything is charged (wrong types, NULLs, values outside the schema: the column
    and the rule are named, never a value, a row or a count). Engines serve the
    discrete algorithms and non-private PC with ``g2``, ``chi2`` or a score test; the
    result, the ledger policy and the guarantee are those of the numpy engine (the ledger
    run's description ends with ``engine=NAME``). DuckDB and Spark are optional extras
    (``dpcg[duckdb]``, ``dpcg[spark]``), imported only when used.

    ``**options`` are the algorithm's ``Params`` fields and the test's option fields
    (the same as the ``dpcg discover`` flags, with ``_`` for ``-``); one that belongs to
    neither is an error.
    """
    from dpcg.pipeline.run import execute

    request = DiscoverRequest.create(
        data, schema=schema, algorithm=algorithm, test=test, epsilon=epsilon, delta=delta,
        alpha=alpha, ledger=ledger, dataset_id=dataset_id, lifetime_epsilon=lifetime_epsilon,
        lifetime_delta=lifetime_delta, lifetime_rule=lifetime_rule, noise_seed=noise_seed,
        max_depth=max_depth,
        columns=columns, clip=clip, engine=engine, table=table, spark_master=spark_master,
        memory_limit=memory_limit, background=background, max_seconds=max_seconds,
        max_memory=max_memory, workers=workers, options=options)
    return execute(request)

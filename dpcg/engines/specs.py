"""Registry entries of the out-of-core table engines (``duckdb``, ``spark``).

Each :class:`~dpcg.engines.base.EngineSpec` builds its engine on a ``(p, n)`` code array
(the conformance suite's constructor, and how a :class:`dpcg.data.Dataset` already in
memory runs on another engine): the codes become integer columns of a table whose schema
declares categories ``0..c-1``, in row order, so a subsample's row indices select the
same rows on every engine. The optional packages are imported only when an engine is
built (``dpcg[duckdb]``, ``dpcg[spark]``): the core install stays light.

:mod:`dpcg.engines.base` registers them (this module does not import it: no circle).
Spark's ``from_codes`` runs on a local session (:func:`local_spark`, ``local[1]`` unless
``DPCG_SPARK_MASTER`` names another master), started once per process and reused.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Categorical, Schema
from dpcg.errors import MissingDependencyError, StatisticInputError

if TYPE_CHECKING:  # optional extras, imported lazily
    from dpcg.engines.duckdb_engine import DuckDBEngine
    from dpcg.engines.spark_engine import SparkEngine

__all__ = ["codes_schema", "duckdb_from_codes", "local_spark", "spark_from_codes",
           "stop_local_spark"]

_SESSIONS: dict[str, Any] = {}


def codes_schema(codes: NDArray[np.integer], cardinalities: Sequence[int],
                 names: Sequence[str]) -> tuple[NDArray[np.int64], Schema]:
    """``(codes as int64, a schema of integer-labelled categoricals 0..c-1)``."""
    arr = np.asarray(codes)
    if arr.ndim != 2 or arr.dtype.kind not in "ui":
        raise StatisticInputError(
            f"codes: expected a (p, n) integer array, got shape {arr.shape} dtype {arr.dtype}")
    cards = [int(c) for c in cardinalities]
    labels = [str(v) for v in names]
    if len(cards) != arr.shape[0] or len(labels) != arr.shape[0]:
        raise StatisticInputError(
            f"cardinalities/names: expected {arr.shape[0]} of each, got {len(cards)} and "
            f"{len(labels)}")
    schema = Schema([Categorical(name, list(range(c))) for name, c in zip(labels, cards,
                                                                            strict=True)])
    return arr.astype(np.int64, copy=False), schema


def duckdb_from_codes(codes: NDArray[np.integer], cardinalities: Sequence[int],
                      names: Sequence[str]) -> DuckDBEngine:
    """A :class:`DuckDBEngine` on an in-memory DuckDB table holding ``codes``."""
    from dpcg.engines.duckdb_engine import DuckDBEngine, _duckdb, _pyarrow

    arr, schema = codes_schema(codes, cardinalities, names)
    pa = _pyarrow()
    con = _duckdb().connect(":memory:")
    frame = pa.table({name: pa.array(arr[j], type=pa.int64())
                      for j, name in enumerate(schema.names)})
    con.register("__dpcg_codes_arrow", frame)
    con.execute("CREATE TABLE __dpcg_codes AS SELECT * FROM __dpcg_codes_arrow")
    con.unregister("__dpcg_codes_arrow")
    return DuckDBEngine.from_table(con, "__dpcg_codes", schema)


def local_spark(master: str | None = None) -> Any:
    """A SparkSession on ``master`` (default ``DPCG_SPARK_MASTER`` or ``local[1]``), one per
    master per process."""
    url = master or os.environ.get("DPCG_SPARK_MASTER") or "local[1]"
    session = _SESSIONS.get(url)
    if session is not None:
        return session
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingDependencyError(
            "the Spark engine needs the optional package 'pyspark'; install it with "
            "`pip install 'dpcg[spark]'`") from None
    session = (
        SparkSession.builder.master(url)
        .appName("dpcg")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    _SESSIONS[url] = session
    return session


def stop_local_spark(session: Any | None = None) -> None:
    """Stop ``session`` (default: every session :func:`local_spark` keeps) and forget it, so
    that the next :func:`local_spark` or ``getOrCreate`` starts a fresh one."""
    targets = list(_SESSIONS.values()) if session is None else [session]
    for target in targets:
        target.stop()
        for url in [u for u, known in _SESSIONS.items() if known is target]:
            del _SESSIONS[url]


def spark_from_codes(codes: NDArray[np.integer], cardinalities: Sequence[int],
                     names: Sequence[str]) -> SparkEngine:
    """A :class:`SparkEngine` on a one-partition DataFrame of ``codes`` (local session)."""
    from dpcg.engines.spark_engine import SparkEngine

    arr, schema = codes_schema(codes, cardinalities, names)
    spark = local_spark()
    ddl = ", ".join(f"`{name.replace('`', '``')}` long" for name in schema.names)
    rows = [tuple(int(v) for v in row) for row in arr.T.tolist()]
    df = spark.createDataFrame(rows, ddl).coalesce(1)
    return SparkEngine.from_dataframe(df, schema, where="codes")

"""Spark table engine: contingency tables counted on a Spark cluster.

:class:`SparkEngine` wraps a ``pyspark`` DataFrame (or reads a Parquet path) on any master
(``local[*]``, ``spark://host:7077``, ...) and answers batches of ``(x, y, S)`` queries
with the exact :class:`~dpcg.stats.contingency.StrataTable`\\ s that
:func:`~dpcg.stats.contingency.contingency_table` returns on the same rows, bit for bit.
The cluster computes ``GROUP BY`` counts; only those small grouped results are collected
to the driver (as Arrow), where NumPy turns them into tables. Noise, filter and ledger
stay on the driver, in ``accounting``.

Counting mirrors :mod:`dpcg.engines.duckdb_engine`: the joint counts of all discrete
columns once (codes cast to the smallest integer type) if they have at most
``joint_limit`` distinct rows (default: as many as fit in :data:`SPARK_JOINT_BYTES` at
``p + 8`` bytes each, at least :data:`JOINT_LIMIT`) (then every batch is a
NumPy marginal of it), otherwise one ``GROUP BY GROUPING SETS`` job per
``sets_per_scan`` distinct column sets of a batch. ``jobs`` counts the Spark jobs that
read the data.

Categories are mapped to codes with the same SQL ``CASE`` expressions as DuckDB, and the
data are validated against the schema by one aggregate of booleans (see
:mod:`dpcg.data.sql_validate`) before the engine exists.

Row order (for :meth:`SparkEngine.subset`):

* a Parquet path: files in increasing path order, rows in file order within a file
  (``_metadata.file_path``, ``_metadata.row_index``) -- the order DuckDB uses for the same
  files;
* a DataFrame: partition by partition (``spark_partition_id()``), rows in partition order
  (``monotonically_increasing_id()``), numbered ``0..n-1`` from per-partition counts taken
  once. This is stable when the DataFrame is deterministic (a file scan, or
  ``persist()``/``checkpoint()``-ed); a DataFrame whose partitioning changes between
  jobs (e.g. after a non-deterministic shuffle) must be checkpointed first.
"""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Schema
from dpcg.data.sql_validate import (
    raise_violations,
    validation_plan,
)
from dpcg.engines.grouped import (
    JOINT_LIMIT,
    MAX_UNION,
    SETS_PER_SCAN,
    GroupedEngine,
    arrow_columns,
    check_subset_rows,
    code_columns,
    violations_of,
)
from dpcg.errors import DataValidationError, MissingDependencyError

if TYPE_CHECKING:  # the optional dependency is imported lazily on purpose
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["JOINT_LIMIT", "MAX_UNION", "SETS_PER_SCAN", "SPARK_JOINT_BYTES", "SparkEngine"]
_ROW = "__dpcg_row"
_FILE = "__dpcg_file"

_ids = itertools.count()


def _functions() -> Any:
    try:
        from pyspark.sql import functions  # optional extra: deferred on purpose
    except ImportError:
        raise MissingDependencyError(
            "the Spark engine needs the optional packages 'pyspark' and 'pyarrow'; install "
            "them with `pip install 'dpcg[spark]'`"
        ) from None
    return functions


def _to_numpy(df: DataFrame) -> dict[str, NDArray[Any]]:
    """Collect a small DataFrame to the driver as NumPy columns (via Arrow)."""
    if hasattr(df, "toArrow"):  # pyspark >= 4
        return arrow_columns(df.toArrow())
    frame: Any = df.toPandas()  # pragma: no cover - pyspark 3.5
    return {str(name): np.asarray(frame[name].to_numpy()) for name in frame.columns}


#: Bytes the joint cache may take on the driver by default: half of Spark's default
#: ``spark.driver.maxResultSize`` (1g), so collecting it never trips that limit.
SPARK_JOINT_BYTES = 512 * 2**20


def _code_spark_type(cardinality: int) -> str:
    """Spark's smallest signed integer type holding the codes ``0..cardinality-1``."""
    return "tinyint" if cardinality <= 128 else "smallint" if cardinality <= 32768 else "int"


class SparkEngine(GroupedEngine):
    """Contingency tables of a Spark DataFrame (see the module docstring).

    Build one with :meth:`from_parquet` or :meth:`from_dataframe`.
    """

    name = "spark"

    def __init__(
        self,
        spark: SparkSession,
        schema: Schema,
        n: int,
        numbered: DataFrame,
        codes: DataFrame,
        code_sql: dict[int, str],
        positions: NDArray[np.int64] | None,
        where: str,
        *,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> None:
        self._spark = spark
        self.schema = schema
        self.n = int(n)
        self.names: tuple[str, ...] = schema.names
        self._numbered = numbered
        self._codes = codes
        self._code_sql = code_sql
        self._positions = positions
        self.where = where
        self._init_counting(schema.cardinalities, joint_limit, sets_per_scan)
        #: Spark jobs that read the data (validation, n, counts).
        self.jobs = 0

    @property
    def scans(self) -> int:
        """Alias of :attr:`jobs` (the DuckDB engine's counter name)."""
        return self.jobs

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_parquet(
        cls,
        spark: SparkSession,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        schema: Schema,
        *,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> SparkEngine:
        """Parquet file(s), directory or glob readable by every executor."""
        F = _functions()
        paths = [str(path)] if isinstance(path, str | os.PathLike) else [str(p) for p in path]
        where = paths[0] if len(paths) == 1 else ", ".join(paths)
        try:
            df = spark.read.parquet(*paths)
        except Exception as exc:  # AnalysisException: no such path, unreadable file
            raise DataValidationError(f"cannot read Parquet {where}: {_first_line(exc)}") from None
        raw = df.withColumn(_FILE, F.col("_metadata.file_path"))
        jobs = _validate(raw, schema, where, _FILE)
        per_file = _to_numpy(raw.groupBy(_FILE).count())
        jobs += 1
        order = np.argsort(per_file[_FILE].astype(str), kind="stable")
        files = per_file[_FILE].astype(str)[order]
        sizes = per_file["count"].astype(np.int64)[order]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        n = int(sizes.sum())
        offset_df = spark.createDataFrame(
            [(str(f), int(o)) for f, o in zip(files, offsets, strict=True)],
            f"{_FILE} string, __dpcg_offset long",
        )
        numbered = (
            df.withColumn(_FILE, F.col("_metadata.file_path"))
            .withColumn("__dpcg_index", F.col("_metadata.row_index"))
            .join(F.broadcast(offset_df), on=_FILE)
            .withColumn(_ROW, F.col("__dpcg_offset") + F.col("__dpcg_index"))
            .drop("__dpcg_offset", "__dpcg_index", _FILE)
        )
        engine = cls._make(spark, schema, n, df, numbered, where, joint_limit, sets_per_scan)
        engine.jobs += jobs
        return engine

    @classmethod
    def from_dataframe(
        cls,
        df: DataFrame,
        schema: Schema,
        *,
        where: str = "DataFrame",
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> SparkEngine:
        """An existing DataFrame (row order: partition, then position; see the module
        docstring)."""
        F = _functions()
        if not isinstance(schema, Schema):
            raise DataValidationError(
                f"schema must be a dpcg.data.Schema, got {type(schema).__name__}"
            )
        jobs = _validate(df, schema, where, None)
        tagged = df.withColumn("__dpcg_pid", F.spark_partition_id()).withColumn(
            "__dpcg_mid", F.monotonically_increasing_id()
        )
        per_part = _to_numpy(tagged.groupBy("__dpcg_pid").count())
        jobs += 1
        order = np.argsort(per_part["__dpcg_pid"].astype(np.int64), kind="stable")
        pids = per_part["__dpcg_pid"].astype(np.int64)[order]
        sizes = per_part["count"].astype(np.int64)[order]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        n = int(sizes.sum())
        spark = df.sparkSession
        offset_df = spark.createDataFrame(
            [(int(p), int(o)) for p, o in zip(pids, offsets, strict=True)],
            "__dpcg_pid int, __dpcg_offset long",
        )
        # monotonically_increasing_id() = (partition id << 33) + position in partition
        numbered = (
            tagged.join(F.broadcast(offset_df), on="__dpcg_pid")
            .withColumn(
                _ROW,
                F.col("__dpcg_offset")
                + F.col("__dpcg_mid")
                - F.shiftleft(F.col("__dpcg_pid").cast("long"), 33),
            )
            .drop("__dpcg_pid", "__dpcg_mid", "__dpcg_offset")
        )
        engine = cls._make(spark, schema, n, df, numbered, where, joint_limit, sets_per_scan)
        engine.jobs += jobs
        return engine

    @classmethod
    def _make(
        cls,
        spark: SparkSession,
        schema: Schema,
        n: int,
        raw: DataFrame,
        numbered: DataFrame,
        where: str,
        joint_limit: int | None,
        sets_per_scan: int,
    ) -> SparkEngine:
        code_sql = code_columns(schema, dict(raw.dtypes), where, "spark")
        return cls(
            spark,
            schema.loaded(),  # counted as loaded: missing categories, indicators, bins
            n,
            numbered,
            _codes(raw, code_sql),
            code_sql,
            None,
            where,
            joint_limit=joint_limit,
            sets_per_scan=sets_per_scan,
        )

    # -- the TableEngine contract -----------------------------------------------------
    def subset(self, rows: NDArray[np.int64]) -> SparkEngine:
        """The engine restricted to the rows at positions ``rows`` of this engine's row
        order (strictly increasing, as drawn by ``accounting``): a left-semi join of the
        numbered rows with the selected positions."""
        absolute = check_subset_rows(rows, self.n, self._positions)
        selection = self._selection(absolute)
        kept = self._numbered.join(selection, on=_ROW, how="left_semi")
        return SparkEngine(
            self._spark,
            self.schema,
            int(absolute.size),
            self._numbered,
            _codes(kept, self._code_sql),
            self._code_sql,
            np.array(absolute, dtype=np.int64),
            self.where,
            joint_limit=self._joint_limit,
            sets_per_scan=self._sets_per_scan,
        )

    def _selection(self, absolute: NDArray[np.int64]) -> DataFrame:
        try:
            import pyarrow as pa  # optional extra (see _functions)

            return self._spark.createDataFrame(pa.table({_ROW: pa.array(absolute, pa.int64())}))
        except (ImportError, TypeError, ValueError):  # pragma: no cover - pyspark 3.5
            pd: Any = importlib.import_module("pandas")  # pyspark 3.5 needs pandas here
            return self._spark.createDataFrame(pd.DataFrame({_ROW: absolute}))

    # -- counting (the strategy: dpcg.engines.grouped.GroupedEngine) --------------------
    def _default_joint_limit(self) -> int:
        """At least :data:`JOINT_LIMIT`, and as many distinct rows as fit in
        :data:`SPARK_JOINT_BYTES` at ``p + 8`` bytes each."""
        return max(JOINT_LIMIT, SPARK_JOINT_BYTES // (len(self._discrete()) + 8))

    def _fetch_joint(self, columns: list[int], limit: int) -> dict[str, NDArray[Any]]:
        F = _functions()
        # grouped and collected in the smallest signed type holding the codes (Spark has
        # no unsigned types): p + 8 bytes per distinct row on the wire and on the driver
        narrow = [
            F.col(f"c{j}").cast(_code_spark_type(int(self._declared[j] or 0))).alias(f"c{j}")
            for j in columns
        ]
        self.jobs += 1
        names = [f"c{j}" for j in columns]
        got = _to_numpy(self._codes.select(*narrow).groupBy(*names).count().limit(limit))
        got["n"] = got.pop("count")
        return got

    def _fetch_sets(
        self, chunk: list[tuple[int, ...]], union: list[int]
    ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
        view = f"__dpcg_codes_{next(_ids)}"
        self._codes.createOrReplaceTempView(view)
        names = ", ".join(f"c{j}" for j in union)
        groups = ", ".join("(" + ", ".join(f"c{j}" for j in s) + ")" for s in chunk)
        # one-argument grouping() per column: independent of the order in which Spark
        # lists the grouping columns (grouping_id(...) is not)
        flags = ", ".join(f"grouping(c{j}) AS g{j}" for j in union)
        self.jobs += 1
        try:
            got = _to_numpy(
                self._spark.sql(
                    f"SELECT {flags}, {names}, count(*) AS n "
                    f"FROM {view} GROUP BY GROUPING SETS ({groups})"
                )
            )
        finally:
            self._spark.catalog.dropTempView(view)
        width = len(union)
        g = np.zeros(got["n"].shape[0], dtype=np.int64)
        for k, j in enumerate(union):
            g |= got[f"g{j}"].astype(np.int64) << (width - 1 - k)
        return got, g


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _codes(df: DataFrame, code_sql: dict[int, str]) -> DataFrame:
    exprs = [f"{sql} AS c{j}" for j, sql in sorted(code_sql.items())]
    return df.selectExpr(*exprs) if exprs else df.selectExpr("1 AS __dpcg_none")


def _validate(df: DataFrame, schema: Schema, where: str, file_column: str | None) -> int:
    """Run the validation plan on the cluster; raise on any violation. Returns jobs."""
    types = dict(df.dtypes)
    plan = validation_plan(schema, types, where, "spark")
    raise_violations(plan.catalogue)
    if not plan.checks:
        return 0
    aggs = [f"{sql} AS r{k}" for k, (_, _, sql) in enumerate(plan.checks)]
    if file_column is not None:
        rows = df.groupBy(file_column).agg(
            *[_functions().expr(sql).alias(f"r{k}") for k, (_, _, sql) in enumerate(plan.checks)]
        ).collect()
        flags = [f"r{k}" for k in range(len(plan.checks))]
        hits = [(_local(str(row[0])), [row[f] for f in flags])
                for row in sorted(rows, key=lambda r: str(r[0]))]
    else:
        (row,) = df.selectExpr(*aggs).collect()
        hits = [(where, [row[f"r{k}"] for k in range(len(plan.checks))])]
    raise_violations(violations_of(plan.checks, hits))
    return 1


def _local(uri: str) -> str:
    """``file:/x/y`` -> ``/x/y`` (other URIs unchanged)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    return uri

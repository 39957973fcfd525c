"""Spark engine on a REAL standalone cluster (master + 2 workers on 127.0.0.1, started
from the scripts inside the pyspark package; see tests/engines/spark_cluster.py): tables
bit-identical to contingency_table, subsets, validation before any budget, and a small
private-style batch whose releases and ledger match the NumPy path exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from accounting import Budget, InMemoryRecorder, Session  # noqa: E402
from accounting.mechanisms import Laplace  # noqa: E402
from dpcg.data import Categorical, Schema  # noqa: E402
from dpcg.engines.spark_engine import SparkEngine  # noqa: E402
from dpcg.errors import DataValidationError  # noqa: E402
from dpcg.stats.contingency import StrataTable, contingency_table  # noqa: E402
from tests.engines.gen import arrow_table, make_data, random_queries, write_parquet  # noqa: E402
from tests.engines.spark_cluster import java_home  # noqa: E402

if java_home() is None:  # pragma: no cover - CI has Java 17
    pytest.skip("Spark needs Java 17", allow_module_level=True)

CARDS = [2, 3, 4, 2, 5, 3]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Schema, np.ndarray, str]:
    schema, codes = make_data(11, CARDS, 3000)
    glob = write_parquet(tmp_path_factory.mktemp("lake"), schema, codes, parts=3)
    return schema, codes, glob


def assert_same(ref: StrataTable, got: StrataTable) -> None:
    assert type(got) is type(ref)  # the same layout (dense, or the non-zero cells)
    assert got.counts.dtype == np.int64
    assert np.array_equal(got.counts, ref.counts)
    assert (got.cx, got.cy, got.n_configs) == (ref.cx, ref.cy, ref.n_configs)


def test_cluster_tables_equal_contingency_table(
    spark: Any, lake: tuple[Schema, np.ndarray, str]
) -> None:
    schema, codes, glob = lake
    rng = np.random.default_rng(5)
    queries = random_queries(rng, len(CARDS), 40)
    queries += queries[:4]
    refs = [contingency_table(codes, CARDS, *q) for q in queries]
    joint = SparkEngine.from_parquet(spark, glob, schema)
    sets = SparkEngine.from_parquet(spark, glob, schema, joint_limit=0, sets_per_scan=32)
    assert joint.n == sets.n == codes.shape[1]
    for engine in (joint, sets):
        before = engine.jobs
        for ref, got in zip(refs, engine.tables(queries), strict=True):
            assert_same(ref, got)
        distinct = len({tuple(sorted((x, y, *S))) for x, y, S in queries})
        expected = 1 if engine is joint else -(-distinct // 32)
        assert engine.jobs - before == expected
    # subsets follow the file order (files sorted by path, rows in file order)
    rows = np.sort(rng.choice(codes.shape[1], 800, replace=False)).astype(np.int64)
    inner = np.sort(rng.choice(800, 150, replace=False)).astype(np.int64)
    for engine in (sets,):  # the joint path on subsets: test_equality.py
        sub = engine.subset(rows)
        for q, got in zip(queries, sub.tables(queries), strict=True):
            assert_same(contingency_table(codes[:, rows], CARDS, *q), got)
        (got,) = sub.subset(inner).tables([(0, 2, (1, 3))])
        assert_same(contingency_table(codes[:, rows[inner]], CARDS, 0, 2, (1, 3)), got)


def test_cluster_dataframe_source(spark: Any, lake: tuple[Schema, np.ndarray, str]) -> None:
    schema, codes, _ = lake
    df = spark.createDataFrame(arrow_table(schema, codes)).repartition(1).cache()
    engine = SparkEngine.from_dataframe(df, schema)
    queries = random_queries(np.random.default_rng(9), len(CARDS), 15)
    for q, got in zip(queries, engine.tables(queries), strict=True):
        assert_same(contingency_table(codes, CARDS, *q), got)
    rows = np.arange(3, codes.shape[1], 5, dtype=np.int64)
    (got,) = engine.subset(rows).tables([(1, 4, (0,))])
    assert_same(contingency_table(codes[:, rows], CARDS, 1, 4, (0,)), got)
    df.unpersist()


def test_cluster_validation_before_budget(spark: Any, tmp_path: Path) -> None:
    schema = Schema([Categorical("a", ["x", "y"]), Categorical("b", [0, 1, 2])])
    recorder = InMemoryRecorder(Budget(1.0))
    Session(Budget(1.0), recorder=recorder, seed=1)
    good = pa.table({"a": ["x", "y"] * 50, "b": [0, 1] * 50})
    pq.write_table(good, tmp_path / "p0.parquet")
    bad = pa.table({"a": ["x"] * 99 + ["hidden"], "b": [0] * 99 + [None]})
    pq.write_table(bad, tmp_path / "p1.parquet")
    with pytest.raises(DataValidationError) as info:
        SparkEngine.from_parquet(spark, str(tmp_path / "p*.parquet"), schema)
    text = str(info.value)
    assert "column 'a'" in text
    assert "rule 'category'" in text
    assert "column 'b'" in text
    assert "rule 'null'" in text
    assert "p1.parquet" in text
    assert "p0.parquet" not in text
    assert "hidden" not in text
    assert "99" not in text.replace(str(tmp_path), "")  # the path is public (pytest-N)
    with pytest.raises(DataValidationError, match="missing_column"):
        SparkEngine.from_parquet(
            spark, str(tmp_path / "p0.parquet"), Schema([*schema, Categorical("c", ["u"])])
        )
    assert recorder.entries == []  # nothing was charged


def _private_batch(tables: list[StrataTable], seed: int) -> tuple[list[Any], InMemoryRecorder]:
    """Release every table's cells with the Laplace mechanism (a histogram: L1 sensitivity
    2 under replace-one), through accounting."""
    recorder = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=recorder, seed=seed)
    out = []
    for k, table in enumerate(tables):
        counts = table.counts.astype(np.float64).reshape(-1)

        def exact(c: np.ndarray = counts) -> np.ndarray:
            return c

        out.append(
            session.release(Laplace(sensitivity=2.0, epsilon=0.1), exact, purpose=f"table {k}")
        )
    return out, recorder


def test_cluster_private_batch_matches_numpy(
    spark: Any, lake: tuple[Schema, np.ndarray, str]
) -> None:
    schema, codes, glob = lake
    engine = SparkEngine.from_parquet(spark, glob, schema, joint_limit=0)
    queries = [(0, 1, ()), (0, 2, (1,)), (3, 4, (0, 5)), (2, 5, (0, 1, 3))]
    spark_out, spark_ledger = _private_batch(engine.tables(queries), seed=2026)
    numpy_tables = [contingency_table(codes, CARDS, *q) for q in queries]
    numpy_out, numpy_ledger = _private_batch(numpy_tables, seed=2026)
    for a, b in zip(spark_out, numpy_out, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert spark_ledger.entries == numpy_ledger.entries
    assert len(spark_ledger.entries) == len(queries)


def test_cluster_joint_cache_with_wide_codes(spark: Any, tmp_path: Path) -> None:
    """Codes are collected in the smallest signed type (tinyint up to 128 categories,
    smallint beyond) and still give numpy's tables; the default joint limit is sized
    by SPARK_JOINT_BYTES."""
    from dpcg.engines.grouped import JOINT_LIMIT
    from dpcg.engines.spark_engine import SPARK_JOINT_BYTES

    cards = [129, 128, 3, 300]
    schema, codes = make_data(29, cards, 2000)
    glob = write_parquet(tmp_path, schema, codes, parts=2)
    engine = SparkEngine.from_parquet(spark, glob, schema)
    assert engine.joint_limit() == max(JOINT_LIMIT, SPARK_JOINT_BYTES // (len(cards) + 8))
    queries = random_queries(np.random.default_rng(3), len(cards), 20, max_s=2)
    before = engine.jobs
    layouts = set()
    for q, got in zip(queries, engine.tables(queries), strict=True):
        assert_same(contingency_table(codes, cards, *q), got)
        layouts.add(type(got).__name__)
    assert engine.jobs - before == 1
    # most of these tables are mostly empty: kept as their non-zero cells, as in memory
    assert layouts == {"StrataTable", "SparseStrataTable"}

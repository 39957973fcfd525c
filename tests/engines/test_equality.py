"""Equality suite: for generated data, NumPy ``contingency_table`` == DuckDB == Spark,
bit for bit -- several cardinalities, conditioning sets of size 0..3 (every size, in
given, not sorted, order), repeated queries in one batch, both counting strategies
(joint cache and GROUPING SETS; Spark's GROUPING SETS path is in test_spark_engine.py),
and subsets (nested)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

duckdb = pytest.importorskip("duckdb")

from dpcg.data import Schema  # noqa: E402
from dpcg.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from dpcg.errors import StatisticInputError  # noqa: E402
from dpcg.stats.contingency import StrataTable, contingency_table  # noqa: E402
from tests.engines.gen import make_data, write_parquet  # noqa: E402

#: (seed, declared cardinalities, rows, files)
CASES = [
    (101, [2, 2, 2, 2, 2], 1500, 1),
    (202, [3, 5, 2, 7, 4, 3], 2500, 2),
    (303, [11, 2, 9, 3, 13], 2000, 3),  # sparse strata: many configurations unobserved
]


def batch(p: int, seed: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Every S size 0..3, S in a shuffled (not sorted) order, some queries repeated."""
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int, tuple[int, ...]]] = []
    for x, y in combinations(range(p), 2):
        rest = [j for j in range(p) if j not in (x, y)]
        for k in range(4):
            if k <= len(rest):
                S = tuple(int(j) for j in rng.permutation(rest)[:k])
                out.append((y, x, S) if rng.random() < 0.5 else (x, y, S))
    return out + out[:: max(1, len(out) // 7)]


def assert_same(ref: StrataTable, got: StrataTable) -> None:
    assert got.counts.dtype == ref.counts.dtype == np.int64
    assert got.counts.shape == ref.counts.shape
    assert np.array_equal(got.counts, ref.counts)
    assert (got.cx, got.cy, got.n_configs) == (ref.cx, ref.cy, ref.n_configs)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Schema, Any, str]]:
    out = []
    for seed, cards, n, parts in CASES:
        schema, codes = make_data(seed, cards, n)
        glob = write_parquet(tmp_path_factory.mktemp(f"eq{seed}"), schema, codes, parts)
        out.append((schema, codes, glob))
    return out


def subset_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, n // 3, replace=False)).astype(np.int64)
    inner = np.sort(rng.choice(rows.size, rows.size // 2, replace=False)).astype(np.int64)
    return rows, inner


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("joint_limit", [2_000_000, 0])
def test_numpy_equals_duckdb(
    datasets: list[tuple[Schema, Any, str]], case: int, joint_limit: int
) -> None:
    schema, codes, glob = datasets[case]
    cards = list(schema.cardinalities)
    queries = batch(len(cards), case)
    engine = DuckDBEngine.from_parquet(glob, schema, joint_limit=joint_limit, threads=1)
    for q, got in zip(queries, engine.tables(queries), strict=True):
        assert_same(contingency_table(codes, cards, *q), got)
    rows, inner = subset_rows(codes.shape[1], case)
    sub = engine.subset(rows)
    for q, got in zip(queries, sub.tables(queries), strict=True):
        assert_same(contingency_table(codes[:, rows], cards, *q), got)
    for q, got in zip(queries, sub.subset(inner).tables(queries), strict=True):
        assert_same(contingency_table(codes[:, rows[inner]], cards, *q), got)


@pytest.mark.slow
def test_numpy_equals_duckdb_equals_spark(
    spark: Any, datasets: list[tuple[Schema, Any, str]], tmp_path: Path
) -> None:
    from dpcg.engines.spark_engine import SparkEngine

    for case, (schema, codes, glob) in enumerate(datasets):
        cards = list(schema.cardinalities)
        queries = batch(len(cards), case)
        rows, inner = subset_rows(codes.shape[1], case)
        duck = DuckDBEngine.from_parquet(glob, schema, threads=1)
        sp = SparkEngine.from_parquet(spark, glob, schema)  # a few Spark jobs per case
        for got_np, got_duck, got_spark in zip(
            [contingency_table(codes, cards, *q) for q in queries],
            duck.tables(queries),
            sp.tables(queries),
            strict=True,
        ):
            assert_same(got_np, got_duck)
            assert_same(got_np, got_spark)
        ref_sub = [contingency_table(codes[:, rows], cards, *q) for q in queries]
        sp_sub = sp.subset(rows)
        for ref, a, b in zip(
            ref_sub, duck.subset(rows).tables(queries), sp_sub.tables(queries), strict=True
        ):
            assert_same(ref, a)
            assert_same(ref, b)
        if case == len(datasets) - 1:  # nested subsets, once
            (got,) = sp_sub.subset(inner).tables([queries[-1]])
            assert_same(contingency_table(codes[:, rows[inner]], cards, *queries[-1]), got)


def test_joint_limit_follows_the_memory_limit(
    datasets: list[tuple[Schema, Any, str]],
) -> None:
    """The default joint-cache limit is derived from DuckDB's memory_limit (never below
    JOINT_LIMIT), and DuckDB's printed sizes are read back exactly enough."""
    from dpcg.engines.duckdb_engine import JOINT_LIMIT, derived_joint_limit, parse_size

    assert parse_size("953.6 MiB") == int(953.6 * 2**20)
    assert parse_size("1.8 GiB") == int(1.8 * 2**30)
    assert parse_size("512 bytes") == 512
    with pytest.raises(StatisticInputError):
        parse_size("lots")
    assert derived_joint_limit(10**6, 37) == JOINT_LIMIT
    assert derived_joint_limit(10**10, 37) == 10**10 // (2 * 45 + 16)
    schema, _, glob = datasets[0]
    small = DuckDBEngine.from_parquet(glob, schema, memory_limit="20MB", threads=1)
    big = DuckDBEngine.from_parquet(glob, schema, memory_limit="4GB", threads=1)
    fixed = DuckDBEngine.from_parquet(glob, schema, joint_limit=7, threads=1)
    p = sum(c > 0 for c in small.cardinalities)
    assert small.joint_limit() == JOINT_LIMIT
    assert big.joint_limit() == derived_joint_limit(parse_size("3.7 GiB"), p)
    assert fixed.joint_limit() == 7


def test_wide_codes_in_the_joint_cache(tmp_path: Path) -> None:
    """Codes above 255 are grouped and fetched as USMALLINT and still give numpy's
    tables (and the subset's)."""
    schema, codes = make_data(505, [300, 3, 2, 257], 3000)
    glob = write_parquet(tmp_path, schema, codes, 2)
    cards = list(schema.cardinalities)
    queries = batch(len(cards), 5)
    engine = DuckDBEngine.from_parquet(glob, schema, threads=1)
    for q, got in zip(queries, engine.tables(queries), strict=True):
        assert_same(contingency_table(codes, cards, *q), got)
    assert engine.scans <= 3  # validation, n, one joint scan


@pytest.mark.parametrize("case", range(len(CASES)))
def test_warmed_tables_equal_and_save_scans(
    datasets: list[tuple[Schema, Any, str]], case: int
) -> None:
    """``warm`` (a level's tests announced ahead of a one-at-a-time stream) counts the
    queries' column sets with the scans of one batch; asking for the tables one by one
    afterwards scans nothing more and gives the same tables."""
    from dpcg.engines.grouped import SETS_PER_SCAN, column_set

    schema, codes, glob = datasets[case]
    cards = list(schema.cardinalities)
    queries = batch(len(cards), case)
    sets = {column_set((x, y, S)) for x, y, S in queries}
    engine = DuckDBEngine.from_parquet(glob, schema, joint_limit=0, threads=1)
    before = engine.scans
    engine.warm(queries)
    warm_scans = engine.scans - before
    assert 1 <= warm_scans <= -(-len(sets) // SETS_PER_SCAN) + 1
    for q in queries:
        (got,) = engine.tables([q])
        assert_same(contingency_table(codes, cards, *q), got)
    assert engine.scans - before == warm_scans  # every table came from the warmed frames
    # without warming, the same stream scans once per query
    cold = DuckDBEngine.from_parquet(glob, schema, joint_limit=0, threads=1)
    start = cold.scans
    for q in queries[:10]:
        cold.tables([q])
    assert cold.scans - start == 10


def test_warm_keeps_a_bounded_number_of_rows(
    datasets: list[tuple[Schema, Any, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``WARM_ROWS`` rows of frames the rest is counted when asked: same tables."""
    import dpcg.engines.grouped as grouped

    monkeypatch.setattr(grouped, "WARM_ROWS", 40)
    schema, codes, glob = datasets[1]
    cards = list(schema.cardinalities)
    queries = batch(len(cards), 1)
    engine = DuckDBEngine.from_parquet(glob, schema, joint_limit=0, threads=1)
    engine.warm(queries)
    assert sum(int(f.counts.shape[0]) for f in engine._warm.values()) <= 40
    for q in queries:
        (got,) = engine.tables([q])
        assert_same(contingency_table(codes, cards, *q), got)
    engine.warm([])  # a new announcement replaces the old one
    assert engine._warm == {}


def test_warm_does_nothing_on_joint_counts(datasets: list[tuple[Schema, Any, str]]) -> None:
    schema, _codes, glob = datasets[0]
    queries = batch(len(schema.cardinalities), 0)
    engine = DuckDBEngine.from_parquet(glob, schema, threads=1)
    engine.warm(queries)
    assert engine._warm == {}
    scans = engine.scans
    engine.tables(queries[:5])
    assert engine.scans == scans  # marginals of the joint counts taken once

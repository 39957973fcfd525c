"""Chunked Parquet samples of a bundled network: deterministic, equal to the per-chunk
samples, readable by the in-memory loader and by the DuckDB engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

from dpcg.data import Categorical, Continuous, Dataset, Schema  # noqa: E402
from dpcg.data.parquet_write import write_parquet_chunks  # noqa: E402
from dpcg.datasets import load_network  # noqa: E402
from dpcg.datasets.parquet_sample import write_sample_parquet  # noqa: E402
from dpcg.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from dpcg.errors import DataValidationError  # noqa: E402
from dpcg.stats.contingency import contingency_table  # noqa: E402


def test_sample_is_the_concatenation_of_seeded_chunks(tmp_path: Path) -> None:
    path = tmp_path / "asia.parquet"
    assert write_sample_parquet("asia", 25_000, path, seed=4, chunk_rows=10_000) == 25_000
    net = load_network("asia")
    children = np.random.SeedSequence(4).spawn(3)
    expected = np.concatenate(
        [
            net.sample(m, np.random.default_rng(c)).codes
            for m, c in zip((10_000, 10_000, 5_000), children, strict=True)
        ],
        axis=1,
    )
    data = Dataset.from_parquet(path, net.schema())
    assert np.array_equal(data.codes, expected)
    again = tmp_path / "again.parquet"
    write_sample_parquet("asia", 25_000, again, seed=4, chunk_rows=10_000)
    assert again.read_bytes() == path.read_bytes()
    assert not (tmp_path / "asia.parquet.partial").exists()
    engine = DuckDBEngine.from_parquet(str(path), net.schema(), threads=1)
    cards = net.cardinalities
    queries = [(0, 1, ()), (2, 3, (4,)), (5, 7, (1, 6)), (0, 7, (2, 3, 4))]
    for q, got in zip(queries, engine.tables(queries), strict=True):
        assert np.array_equal(got.counts, contingency_table(expected, cards, *q).counts)


def test_writer_rejects_bad_input_and_leaves_no_file(tmp_path: Path) -> None:
    schema = Schema([Categorical("a", ["u", "v"]), Continuous("z", 0, 1)])
    path = tmp_path / "t.parquet"
    ok = np.array([[0, 1, 1], [0.5, 0.25, 1.0]])
    assert write_parquet_chunks(schema, [ok, ok], path) == 6
    data = Dataset.from_parquet(path, schema)
    assert data.n == 6
    bad = tmp_path / "bad.parquet"
    with pytest.raises(DataValidationError):
        write_parquet_chunks(schema, [ok, np.zeros((3, 2))], bad)
    assert not bad.exists()
    assert not (tmp_path / "bad.parquet.partial").exists()
    for kwargs in ({"rows": 0}, {"rows": 10, "chunk_rows": 0}, {"rows": 10, "seed": -1}):
        with pytest.raises(DataValidationError):
            write_sample_parquet("asia", path=tmp_path / "x.parquet", **kwargs)

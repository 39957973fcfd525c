"""Seeded test data for the engine suites (synthetic, not privacy noise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from dpcg.data import Categorical, Column, Continuous, Ordinal, Schema


def labels_of(j: int, c: int) -> list[str]:
    return [f"s{j}_{k}" for k in range(c)]


def make_data(
    seed: int, cards: list[int], n: int
) -> tuple[Schema, NDArray[np.int64]]:
    """A schema of text categoricals (and one integer-labelled ordinal) and skewed codes."""
    rng = np.random.default_rng(seed)
    cols: list[Column] = []
    for j, c in enumerate(cards):
        if j == 1:
            cols.append(Ordinal(f"v{j}", [str(k) for k in range(c)]))
        else:
            cols.append(Categorical(f"v{j}", labels_of(j, c)))
    codes = np.empty((len(cards), n), dtype=np.int64)
    for j, c in enumerate(cards):
        probs = rng.dirichlet(np.full(c, 0.7))
        base = rng.choice(c, size=n, p=probs)
        if j > 0:  # some dependence on the previous column
            base = np.where(rng.random(n) < 0.4, codes[j - 1] % c, base)
        codes[j] = base
    return Schema(cols), codes


def arrow_table(schema: Schema, codes: NDArray[np.int64]) -> pa.Table:
    """Text labels for categoricals, int64 values for the integer-labelled ordinal."""
    arrays = {}
    for j, col in enumerate(schema):
        if isinstance(col, Ordinal):
            arrays[col.name] = pa.array(codes[j], type=pa.int64())
        else:
            assert not isinstance(col, Continuous)
            labels = np.asarray(col.labels, dtype=object)
            arrays[col.name] = pa.array(labels[codes[j]], type=pa.string())
    return pa.table(arrays)


def write_parquet(
    directory: Path, schema: Schema, codes: NDArray[np.int64], parts: int = 1
) -> str:
    """Split the rows into ``parts`` files ``part-000.parquet`` ... (file order = row order);
    returns the glob."""
    table = arrow_table(schema, codes)
    n = table.num_rows
    bounds = np.linspace(0, n, parts + 1).astype(int)
    for k in range(parts):
        pq.write_table(
            table.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k])),
            directory / f"part-{k:03d}.parquet",
            row_group_size=max(1, n // (3 * parts) + 1),
        )
    return str(directory / "part-*.parquet")


def random_queries(
    rng: np.random.Generator, p: int, count: int, max_s: int = 3
) -> list[tuple[int, int, tuple[int, ...]]]:
    out: list[tuple[int, int, tuple[int, ...]]] = []
    for _ in range(count):
        k = int(rng.integers(0, max_s + 1))
        cols = rng.choice(p, size=k + 2, replace=False)
        out.append((int(cols[0]), int(cols[1]), tuple(int(c) for c in cols[2:])))
    return out

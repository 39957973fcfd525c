"""From grouped counts to :class:`~dpcg.stats.contingency.StrataTable`s (shared by the
out-of-core engines).

An engine that counts where the data live (DuckDB, Spark) answers a batch of ``(x, y, S)``
queries with ``GROUP BY`` results: for a set of columns ``T``, the distinct observed
code combinations of ``T`` and their counts (a *grouped frame*). Every query whose columns
``{x, y} | S`` are a subset of ``T`` is a marginal of that frame; this module turns a
frame into the exact table :func:`~dpcg.stats.contingency.contingency_table` would return
on the raw codes:

* strata are the observed configurations of ``S`` (in the order given), indexed in mixed
  radix of ``S``'s declared cardinalities and sorted increasingly -- only configurations
  with a positive count appear, as in ``contingency_table``;
* counts are summed with ``np.bincount(..., weights=...)``: float64 sums of integers are
  exact below ``2**53``, far above :data:`~dpcg.stats.contingency.MAX_ROWS`, and are
  converted back to int64.

It also plans a batch: the distinct column sets, and chunks of them for one
``GROUPING SETS`` query each. Everything here depends on the public queries and the
declared cardinalities only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import MAX_ROWS, StrataTable

__all__ = [
    "GroupedFrame",
    "Query",
    "check_queries",
    "chunk_sets",
    "marginal_frame",
    "small_codes",
    "table_from_frame",
    "union_order",
]

Query = tuple[int, int, tuple[int, ...]]


@dataclass(frozen=True)
class GroupedFrame:
    """Distinct observed combinations of ``columns`` (codes, one int array per column, in
    ``columns`` order; any integer dtype, the smallest that holds the cardinality keeps a
    cached joint small) with their positive counts."""

    columns: tuple[int, ...]
    codes: Mapping[int, NDArray[np.integer[Any]]]
    counts: NDArray[np.int64]


def check_queries(
    queries: Sequence[tuple[int, int, Sequence[int]]],
    cardinalities: Sequence[int | None],
) -> list[Query]:
    """Validate a batch (column indices, distinct, discrete); normalised to tuples."""
    p = len(cardinalities)
    out: list[Query] = []
    for q in queries:
        try:
            x, y, S = q
        except (TypeError, ValueError):
            raise StatisticInputError(f"a query is a triple (x, y, S), got {q!r}") from None
        S_t = tuple(S)
        for name, j in (("x", x), ("y", y), *(("S", j) for j in S_t)):
            if isinstance(j, bool) or not isinstance(j, int | np.integer) or not 0 <= j < p:
                raise StatisticInputError(f"{name}={j!r} is not a column index in [0, {p})")
        if x == y or x in S_t or y in S_t or len(set(S_t)) != len(S_t):
            raise StatisticInputError(f"x={x}, y={y} and S={S_t} must be distinct columns")
        for j in (x, y, *S_t):
            c = cardinalities[j]
            if c is None:
                raise StatisticInputError(
                    f"column {j} is continuous; contingency tables need discrete columns"
                )
        n_configs = 1
        for j in S_t:
            c = cardinalities[j]
            assert c is not None
            if n_configs > (1 << 62) // c:
                raise StatisticInputError(
                    f"conditioning set {S_t} has more than 2^62 configurations"
                )
            n_configs *= c
        out.append((int(x), int(y), tuple(int(j) for j in S_t)))
    return out


def column_set(query: Query) -> tuple[int, ...]:
    """The sorted columns a query needs."""
    x, y, S = query
    return tuple(sorted((x, y, *S)))


def chunk_sets(
    sets: Sequence[tuple[int, ...]], max_sets: int, max_union: int
) -> list[list[tuple[int, ...]]]:
    """Greedy chunks of at most ``max_sets`` column sets whose union has at most
    ``max_union`` columns (the ``GROUPING(...)`` bitmask must fit in 63 bits)."""
    chunks: list[list[tuple[int, ...]]] = []
    current: list[tuple[int, ...]] = []
    union: set[int] = set()
    for s in sets:
        grown = union | set(s)
        if current and (len(current) >= max_sets or len(grown) > max_union):
            chunks.append(current)
            current, union, grown = [], set(), set(s)
        current.append(s)
        union = grown
    if current:
        chunks.append(current)
    return chunks


def union_order(chunk: Sequence[tuple[int, ...]]) -> list[int]:
    """The columns of a chunk of grouping sets in order of first appearance: the order in
    which Spark lists the grouping columns (its ``grouping_id(...)`` must name them in
    exactly that order); DuckDB accepts any order."""
    return list(dict.fromkeys(j for s in chunk for j in s))


def grouping_id(group: tuple[int, ...], union: Sequence[int]) -> int:
    """Value of SQL ``GROUPING(union...)`` on the rows of grouping set ``group``: bit
    ``len(union) - 1 - k`` is set when ``union[k]`` is *not* grouped."""
    width = len(union)
    members = set(group)
    return sum(1 << (width - 1 - k) for k, j in enumerate(union) if j not in members)


#: Dense marginalisation (one weighted ``bincount``) while the marginal has at most
#: ``max(DENSE_MIN, DENSE_PER_ROW * k)`` cells for ``k`` grouped rows; sparse above.
DENSE_MIN = 1 << 16
DENSE_PER_ROW = 4


def marginal_frame(
    frame: GroupedFrame, columns: tuple[int, ...], cardinalities: Sequence[int | None]
) -> GroupedFrame:
    """The grouped counts of ``columns`` (a subset of ``frame.columns``): the distinct
    observed combinations and their summed counts, in increasing mixed-radix order.

    One pass over the frame's ``k`` rows: a weighted ``bincount`` over the mixed-radix
    key when the marginal has few cells, ``np.unique`` of the key otherwise. Sums of
    integer counts in float64 are exact below ``2**53`` (see the module docstring)."""
    if columns == frame.columns:
        return frame
    k = int(frame.counts.shape[0])
    cards = [int(cardinalities[j] or 0) for j in columns]
    cells = 1
    for c in cards:
        cells *= c
    key = np.zeros(k, dtype=np.int64)
    for j, c in zip(columns, cards, strict=True):
        key *= c
        key += frame.codes[j]
    weights = frame.counts.astype(np.float64)
    if cells <= max(DENSE_MIN, DENSE_PER_ROW * k):
        summed = np.bincount(key, weights=weights, minlength=cells)
        keys = np.flatnonzero(summed).astype(np.int64)
        counts = np.rint(summed[keys]).astype(np.int64)
    else:
        keys, inverse = np.unique(key, return_inverse=True)
        counts = np.rint(
            np.bincount(inverse.reshape(-1), weights=weights, minlength=keys.shape[0])
        ).astype(np.int64)
    codes: dict[int, NDArray[np.integer[Any]]] = {}
    rest = keys.copy()
    for j, c in zip(reversed(columns), reversed(cards), strict=True):
        codes[j] = rest % c
        rest //= c
    return GroupedFrame(columns, codes, counts)


def small_codes(values: NDArray[Any], cardinality: int) -> NDArray[np.integer[Any]]:
    """Codes in the smallest unsigned dtype holding ``0..cardinality-1``."""
    dtype = np.uint8 if cardinality <= 256 else np.uint16 if cardinality <= 65536 else np.int64
    return np.asarray(values).astype(dtype)


def table_from_frame(
    frame: GroupedFrame,
    cardinalities: Sequence[int | None],
    query: Query,
) -> StrataTable:
    """The ``contingency_table`` of ``query`` from a grouped frame over a superset of its
    columns (bit-identical)."""
    x, y, S = query
    cx = int(cardinalities[x] or 0)
    cy = int(cardinalities[y] or 0)
    n_configs = 1
    for j in S:
        n_configs *= int(cardinalities[j] or 0)
    counts = frame.counts
    if int(counts.sum()) > MAX_ROWS:
        raise StatisticInputError(f"more than {MAX_ROWS} rows: exact int64 counts not guaranteed")
    k = int(counts.shape[0])
    if k == 0:
        return StrataTable(np.zeros((0, cx, cy), dtype=np.int64), cx, cy, n_configs)
    s = np.zeros(k, dtype=np.int64)
    for j in S:
        s *= int(cardinalities[j] or 0)
        s += frame.codes[j]
    strata, inverse = np.unique(s, return_inverse=True)
    cell = inverse.reshape(-1).astype(np.int64) * cx
    cell += frame.codes[x]
    cell *= cy
    cell += frame.codes[y]
    total = int(strata.shape[0]) * cx * cy
    summed = np.bincount(cell, weights=counts.astype(np.float64), minlength=total)
    table = np.rint(summed).astype(np.int64).reshape(int(strata.shape[0]), cx, cy)
    return StrataTable(table, cx, cy, n_configs)

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
  converted back to int64;
* a table whose observed strata would span far more cells than there are rows is kept
  as its non-zero cells (:class:`~dpcg.stats.contingency.SparseStrataTable`), by the
  rule the in-memory builder applies
  (:func:`~dpcg.stats.contingency.keeps_sparse`): a frame's rows already are those cells.

It also plans a batch: the distinct column sets, and chunks of them for one
``GROUPING SETS`` query each. Everything here depends on the public queries and the
declared cardinalities only.

:class:`GroupedEngine` is what the DuckDB and Spark engines share: the
``tables(queries)`` contract answered either from the joint counts taken once or from
``GROUPING SETS`` chunks, the split of a grouping-sets result into one frame per set, and
the check of a subsample's row positions. An engine supplies only how to run the two
queries (:meth:`GroupedEngine._fetch_joint`, :meth:`GroupedEngine._fetch_sets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Schema
from dpcg.data.sql_validate import Dialect, Violation, loaded_code_columns
from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import MAX_ROWS, SparseStrataTable, StrataTable, keeps_sparse

__all__ = [
    "JOINT_LIMIT",
    "MAX_UNION",
    "SETS_PER_SCAN",
    "WARM_ROWS",
    "GroupedEngine",
    "GroupedFrame",
    "Query",
    "arrow_columns",
    "check_queries",
    "check_subset_rows",
    "chunk_sets",
    "code_columns",
    "marginal_frame",
    "small_codes",
    "table_from_frame",
    "union_order",
    "violations_of",
]

Query = tuple[int, int, tuple[int, ...]]

#: Distinct joint rows kept in memory for the joint cache (about ``p + 8`` bytes each).
JOINT_LIMIT = 2_000_000
#: Rows of grouped frames :meth:`GroupedEngine.warm` keeps at most (those of the joint
#: counts' default limit).
WARM_ROWS = JOINT_LIMIT
#: Grouping sets per ``GROUPING SETS`` query.
SETS_PER_SCAN = 64
#: ``GROUPING(...)`` is a bitmask of at most this many columns.
MAX_UNION = 62


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
    return np.asarray(values).astype(dtype, copy=False)


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
    n_strata = int(strata.shape[0])
    cell = inverse.reshape(-1).astype(np.int64) * cx
    cell += frame.codes[x]
    cell *= cy
    cell += frame.codes[y]
    weights = counts.astype(np.float64)
    if keeps_sparse(n_strata, cx * cy, int(counts.sum())):
        # the frame's rows are already the non-zero cells: no dense array at all
        keys, where = np.unique(cell, return_inverse=True)
        weight = np.rint(np.bincount(where.reshape(-1), weights=weights,
                                     minlength=keys.shape[0])).astype(np.int64)
        return SparseStrataTable((keys // (cx * cy)).astype(np.intp),
                                 (keys % (cx * cy)).astype(np.intp), weight, n_strata,
                                 cx, cy, n_configs)
    summed = np.bincount(cell, weights=weights, minlength=n_strata * cx * cy)
    table = np.rint(summed).astype(np.int64).reshape(n_strata, cx, cy)
    return StrataTable(table, cx, cy, n_configs)


def arrow_columns(table: Any) -> dict[str, NDArray[Any]]:
    """The columns of a (small, collected) ``pyarrow.Table`` as NumPy arrays."""
    return {
        name: np.asarray(table.column(name).to_numpy(zero_copy_only=False))
        for name in table.column_names
    }


def check_subset_rows(
    rows: NDArray[np.integer[Any]], n: int, positions: NDArray[np.int64] | None
) -> NDArray[np.int64]:
    """Validate a subsample's row indices (1-D, integer, strictly increasing, in
    ``[0, n)``) and return the absolute row positions they select (through
    ``positions`` for an engine that is itself a subset)."""
    idx = np.asarray(rows)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise StatisticInputError("subset rows must be a 1-D integer array")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= n):
        raise StatisticInputError(f"subset rows must lie in [0, {n})")
    if idx.size > 1 and not bool(np.all(np.diff(idx) > 0)):
        raise StatisticInputError("subset rows must be strictly increasing")
    return idx if positions is None else positions[idx]


class GroupedEngine:
    """The counting shared by the out-of-core engines (module docstring).

    A subclass sets the attributes of :meth:`_init_counting` and implements
    :meth:`_fetch_joint` and :meth:`_fetch_sets`; the strategy (joint counts once if they
    have at most ``joint_limit`` distinct rows, else ``GROUPING SETS`` chunks of at most
    ``sets_per_scan`` sets) and its result never depend on which engine runs it."""

    n: int
    #: Declared cardinalities (``None``: a continuous column).
    _declared: tuple[int | None, ...]
    #: ``None``: :meth:`_default_joint_limit` decides
    _joint_limit: int | None
    _sets_per_scan: int
    _joint: GroupedFrame | None
    _joint_tried: bool
    #: ``(x, y, S)`` queries answered.
    queries: int

    def _init_counting(
        self, declared: tuple[int | None, ...], joint_limit: int | None, sets_per_scan: int
    ) -> None:
        self._declared = declared
        self._joint_limit = None if joint_limit is None else int(joint_limit)
        self._sets_per_scan = max(1, int(sets_per_scan))
        self._joint = None
        self._joint_tried = False
        self._warm: dict[tuple[int, ...], GroupedFrame] = {}
        self.queries = 0

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Declared number of categories of each column (public; ``0`` marks a continuous
        column, which no query may name)."""
        return tuple(0 if c is None else int(c) for c in self._declared)

    def tables(self, queries: Sequence[tuple[int, int, Sequence[int]]]) -> list[StrataTable]:
        """The exact tables of a batch of ``(x, y, S)`` queries, in order."""
        batch = check_queries(queries, self._declared)
        self.queries += len(batch)
        if not batch:
            return []
        self._try_joint()
        sets = sorted({column_set(q) for q in batch})
        if self._joint is not None:
            joint = self._joint
            frames = {s: marginal_frame(joint, s, self._declared) for s in sets}
        else:
            frames = {s: self._warm[s] for s in sets if s in self._warm}
            missing = [s for s in sets if s not in frames]
            if missing:
                frames.update(self._count_sets(missing))
        return [table_from_frame(frames[column_set(q)], self._declared, q) for q in batch]

    def warm(self, queries: Sequence[tuple[int, int, Sequence[int]]]) -> None:
        """Count the column sets of ``queries`` ahead of the :meth:`tables` calls that
        will ask for them one at a time (a private tester streaming a level's tests:
        :meth:`dpcg.citests.private.StatisticSource.expect`), with the scans one batch
        would use, and keep the frames for those calls; the tables themselves are built
        only when asked. Replaces the frames of an earlier call. Frames are kept while
        their rows add up to at most :data:`WARM_ROWS` (public), so memory stays
        bounded; a set past that is counted when asked, as before. With the joint counts
        in hand nothing is done: a query is then a marginal of them, without a scan."""
        batch = check_queries(queries, self._declared)
        self._warm = {}
        self._try_joint()
        if self._joint is not None or not batch:
            return
        sets = sorted({column_set(q) for q in batch})
        budget = WARM_ROWS
        kept: dict[tuple[int, ...], GroupedFrame] = {}
        for chunk in chunk_sets(sets, self._sets_per_scan, MAX_UNION):
            for s, frame in self._count_sets(chunk).items():
                budget -= int(frame.counts.shape[0])
                if budget < 0:
                    self._warm = kept
                    return
                kept[s] = frame
        self._warm = kept

    def _try_joint(self) -> None:
        if self._joint is None and not self._joint_tried:
            self._joint_tried = True
            self._joint = self._count_joint()

    # -- what an engine supplies -------------------------------------------------------
    def _fetch_joint(self, columns: list[int], limit: int) -> dict[str, NDArray[Any]]:
        """``GROUP BY`` all ``columns`` (codes ``c{j}``) with ``count(*)`` as ``n``, at most
        ``limit`` groups."""
        raise NotImplementedError

    def _fetch_sets(
        self, chunk: list[tuple[int, ...]], union: list[int]
    ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
        """One ``GROUP BY GROUPING SETS`` query over ``chunk`` (columns ``c{j}``, count
        ``n``) and the SQL ``GROUPING(union...)`` value of each result row."""
        raise NotImplementedError

    # -- the shared strategy -----------------------------------------------------------
    def _discrete(self) -> list[int]:
        return [j for j, c in enumerate(self._declared) if c is not None]

    def joint_limit(self) -> int:
        """Distinct joint rows the joint cache may hold: the ``joint_limit`` the engine was
        built with, else the engine's default (:meth:`_default_joint_limit`)."""
        return self._default_joint_limit() if self._joint_limit is None else self._joint_limit

    def _default_joint_limit(self) -> int:
        return JOINT_LIMIT

    def _count_joint(self) -> GroupedFrame | None:
        cols = self._discrete()
        limit = self.joint_limit()
        if not cols or limit < 1:
            return None
        got = self._fetch_joint(cols, limit + 1)
        counts = got["n"].astype(np.int64, copy=False)
        if counts.shape[0] > limit:
            return None
        codes = {j: small_codes(got.pop(f"c{j}"), int(self._declared[j] or 0)) for j in cols}
        return GroupedFrame(tuple(cols), codes, counts)

    def _count_sets(self, sets: list[tuple[int, ...]]) -> dict[tuple[int, ...], GroupedFrame]:
        frames: dict[tuple[int, ...], GroupedFrame] = {}
        for chunk in chunk_sets(sets, self._sets_per_scan, MAX_UNION):
            union = union_order(chunk)
            got, g = self._fetch_sets(chunk, union)
            for s in chunk:
                mask = g == grouping_id(s, union)
                codes = {j: got[f"c{j}"][mask].astype(np.int64) for j in s}
                frames[s] = GroupedFrame(s, codes, got["n"][mask].astype(np.int64))
        return frames


def code_columns(
    schema: Schema, types: Mapping[str, str], where: str, dialect: Dialect
) -> dict[int, str]:
    """The SQL expression of each discrete column's codes (``0..c-1``), by column
    position in ``schema.loaded()`` (the schema with its missing policies and bins
    applied; ``schema`` itself when it has none), for a source whose SQL types are
    ``types``."""
    return loaded_code_columns(schema, types, where, dialect)


def violations_of(
    checks: Sequence[tuple[str, str, str]], hits: Iterable[tuple[str, Sequence[object]]]
) -> list[Violation]:
    """The violated ``(column, rule, where)`` of a validation query: ``hits`` gives, per
    source (a file, or the whole source), one boolean per check of the plan."""
    return [
        Violation(column, rule, where)
        for where, row in hits
        for (column, rule, _), hit in zip(checks, row, strict=True)
        if hit
    ]

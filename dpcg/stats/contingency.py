"""Stratified contingency tables in one pass.

For a query ``(x, y, S)`` on a ``(p, n)`` array of category codes, every row gets one
combined ``int64`` index: the configuration of ``S`` in mixed radix of the ``S``
columns' declared cardinalities, then ``x``, then ``y``. One ``np.bincount`` over that
index gives the ``(n_strata, cx, cy)`` table. Only **observed** strata (configurations
of ``S`` that occur in the data) are kept; when the number of possible configurations
is large compared with ``n`` the rows' indices are sorted instead (one ``np.sort``;
the runs of equal indices are the non-zero cells and the observed strata), so that
memory stays ``O(n + n_strata cx cy)``; when even the observed strata would span far
more cells than there are rows, the table is kept as its non-zero cells
(:class:`SparseStrataTable`, ``O(n)``).

Everything downstream (:mod:`dpcg.stats.discrete`, :mod:`dpcg.stats.kendall`,
:mod:`dpcg.stats.spearman`) works on the 3-D table, vectorised across strata.

Cardinalities are the *declared* (public) ones from the schema, never read off the
data; codes outside ``[0, cardinality)`` raise :class:`StatisticInputError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError

#: Dense bincount is used while ``n_configs * cx * cy`` is at most this many cells,
#: or at most :data:`DENSE_CELLS_PER_ROW` cells per row; above that the rows' indices
#: are sorted and only the observed configurations are kept.
DENSE_CELLS_MIN = 1 << 16
DENSE_CELLS_PER_ROW = 4
#: Above this many cells per row (and :data:`DENSE_CELLS_MIN`), a table of the observed
#: strata is kept as its non-zero cells (:class:`SparseStrataTable`).
SPARSE_CELLS_PER_ROW = 16

#: Exact integer arithmetic in int64 (concordance counts up to n^2/2) is guaranteed
#: for n up to this many rows.
MAX_ROWS = 2_000_000_000


@dataclass(frozen=True)
class StrataTable:
    """Counts of ``(x, y)`` per observed configuration of ``S``.

    * ``counts``: ``(n_strata, cx, cy)`` int64; ``n_strata >= 1`` whenever ``n >= 1``.
    * ``cx``, ``cy``: declared cardinalities of ``x`` and ``y``.
    * ``n_configs``: number of possible configurations of ``S`` (product of the
      declared cardinalities; 1 for empty ``S``). Public.
    """

    counts: NDArray[np.int64]
    cx: int
    cy: int
    n_configs: int

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.counts.sum())

    @property
    def n_strata(self) -> int:
        """Number of observed configurations of ``S``."""
        return int(self.counts.shape[0])

    def stratum_sizes(self) -> NDArray[np.int64]:
        return np.asarray(self.counts.sum(axis=(1, 2)), dtype=np.int64)

    def x_margins(self) -> NDArray[np.int64]:
        """``(n_strata, cx)`` counts of each x level per stratum."""
        return np.asarray(self.counts.sum(axis=2), dtype=np.int64)

    def y_margins(self) -> NDArray[np.int64]:
        """``(n_strata, cy)`` counts of each y level per stratum."""
        return np.asarray(self.counts.sum(axis=1), dtype=np.int64)


class SparseStrataTable(StrataTable):
    """A :class:`StrataTable` kept as its non-zero cells, for tables that are mostly
    empty (many observed strata of high-cardinality variables: a dense
    ``(n_strata, cx, cy)`` array would take far more memory than the rows).

    * ``stratum``, ``cell``, ``weight``: one entry per non-zero cell, sorted by
      ``(stratum, cell)``; ``cell = x * cy + y``; ``weight`` the count (>= 1);
    * ``k``: the number of observed strata (every one has an entry).

    ``counts`` is materialised on first access (same array as the dense layout), so every
    statistic works on it; the split Kendall numerators
    (:func:`dpcg.stats.kendall.split_kendall_u`), the G- and chi-square tests, ``df``,
    ``n CMI`` (:mod:`dpcg.stats.discrete`) and the Spearman statistics
    (:mod:`dpcg.stats.spearman`), the G^2 decision distance
    (:mod:`dpcg.stats.g2_distance`) and Kendall's concordance counts
    (:func:`dpcg.stats.kendall.concordance`) read the entries directly: no statistic of
    the project materialises it.
    The margins and sizes below never materialise it.
    """

    stratum: NDArray[np.intp]
    cell: NDArray[np.intp]
    weight: NDArray[np.int64]
    k: int

    def __init__(self, stratum: NDArray[np.intp], cell: NDArray[np.intp],
                 weight: NDArray[np.int64], k: int, cx: int, cy: int,
                 n_configs: int) -> None:
        for name, value in (("stratum", stratum), ("cell", cell), ("weight", weight),
                            ("k", int(k)), ("cx", int(cx)), ("cy", int(cy)),
                            ("n_configs", int(n_configs))):
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> NDArray[np.int64]:
        # only reached for attributes not set in __init__: the dense counts
        if name != "counts":
            raise AttributeError(name)
        flat = np.zeros(self.k * self.cx * self.cy, dtype=np.int64)
        flat[self.stratum * (self.cx * self.cy) + self.cell] = self.weight
        dense: NDArray[np.int64] = flat.reshape(self.k, self.cx, self.cy)
        object.__setattr__(self, "counts", dense)
        return dense

    @property
    def n(self) -> int:
        return int(self.weight.sum())

    @property
    def n_strata(self) -> int:
        return self.k

    def _per_stratum(self, level: NDArray[np.intp], c: int) -> NDArray[np.int64]:
        """``(k, c)`` sums of the counts by stratum and ``level`` (``c`` levels)."""
        idx = self.stratum * c + level
        return np.bincount(idx, weights=self.weight, minlength=self.k * c
                           ).astype(np.int64).reshape(self.k, c)

    def stratum_sizes(self) -> NDArray[np.int64]:
        return np.bincount(self.stratum, weights=self.weight, minlength=self.k
                           ).astype(np.int64)

    def levels(self) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """The x and y level of every entry."""
        return self.cell // self.cy, self.cell % self.cy

    def x_margins(self) -> NDArray[np.int64]:
        return self._per_stratum(self.cell // self.cy, self.cx)

    def y_margins(self) -> NDArray[np.int64]:
        return self._per_stratum(self.cell % self.cy, self.cy)


def keeps_sparse(n_strata: int, cells: int, n: int) -> bool:
    """Whether a table of ``n_strata`` observed strata of ``cells`` cells each, built from
    ``n`` rows, is kept as its non-zero cells (:class:`SparseStrataTable`): more than
    ``max(DENSE_CELLS_MIN, SPARSE_CELLS_PER_ROW * n)`` cells. Every table engine applies
    this one rule, so the layout of a table never depends on the engine that built it."""
    return n_strata * cells > max(DENSE_CELLS_MIN, SPARSE_CELLS_PER_ROW * n)


def _check_cardinality(name: str, c: object) -> int:
    if isinstance(c, bool) or not isinstance(c, int | np.integer) or int(c) < 1:
        raise StatisticInputError(
            f"cardinality of {name} must be a positive int (declared in the schema), got {c!r}"
        )
    return int(c)


def _codes_of(name: str, col: NDArray[Any], card: int, check: bool) -> NDArray[Any]:
    """Validate an integer code array (dtype, and range if ``check``); returned as is."""
    if col.dtype.kind not in "ui":
        raise StatisticInputError(f"{name} must hold integer category codes, got {col.dtype}")
    if check and col.size:
        lo, hi = int(col.min()), int(col.max())
        if lo < 0 or hi >= card:
            raise StatisticInputError(
                f"{name} has code {lo if lo < 0 else hi} outside its declared range [0, {card})"
            )
    return col


#: Rows are spread over this many sub-histograms ("lanes", row ``i`` in lane ``i mod
#: LANES``) before the bincount and summed afterwards: on skewed data consecutive rows hit
#: the same counter, and the lanes break that dependency chain (about 1.6x faster on
#: alarm-like data).
LANES = 8


@lru_cache(maxsize=4)
def _lane_ids(n: int) -> NDArray[np.intp]:
    """``arange(n) % LANES`` (depends on the public ``n`` only)."""
    out = (np.arange(n, dtype=np.intp) % LANES).astype(np.intp)
    out.setflags(write=False)
    return out


def _mixed_radix(cols: Sequence[tuple[NDArray[Any], int]], n: int) -> NDArray[np.intp]:
    """Horner evaluation of the mixed-radix index of ``cols`` (``(codes, radix)``)."""
    if not cols:
        return np.zeros(n, dtype=np.intp)
    acc = cols[0][0].astype(np.intp)
    for col, c in cols[1:]:
        acc *= c
        acc += col
    return acc


#: A row's whole index ``(s * cx + x) * cy + y`` fits one int64 below this many cells.
_ONE_KEY_MAX = 1 << 62


def _from_sorted_keys(key: NDArray[np.intp], n: int, cx: int, cy: int, n_configs: int
                      ) -> StrataTable:
    """The table of the observed strata from the rows' whole indices, by one sort: the
    runs of equal indices are the non-zero cells (in ``(stratum, cell)`` order), and a
    new stratum starts wherever the configuration part changes. Dense or sparse by
    :func:`keeps_sparse`; the counts are exact integers either way."""
    cells = cx * cy
    key.sort()
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    weight = np.diff(np.append(starts, n)).astype(np.int64)
    whole = key[starts]
    config = whole // cells
    cell = whole - config * cells
    stratum = np.concatenate(([0], np.cumsum(config[1:] != config[:-1]))).astype(np.intp)
    k = int(stratum[-1]) + 1
    if keeps_sparse(k, cells, n):
        return SparseStrataTable(stratum, cell.astype(np.intp, copy=False), weight, k,
                                 cx, cy, n_configs)
    flat = np.zeros(k * cells, dtype=np.int64)
    flat[stratum * cells + cell] = weight
    return StrataTable(flat.reshape(k, cx, cy), cx, cy, n_configs)


def _build(
    s_cols: Sequence[tuple[NDArray[Any], int]],
    n_configs: int,
    xc: NDArray[Any],
    yc: NDArray[Any],
    cx: int,
    cy: int,
) -> StrataTable:
    """One bincount over ``lane * cells_total + (s * cx + x) * cy + y`` (or over the
    index alone when the lanes' histograms would not fit the dense limit)."""
    n = int(xc.shape[0])
    cells = cx * cy
    if n == 0:
        return StrataTable(np.zeros((0, cx, cy), dtype=np.int64), cx, cy, n_configs)
    limit = max(DENSE_CELLS_MIN, DENSE_CELLS_PER_ROW * n)
    if n_configs * cells <= limit:
        k = n_configs
        acc = _mixed_radix([*s_cols, (xc, cx), (yc, cy)], n)
        compress = n_configs > 1
    elif n_configs * cells < _ONE_KEY_MAX:
        return _from_sorted_keys(_mixed_radix([*s_cols, (xc, cx), (yc, cy)], n), n,
                                 cx, cy, n_configs)
    else:
        # the whole index would overflow: number the observed configurations first
        _, inverse = np.unique(_mixed_radix(s_cols, n), return_inverse=True)
        key = inverse.reshape(-1).astype(np.intp) * cx
        key += xc
        key *= cy
        key += yc
        return _from_sorted_keys(key, n, cx, cy, n_configs)
    total = k * cells
    if total * LANES <= limit:
        # lane-major (lane * total + index): the lanes' histograms are contiguous rows,
        # summed by LANES - 1 vectorised adds (a (total, LANES) layout summed along its
        # short axis took 2.3x as long at 50,000 cells)
        acc += _lane_ids(n) * total
        counts = np.bincount(acc, minlength=total * LANES).reshape(LANES, total).sum(axis=0)
    else:
        counts = np.bincount(acc, minlength=total)
    table = counts.astype(np.int64, copy=False).reshape(k, cx, cy)
    if compress:
        # the observed strata (counts are >= 0: a stratum's sum is > 0 iff any cell is;
        # einsum + compress instead of any(axis=(1, 2)), 3-4x faster on short axes)
        keep = np.einsum("sc->s", table.reshape(k, cells)) > 0
        table = np.compress(keep, table, axis=0)
    return StrataTable(table, cx, cy, n_configs)


def table_with_prefix(
    codes: NDArray[Any],
    cardinalities: Sequence[int],
    x: int,
    y: int,
    prefix: tuple[NDArray[np.intp], int],
    last: int,
) -> StrataTable:
    """:func:`contingency_table` of ``(x, y | S)`` on validated codes, given the
    mixed-radix index of ``S[:-1]`` and its number of configurations (``prefix``, from
    :func:`stratum_index`) and ``last = S[-1]``. Horner's rule extends the prefix's
    index by one column, so the index of ``S`` and hence the table are exactly those of
    :func:`contingency_table`; consecutive tests of PC-stable share ``S[:-1]``, and the
    prefix's ``|S| - 1`` passes over the rows are saved for all but the first of them.
    No range check (the codes come from a validated engine)."""
    index, configs = prefix
    c = _check_cardinality(f"column {last}", cardinalities[last])
    if configs > (1 << 62) // c:
        raise StatisticInputError("a conditioning set has more than 2^62 configurations")
    cx = _check_cardinality(f"column {x}", cardinalities[x])
    cy = _check_cardinality(f"column {y}", cardinalities[y])
    return _build([(index, configs), (codes[last], c)], configs * c, codes[x], codes[y],
                  cx, cy)


def stratum_index(
    codes: NDArray[Any],
    cardinalities: Sequence[int | None],
    S: Sequence[int],
    *,
    check: bool = True,
) -> tuple[NDArray[np.intp], int]:
    """Mixed-radix index of the configuration of ``S`` per row, and the number of
    possible configurations (product of declared cardinalities)."""
    cols, n_configs = _s_columns(codes, cardinalities, S, check)
    return _mixed_radix(cols, int(codes.shape[1])), n_configs


def _s_columns(
    codes: NDArray[Any],
    cardinalities: Sequence[int | None],
    S: Sequence[int],
    check: bool,
) -> tuple[list[tuple[NDArray[Any], int]], int]:
    cols: list[tuple[NDArray[Any], int]] = []
    n_configs = 1
    for j in S:
        c = _check_cardinality(f"column {j}", cardinalities[j])
        if n_configs > (1 << 62) // c:
            raise StatisticInputError(
                f"conditioning set {tuple(S)} has more than 2^62 configurations"
            )
        cols.append((_codes_of(f"column {j}", codes[j], c, check), c))
        n_configs *= c
    return cols, n_configs


def table_from_codes(
    x: NDArray[Any],
    y: NDArray[Any],
    strata: NDArray[Any] | None,
    cx: int,
    cy: int,
    n_configs: int = 1,
    *,
    check: bool = True,
) -> StrataTable:
    """Stratified table from 1-D code arrays ``x``, ``y`` and stratum labels in
    ``[0, n_configs)`` (``None`` = a single stratum)."""
    cx = _check_cardinality("x", cx)
    cy = _check_cardinality("y", cy)
    xa = np.asarray(x)
    ya = np.asarray(y)
    if xa.ndim != 1 or ya.shape != xa.shape:
        raise StatisticInputError(
            f"x and y must be 1-D arrays of equal length, got shapes {xa.shape} and {ya.shape}"
        )
    n = int(xa.shape[0])
    if n > MAX_ROWS:
        raise StatisticInputError(f"n={n} rows exceeds the supported maximum {MAX_ROWS}")
    xc = _codes_of("x", xa, cx, check)
    yc = _codes_of("y", ya, cy, check)
    if strata is None:
        return _build([], 1, xc, yc, cx, cy)
    n_configs = _check_cardinality("n_configs", n_configs)
    sa = np.asarray(strata)
    if sa.shape != xa.shape:
        raise StatisticInputError(
            f"strata must have the same shape as x, got {sa.shape} and {xa.shape}"
        )
    sc = _codes_of("strata", sa, n_configs, check)
    return _build([(sc, n_configs)], n_configs, xc, yc, cx, cy)


def contingency_table(
    codes: NDArray[Any],
    cardinalities: Sequence[int | None],
    x: int,
    y: int,
    S: Sequence[int] = (),
    *,
    check: bool = True,
) -> StrataTable:
    """The ``(n_strata, cx, cy)`` table of columns ``x``, ``y`` per observed
    configuration of the columns ``S`` of a ``(p, n)`` code array.

    ``cardinalities[j]`` is column ``j``'s declared number of categories. With
    ``check=False`` the range check of the codes is skipped (use only on codes
    already validated, e.g. those of a :class:`dpcg.data.Dataset`).
    """
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise StatisticInputError(f"codes must be a (p, n) array, got shape {arr.shape}")
    p, n = arr.shape
    if len(cardinalities) != p:
        raise StatisticInputError(
            f"got {len(cardinalities)} cardinalities for {p} columns"
        )
    if n > MAX_ROWS:
        raise StatisticInputError(f"n={n} rows exceeds the supported maximum {MAX_ROWS}")
    for name, j in (("x", x), ("y", y), *(("S", j) for j in S)):
        if isinstance(j, bool) or not isinstance(j, int | np.integer) or not 0 <= j < p:
            raise StatisticInputError(f"{name}={j!r} is not a column index in [0, {p})")
    if x == y or x in S or y in S or len(set(S)) != len(S):
        raise StatisticInputError(f"x={x}, y={y} and S={tuple(S)} must be distinct columns")
    cx = _check_cardinality(f"column {x}", cardinalities[x])
    cy = _check_cardinality(f"column {y}", cardinalities[y])
    xc = _codes_of(f"column {x}", arr[x], cx, check)
    yc = _codes_of(f"column {y}", arr[y], cy, check)
    cols, n_configs = _s_columns(arr, cardinalities, S, check)
    return _build(cols, n_configs, xc, yc, cx, cy)



#: Largest table (``n_configs * cx * cy`` cells) :class:`PairTables` counts: its row
#: keys are ``uint16`` (a fifth of the memory traffic of ``int64`` keys).
PAIR_TABLE_CELLS = 1 << 16
#: Largest joint table :meth:`PairTables.tables` counts to serve several sets at once
#: (summing a joint of this many cells costs far less than a pass over 100K rows).
JOINT_CELLS = 1 << 13
#: ... or up to this many times one table's cells (a deep level's tables are larger).
JOINT_TABLES = 6
#: At most this many sets share one joint (one-level columns add no cells).
JOINT_LASTS = 16


class PairTables:
    """The tables of one pair ``(x, y)`` for many conditioning sets, sharing the
    encoding and the counting (issue 59: PC asks a pair every subset of its adjacency at
    a level, in lexicographic order, so consecutive sets share ``S[:-1]``).

    * Every row's key ``(s * cx + x) * cy + y`` is built in ``uint16`` from the key
      ``x * cy + y`` (made once per pair) and the mixed-radix index of the prefix
      ``S[:-1]`` (made once per prefix): a table costs two ``uint16`` passes and one
      ``bincount``.
    * :meth:`tables` serves consecutive sets ``P + (l_1,)``, ..., ``P + (l_w,)`` that
      share the prefix ``P`` with **one** ``bincount``: of the joint key of
      ``(P, l_1, ..., l_w, x, y)`` (at most :data:`JOINT_CELLS` cells), whose exact
      integer sums over all ``l_j`` but one are the tables of the sets.

    The tables are those of :func:`contingency_table` (the same ``int64`` counts of the
    observed strata, in the same order and layout: dense, as ``contingency_table``
    keeps every table of at most :data:`DENSE_CELLS_MIN` cells), so any statistic of
    them is bit for bit the same. A set whose table has more than
    :data:`PAIR_TABLE_CELLS` cells gets ``None`` (the caller counts it another way).
    Codes are not checked (validated data). Memory: ``uint16`` arrays of ``n`` (the
    prefix caches keep ``3 * PREFIXES`` of them, the scaled columns ``SCALED``: 13 MB
    at 100K rows).
    """

    PREFIXES = 4
    #: Scaled columns kept (:meth:`_scaled`; ``2 n`` bytes each).
    SCALED = 64

    def __init__(self, codes: NDArray[Any], cardinalities: Sequence[int], x: int,
                 y: int) -> None:
        self.codes = codes
        self.cards = cardinalities
        self.x, self.y = x, y
        self.cx, self.cy = int(cardinalities[x]), int(cardinalities[y])
        self.cxy = self.cx * self.cy
        n = int(codes.shape[1])
        self.n = n
        self._xy: NDArray[np.uint16] | None = None
        self._prefix: dict[tuple[tuple[int, ...], int], NDArray[np.uint16]] = {}
        self._indices: dict[tuple[int, ...], NDArray[np.uint16]] = {}
        self._key = np.empty(n, dtype=np.uint16)
        self._scaled_cache: dict[tuple[int, int], NDArray[np.uint16]] = {}

    def _xy_key(self) -> NDArray[np.uint16]:
        xy = self._xy
        if xy is None:
            xy = np.multiply(self.codes[self.x], self.cy, dtype=np.uint16, casting="unsafe")
            np.add(xy, self.codes[self.y], out=xy, casting="unsafe")
            self._xy = xy
        return xy

    def _base(self, prefix: tuple[int, ...], radix: int) -> NDArray[np.uint16]:
        """``index(prefix) * radix * cxy + xy`` per row (cached): the key of a table
        whose variables after the prefix span ``radix`` configurations, less theirs."""
        key = (prefix, radix)
        hit = self._prefix.get(key)
        if hit is not None:
            return hit
        xy = self._xy_key()
        if not prefix:
            out = xy
        else:
            out = np.multiply(self._index(prefix), radix * self.cxy, dtype=np.uint16,
                              casting="unsafe")
            np.add(out, xy, out=out)
        if len(self._prefix) >= self.PREFIXES:
            del self._prefix[next(iter(self._prefix))]
        self._prefix[key] = out
        return out

    def _index(self, prefix: tuple[int, ...]) -> NDArray[np.uint16]:
        """The mixed-radix index of ``prefix`` per row, by Horner's rule from that of
        ``prefix[:-1]`` when it is cached (lexicographic sets change the last
        variable of their prefix most often)."""
        hit = self._indices.get(prefix)
        if hit is not None:
            return hit
        codes, cards = self.codes, self.cards
        head = prefix[:-1]
        last = prefix[-1]
        out: NDArray[np.uint16]
        if not head:
            out = codes[last].astype(np.uint16)
        else:
            up = self._indices.get(head)
            if up is None:
                up = self._index(head)
            out = np.multiply(up, cards[last], dtype=np.uint16, casting="unsafe")
            np.add(out, codes[last], out=out, dtype=np.uint16, casting="unsafe")
        if len(self._indices) >= 2 * self.PREFIXES:
            del self._indices[next(iter(self._indices))]
        self._indices[prefix] = out
        return out

    def _scaled(self, j: int, mult: int) -> NDArray[np.uint16]:
        """``codes[j] * mult`` in ``uint16`` (cached: a pair's joints multiply the same
        few columns by the same few radices over and over)."""
        hit = self._scaled_cache.get((j, mult))
        if hit is None:
            hit = np.multiply(self.codes[j], mult, dtype=np.uint16, casting="unsafe")
            if len(self._scaled_cache) >= self.SCALED:
                del self._scaled_cache[next(iter(self._scaled_cache))]
            self._scaled_cache[(j, mult)] = hit
        return hit

    def _counts(self, prefix: tuple[int, ...], lasts: Sequence[int]) -> NDArray[np.int64]:
        """Dense counts over ``(prefix, *lasts, x, y)`` (one ``bincount``)."""
        cards = self.cards
        radix = 1
        for j in lasts:
            radix *= int(cards[j])
        configs = radix
        for j in prefix:
            configs *= int(cards[j])
        base = self._base(prefix, radix)
        if lasts:
            key = self._key
            mult = radix * self.cxy
            for i, j in enumerate(lasts):
                mult //= int(cards[j])
                np.add(base if i == 0 else key, self._scaled(j, mult), out=key)
        else:
            key = base
        flat = np.bincount(key, minlength=configs * self.cxy)
        return flat.astype(np.int64, copy=False)

    def _layout(self, flat: NDArray[np.int64], configs: int) -> Margined:
        """The counts of the observed strata, laid out as :func:`contingency_table` lays
        them out, with their exact margins (:func:`strata_margins`)."""
        counts = flat.reshape(configs, self.cx, self.cy)
        ns, nx, ny = strata_margins(counts)
        if configs > 1:
            keep = ns > 0  # the observed strata (a stratum is observed iff its size > 0)
            if not keep.all():
                return Margined(counts[keep], ns[keep], nx[keep], ny[keep], configs)
        return Margined(np.ascontiguousarray(counts), ns, nx, ny, configs)

    def _configs(self, S: Sequence[int]) -> int:
        configs = 1
        for s in S:
            configs *= int(self.cards[s])
        return configs

    def table(self, S: tuple[int, ...]) -> StrataTable | None:
        """The table of ``(x, y | S)`` (``None`` above :data:`PAIR_TABLE_CELLS`)."""
        m = self.margined(S)
        return None if m is None else m.table(self.cx, self.cy)

    def margined(self, S: tuple[int, ...]) -> Margined | None:
        """:meth:`table` as its counts with their margins."""
        configs = self._configs(S)
        if configs * self.cxy > PAIR_TABLE_CELLS:
            return None
        if not S:
            return self._layout(self._counts((), ()), 1)
        return self._layout(self._counts(S[:-1], S[-1:]), configs)

    def tables(self, sets: Sequence[tuple[int, ...]]) -> list[StrataTable | None]:
        """The table of each set of ``sets`` (``None`` above :data:`PAIR_TABLE_CELLS`),
        consecutive sets with a common prefix counted together (class docstring)."""
        return list(self.iter_tables(sets))

    def iter_tables(self, sets: Sequence[tuple[int, ...]]) -> Iterator[StrataTable | None]:
        """:meth:`tables`, lazily (:meth:`iter_margined`)."""
        cx, cy = self.cx, self.cy
        for m in self.iter_margined(sets):
            yield None if m is None else m.table(cx, cy)

    def iter_margined(self, sets: Sequence[tuple[int, ...]]) -> Iterator[Margined | None]:
        """The tables of ``sets`` with their exact margins (:class:`Margined`; ``None``
        above :data:`PAIR_TABLE_CELLS`), lazily (:meth:`iter_counts`)."""
        for d in self.iter_counts(sets):
            yield None if d is None else self._layout(*d)

    def iter_counts(self, sets: Sequence[tuple[int, ...]]
                    ) -> Iterator[tuple[NDArray[np.int64], int] | None]:
        """The dense counts of each set of ``sets`` over **all** configurations of ``S``
        (``(n_configs * cx * cy,)`` ``int64``, axes ``(S..., x, y)``) with ``n_configs``;
        ``None`` above :data:`PAIR_TABLE_CELLS`. Lazily: a joint is counted when its
        first set is reached, so a caller that stops early (a pair's first separating
        set) counts at most the rest of one joint in vain. A joint's tables are its sums
        over all lasts but one, by ``np.einsum`` (exact integer sums; ``ndarray.sum``
        over the middle axes of a 5-axis array took 3-8x as long)."""
        cards = self.cards
        i = 0
        m = len(sets)
        while i < m:
            S = sets[i]
            if not S:
                yield self._counts((), ()), 1
                i += 1
                continue
            prefix = S[:-1]
            pconf = self._configs(prefix)
            cells = pconf * self.cxy * int(cards[S[-1]])
            if cells > PAIR_TABLE_CELLS:
                yield None  # counted by the caller
                i += 1
                continue
            # the run of following sets with this prefix whose joint stays small (at
            # least two sets' worth at deep levels, whose single tables pass JOINT_CELLS)
            cap = min(max(JOINT_CELLS, JOINT_TABLES * cells), PAIR_TABLE_CELLS)
            lasts = [S[-1]]
            j = i + 1
            while j < m:
                T = sets[j]
                if (len(T) != len(S) or T[:-1] != prefix or T[-1] in lasts
                        or len(lasts) >= JOINT_LASTS):
                    break
                c = int(cards[T[-1]])
                if cells * c > cap:
                    break
                lasts.append(T[-1])
                cells *= c
                j += 1
            if len(lasts) == 1:
                yield self._counts(prefix, lasts), pconf * int(cards[S[-1]])
                i += 1
                continue
            w = len(lasts)
            shape = (pconf, *(int(cards[v]) for v in lasts), self.cxy)
            joint = self._counts(prefix, lasts).reshape(shape)
            axes = list(range(w + 2))  # (prefix, last_1, ..., last_w, xy)
            for k in range(w):
                table = np.einsum(joint, axes, [0, 1 + k, w + 1])
                yield table.reshape(-1), pconf * shape[1 + k]
            i = j


class StackedTables(NamedTuple):
    """Several tables of one pair, their observed strata stacked: ``counts``
    ``(K, cx, cy)`` ``int64`` (C-contiguous; table ``t`` is
    ``counts[bounds[t]:bounds[t + 1]]``, laid out as :func:`contingency_table` lays it
    out) with the exact margins of every stratum; what
    :func:`dpcg.stats.discrete.g2_tests_stacked` reads."""

    counts: NDArray[np.int64]
    ns: NDArray[np.int64]
    nx: NDArray[np.int64]
    ny: NDArray[np.int64]
    bounds: NDArray[np.intp]


def stack_observed(dense: Sequence[tuple[NDArray[np.int64], int]], cx: int, cy: int
                   ) -> StackedTables:
    """The tables of :meth:`PairTables.iter_counts` (dense counts over all
    configurations, with their number) stacked, keeping each table's observed strata
    (every stratum of a table of one configuration, as :func:`contingency_table`
    does): one margin sum and one selection for all of them."""
    if not dense:
        none = np.zeros((0, cx, cy), dtype=np.int64)
        return StackedTables(none, none[:, 0, 0], none[:, :, 0], none[:, 0, :],
                             np.zeros(1, dtype=np.intp))
    configs = np.fromiter((c for _, c in dense), dtype=np.intp, count=len(dense))
    cells = cx * cy
    full = np.concatenate([d for d, _ in dense]).reshape(-1, cells)
    keep = np.einsum("sc->s", full) > 0  # a stratum is observed iff it has rows
    starts = np.zeros(len(dense) + 1, dtype=np.intp)
    np.cumsum(configs, out=starts[1:])
    single = starts[:-1][configs == 1]
    keep[single] = True
    kept = np.zeros(keep.shape[0] + 1, dtype=np.intp)
    np.cumsum(keep, out=kept[1:])
    bounds = kept[starts]
    if not bool(keep.all()):
        full = np.compress(keep, full, axis=0)  # whole rows: one copy per stratum
    counts = full.reshape(-1, cx, cy)
    ns, nx, ny = strata_margins(counts)
    return StackedTables(counts, ns, nx, ny, bounds)


class Margined(NamedTuple):
    """A table's counts of the observed strata (``(k, cx, cy)`` ``int64``, C-contiguous,
    laid out as :func:`contingency_table` lays them out) with their exact margins
    ``N[s, +, +]``, ``N[s, i, +]``, ``N[s, +, j]`` and the number of configurations of
    ``S``: what :func:`dpcg.stats.discrete.g2_test_margined` reads."""

    counts: NDArray[np.int64]
    ns: NDArray[np.int64]
    nx: NDArray[np.int64]
    ny: NDArray[np.int64]
    n_configs: int

    def table(self, cx: int, cy: int) -> StrataTable:
        return StrataTable(self.counts, cx, cy, self.n_configs)


#: Up to this many levels of ``x`` or ``y``, :func:`strata_margins` sums the counts by
#: slices (one vectorised add per level); above it by ``np.einsum``.
_SLICE_LEVELS = 8


def strata_margins(counts: NDArray[np.int64]
                   ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``(N[s, +, +], N[s, i, +], N[s, +, j])`` of a ``(k, cx, cy)`` ``int64`` table:
    exact integer sums (the same values as ``counts.sum(axis=...)``, which reduces the
    short inner axes 5-10x more slowly)."""
    _, cx, cy = counts.shape
    if cx > _SLICE_LEVELS or cy > _SLICE_LEVELS:
        nx = np.einsum("sij->si", counts)
        return np.einsum("si->s", nx), nx, np.einsum("sij->sj", counts)
    nx = counts[:, :, 0].copy()
    for j in range(1, cy):
        nx += counts[:, :, j]
    ny = counts[:, 0, :].copy()
    for i in range(1, cx):
        ny += counts[:, i, :]
    ns = nx[:, 0].copy()
    for i in range(1, cx):
        ns += nx[:, i]
    return ns, nx, ny

"""Bitset contingency tables: the same tables as :func:`dpcg.stats.contingency_table`,
built faster for the small tables PC asks for on discrete data.

Each category ``k`` of each column is packed once into a bitset of the ``n`` rows
(``W = ceil(n / 64)`` words). The count of cell ``(s, i, j)`` is then
``popcount(B[S = s] & B[x = i] & B[y = j])``: a few vectorised ``&`` and
``np.bitwise_count`` passes over ``cells x W`` words instead of a ``bincount`` over
``n`` row indices. Configurations of ``S`` without rows are dropped as soon as they
appear (so large ``S`` stay cheap when the data are sparse in them), and the table
keeps the observed strata in mixed-radix order of ``S``, exactly like
:func:`~dpcg.stats.contingency.contingency_table`, so the statistic computed from it is
bit-for-bit the same. When the table would be large (more than
:data:`MAX_BITSET_CELLS` cells) or NumPy lacks ``bitwise_count`` (< 2.0), the
``bincount`` path of :mod:`dpcg.stats.contingency` is used.

Alarm, 100K rows, one process, per table: ~0.03 / 0.06 / 0.13 / 0.36 ms at
``|S| = 0 / 1 / 2 / 3`` against 0.31 / 0.37 / 0.43 / 0.50 ms with ``bincount``.
Exact counts are integers, so there is no accuracy trade-off; only public quantities
(cardinalities, ``n``) choose the path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.nonprivate import G2Test
from dpcg.stats.contingency import StrataTable
from dpcg.stats.discrete import ChiSquareResult, chi2_test

#: Largest number of (stratum, x, y) cells built with bitsets; above it, bincount.
MAX_BITSET_CELLS = 256

_HAS_POPCOUNT = hasattr(np, "bitwise_count")
_ALL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def pack_column(codes: NDArray[Any], cardinality: int) -> NDArray[np.uint64]:
    """``(cardinality, W)`` bitsets: bit ``r`` of row ``k`` is set iff ``codes[r] == k``."""
    n = int(codes.shape[0])
    onehot = codes[None, :] == np.arange(cardinality, dtype=codes.dtype)[:, None]
    bits = np.packbits(onehot, axis=1, bitorder="little")
    packed = np.zeros((cardinality, 8 * ((n + 63) // 64)), dtype=np.uint8)
    packed[:, : bits.shape[1]] = bits  # zero padding up to whole 64-bit words
    out = packed.view(np.uint64)
    assert out.shape == (cardinality, (n + 63) // 64)
    return out


def _and_outer(a: NDArray[np.uint64], b: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Rows ``a[i] & b[j]`` in row-major ``(i, j)`` order (mixed radix, ``b`` fastest)."""
    out: NDArray[np.uint64] = (a[:, None, :] & b[None, :, :]).reshape(-1, b.shape[1])
    return out


def _popcount_rows(cells: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Set bits per row over the last axis (uint32 accumulation: 2x faster than int64;
    exact, since a row holds at most ``n < 2^32`` set bits)."""
    out: NDArray[np.int64] = np.bitwise_count(cells).sum(axis=-1, dtype=np.uint32).astype(
        np.int64)
    return out


class BitsetTables:
    """Lazily packed bitsets of the columns of a ``(p, n)`` code array."""

    def __init__(self, codes: NDArray[Any] | None, cardinalities: tuple[int, ...], *,
                 column: Callable[[int], NDArray[Any]] | None = None) -> None:
        """``codes``: the ``(p, n)`` codes, or ``None`` with ``column(j)`` returning
        column ``j``'s codes (e.g. gathered lazily from a subsample)."""
        if codes is None and column is None:
            raise ValueError("BitsetTables needs codes or a column getter")
        self.codes = codes
        self.cardinalities = cardinalities
        self._column = column
        self._bits: dict[int, NDArray[np.uint64]] = {}
        self._last_pair: tuple[tuple[int, int], NDArray[np.uint64]] | None = None

    def bits(self, j: int) -> NDArray[np.uint64]:
        b = self._bits.get(j)
        if b is None:
            col = self._column(j) if self._column is not None else self.codes[j]  # type: ignore[index]
            b = pack_column(col, self.cardinalities[j])
            self._bits[j] = b
        return b

    def usable(self, x: int, y: int, S: tuple[int, ...]) -> bool:
        """Whether the bitset path applies (decided from public cardinalities only)."""
        if not _HAS_POPCOUNT:
            return False
        cells = self.cardinalities[x] * self.cardinalities[y]
        for s in S:
            cells *= self.cardinalities[s]
            if cells > MAX_BITSET_CELLS:
                return False
        return cells <= MAX_BITSET_CELLS

    def table(self, x: int, y: int, S: tuple[int, ...]) -> StrataTable:
        """The stratified table of ``x`` and ``y`` per observed configuration of ``S``."""
        n_configs = 1
        acc: NDArray[np.uint64] | None = None  # (observed configs so far, W)
        for s in S:
            bs = self.bits(s)
            n_configs *= self.cardinalities[s]
            acc = bs if acc is None else _and_outer(acc, bs)
            keep = acc.any(axis=1)
            if not keep.all():
                acc = acc[keep]
        cx, cy = self.cardinalities[x], self.cardinalities[y]
        xy = self._pair(x, y)  # (cx * cy, W)
        if acc is None:
            counts = _popcount_rows(xy).reshape(1, cx, cy)
        else:
            cells = acc[:, None, :] & xy[None, :, :]  # (k, cx * cy, W)
            counts = _popcount_rows(cells).reshape(-1, cx, cy)
        return StrataTable(np.ascontiguousarray(counts, dtype=np.int64), cx, cy, n_configs)

    def _pair(self, x: int, y: int) -> NDArray[np.uint64]:
        """``B[x = i] & B[y = j]`` for all ``(i, j)``; the last pair is kept, since PC
        asks all of a pair's conditioning sets one after the other."""
        if self._last_pair is not None and self._last_pair[0] == (x, y):
            return self._last_pair[1]
        xy = _and_outer(self.bits(x), self.bits(y))
        self._last_pair = ((x, y), xy)
        return xy


class FastG2Test(G2Test):
    """:class:`~dpcg.citests.nonprivate.G2Test` with bitset tables (same results)."""

    _tables: BitsetTables | None = None

    def _bitset_table(self, x: int, y: int, S: tuple[int, ...], *, checked: bool = False
                      ) -> StrataTable | None:
        if not checked:
            x, y, S = validate_query(x, y, S, self.p)
        if self._tables is None:
            self._tables = BitsetTables(self.codes, self.cardinalities)
        if not self._tables.usable(x, y, S):
            return None
        return self._tables.table(x, y, S)

    def table(self, x: int, y: int, S: tuple[int, ...] = ()) -> StrataTable:
        t = self._bitset_table(x, y, S)
        return super().table(x, y, S) if t is None else t

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        # called by test() with a validated, normalised query: no second validation
        t = self._bitset_table(x, y, S, checked=True)
        r = self._stat(super().table(x, y, S) if t is None else t)
        return CIResult(r.pvalue > self.alpha, r.statistic, r.pvalue)


class FastChi2Test(FastG2Test):
    """:class:`~dpcg.citests.nonprivate.Chi2Test` with bitset tables (same results)."""

    def _stat(self, t: StrataTable) -> ChiSquareResult:
        return chi2_test(t)

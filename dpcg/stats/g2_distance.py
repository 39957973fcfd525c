"""Signed distance to the G^2 decision: a sensitivity-1 statistic whose ceiling is G^2.

The G-test of ``X _||_ Y | S`` on a stratified table ``T`` says *dependent* when
``p = P(chi2_df > G^2) <= alpha`` (``df`` by causal-learn's rule over the observed strata,
exactly as :func:`dpcg.stats.discrete.g2_test` and :class:`dpcg.citests.G2Test`). This
module releases, instead of ``G^2``, a computable lower bound on **how many rows must be
replaced to flip that decision**:

* dependent ``T``: ``s(T) = min(L(T), n) >= 1`` where ``L(T)`` is the smallest ``t >= 1``
  such that the ladder bound ``m_t(T)`` (a lower bound on ``G^2 - q(df)`` over every table
  within ``t`` replacements) is ``<= 0``;
* independent ``T``: ``s(T) = 1 - min(L'(T), n) <= 0`` where ``L'(T)`` is the smallest
  ``t >= 1`` such that the upper bound ``M_t(T)`` is ``>= 0``.

So ``s > 1/2`` exactly when G^2 says dependent: with the noise off, the decisions are
G^2's (the *ceiling is G^2 by construction*). The bounds satisfy the ladder inequalities
``m_{t+1}(T) <= m_t(T')`` and ``M_{t+1}(T) >= M_t(T')`` for replace-one neighbours, which
makes ``s`` 1-Lipschitz: **replace-one sensitivity 1**
(``docs/privacy/statistics-g2-distance.md``; Zhang et al. 2015 "ladder functions",
Nissim-Raskhodnikova-Smith 2007 local sensitivity at distance ``t``).

The ingredients, with ``g(m) = (m+1) ln(m+1) - m ln m`` (the change of ``h(m) = m ln m``
when a count grows from ``m`` to ``m+1``):

* ``U_k(T)``, ``V_k(T)``: bounds on the largest increase and decrease of ``n CMI`` when
  one row is added to any table whose counts are within ``k`` replacements of ``T``:
  the largest over cells of closed forms in the cell count, its x/y margins and its
  stratum size, each taken at the ends of the box ``[N - k - 1, N + k]``
  (:func:`half_step_range`), and ``g(k)`` when an unobserved configuration of ``S``
  exists (``n_configs`` is public).
* One replacement (a removal and an addition) at step ``k`` changes ``G^2 = 2 n CMI`` by
  at most ``r_k = 2 (U_k + V_k)``, so ``t`` replacements by at most ``t r_{t-1}``
  (``r_k`` grows with ``k``).
* ``df`` changes by at most ``delta = cx + cy - 3`` per replacement and never exceeds
  ``DFMAX = n_configs (cx - 1)(cy - 1)``; ``G^2 <= GMAX = 2 n ln min(cx, cy)``.
* ``m_t = max(0, G^2 - t r_{t-1}) - Q+(min(df + t delta, DFMAX))`` and
  ``M_t = min(G^2 + t r_{t-1}, GMAX) - Q-(max(df - t delta, 1))``, with ``Q+ >= q >= Q-``
  increasing step functions of the chi-square quantile ``q(d) = chi2_{1-alpha}(d)``
  (exact for ``d <= 4096``, on a 0.5 % geometric grid above).

The search over ``t`` probes one radius at a time and narrows a bracket of proven
bounds; tables of more than 256 cells (and 16 per stratum) are searched with the rates
of a few candidate cells (a lower bound at every radius) and checked with one
vectorised pass over every cell, after which the cells that can still be a maximum join
the candidates; small tables compute their rates in plain floats
(docs/privacy/statistics-g2-distance.md, "Cost"). Every search returns the same value.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc, chdtri

from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import SparseStrataTable, StrataTable
from dpcg.stats.discrete import (
    _df,
    _expected_from,
    _g2_and_logs,
    _g2_entries,
    _margins,
    _sparse_expected,
)

__all__ = [
    "QUANTILE_EXACT_UP_TO",
    "G2Distance",
    "g2_distance",
    "g2_distance_details",
    "g_increment_array",
    "half_step_range",
]

#: Chi-square quantiles are exact for ``df`` up to this value, then on a geometric grid.
QUANTILE_EXACT_UP_TO = 4096
_GRID_RATIO = 1.005
_GRID_MAX = 1e15
#: Relative slack in every ladder comparison (against float rounding; conservative:
#: it can only make a distance smaller).
SLACK = 1e-9


def g_increment_array(m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``g(m) = (m+1) ln(m+1) - m ln m`` elementwise (``g(0) = 0``), for ``m >= 0``."""
    out = np.log1p(m)
    pos = m > 0
    safe = np.where(pos, m, 1.0)
    out += np.where(pos, m * np.log1p(1.0 / safe), 0.0)
    return out


#: ``g`` is tabulated (one gather per use) for counts up to this size.
LOOKUP_MAX = 1 << 22


@lru_cache(maxsize=4)
def _g_table(size: int) -> NDArray[np.float64]:
    """``g(0), ..., g(size - 1)`` (read-only; depends on public sizes only)."""
    out = g_increment_array(np.arange(size, dtype=np.float64))
    out.setflags(write=False)
    return out


def half_step_range(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    c: NDArray[np.float64],
    d: NDArray[np.float64],
    k: int,
) -> tuple[float, float]:
    """``(U, V)``: ``max`` over the cells of upper bounds on ``+D`` and on ``-D``, where
    ``D = g(a') + g(d') - g(b') - g(c')`` and the cell count ``a'``, x-margin ``b'``,
    y-margin ``c'`` and stratum size ``d'`` each lie in ``[max(N - k - 1, 0), N + k]``
    around ``(a, b, c, d)`` (arrays broadcast together; both results clamped at 0).

    ``D`` is the change of ``n CMI`` when a row is added to that cell of the smaller of
    two tables differing by one row (docs/privacy/statistics-g2-distance.md, Lemma 1):
    ``D <= g(d'_hi) - max(g(b'_lo), g(c'_lo), g(b'_lo) + g(c'_lo) - g(a'_hi))`` and
    ``-D <= min(g(b'_hi) + g(c'_hi) - g(d'_lo), g(b'_hi), g(c'_hi)) - g(a'_lo)``
    (Lemma 2; non-decreasing in the width of the box). Reference implementation of what
    :class:`_Ladder` computes per stratum.
    """
    if a.size == 0:
        return 0.0, 0.0

    def lo(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return g_increment_array(np.maximum(x - (k + 1), 0.0))

    def hi(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return g_increment_array(x + k)

    up = hi(d) - np.maximum(np.maximum(lo(b), lo(c)), lo(b) + lo(c) - hi(a))
    down = np.minimum(np.minimum(hi(b), hi(c)), hi(b) + hi(c) - lo(d)) - lo(a)
    return max(float(up.max()), 0.0), max(float(down.max()), 0.0)


def _up_bound(a_hi: NDArray[np.float64], b_lo: NDArray[np.float64],
              c_lo: NDArray[np.float64], d_hi: NDArray[np.float64]) -> NDArray[np.float64]:
    """The bound on ``+D`` of a cell from ``g`` at its box ends (Lemma 2). Every ladder
    below computes it with this one expression, so a cell's bound is the same float
    whichever of them evaluates it."""
    out: NDArray[np.float64] = d_hi - np.maximum(np.maximum(b_lo, c_lo), b_lo + c_lo - a_hi)
    return out


def _down_bound(a_lo: NDArray[np.float64], b_hi: NDArray[np.float64],
                c_hi: NDArray[np.float64], d_lo: NDArray[np.float64]) -> NDArray[np.float64]:
    """The bound on ``-D`` of a cell from ``g`` at its box ends (Lemma 2)."""
    out: NDArray[np.float64] = np.minimum(np.minimum(b_hi, c_hi), b_hi + c_hi - d_lo) - a_lo
    return out


#: Cells named by their counts: ``(stratum, a, b, c)`` arrays (cell count, x-margin,
#: y-margin; the stratum gives ``d``).
_Cells = tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]


class _Candidates:
    """The rates over a set of cells (a lower bound on the table's rates at every radius,
    exact where the set holds every cell that can be a stratum's maximum), computed in
    ``O(cells held)`` per radius. Every stratum holds at least one cell for each bound. A
    cell's bound is the float the full ladders compute for it (same expression, same
    ``g``)."""

    def __init__(self, d: NDArray[np.int64], g: Callable[[NDArray[np.int64]],
                                                         NDArray[np.float64]],
                 table: NDArray[np.float64] | None = None) -> None:
        self.d, self._g, self.strata = d, g, int(d.shape[0])
        self._parts: tuple[list[_Cells], list[_Cells]] = ([], [])
        self._sorted: tuple[NDArray[np.int64], NDArray[np.int64], int, int,
                            NDArray[np.intp], NDArray[np.intp]] | None = None
        # below 8 strata (and with g tabulated) the rates are computed in plain floats
        self._item = table.item if table is not None and self.strata < 8 else None
        self._d_list: list[int] = d.tolist()
        self._cells: tuple[list[list[tuple[int, int, int]]], ...] = (
            [[] for _ in range(self.strata)], [[] for _ in range(self.strata)])
        self.size = 0

    @property
    def plain(self) -> bool:
        """Whether the rates are computed in plain floats (:meth:`at`): fewer than 8
        strata, ``g`` tabulated and at most ``_SMALL_CELLS`` cells held."""
        return self._item is not None and self.size <= _SMALL_CELLS

    def add(self, up: _Cells, down: _Cells) -> None:
        """Add cells ``(stratum, a, b, c)`` for each bound."""
        for parts, per, cells in zip(self._parts, self._cells, (up, down), strict=True):
            parts.append(cells)
            self.size += int(cells[0].shape[0])
            if self._item is not None:
                for s, a, b, c in zip(*(v.tolist() for v in cells), strict=True):
                    per[s].append((a, b, c))
        self._sorted = None

    def _arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64], int, int,
                               NDArray[np.intp], NDArray[np.intp]]:
        """The counts whose ``g`` is read at a box's upper end (``a, d`` of the cells held
        for ``+D``, then ``b, c`` of those for ``-D``) and at its lower end (``b, c`` for
        ``+D``, then ``a, d`` for ``-D``), each bound's cells sorted by stratum; the two
        bounds' cell counts and the start of each stratum's run in each."""
        if self._sorted is None:
            hi, lo, sizes, starts = [], [], [], []
            for parts, (first, second) in zip(self._parts, ((0, 1), (1, 0)), strict=True):
                s, a, b, c = (np.concatenate(v) for v in zip(*parts, strict=True))
                order = np.argsort(s, kind="stable")
                s = s[order]
                starts.append(np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1]))))
                assert starts[-1].shape[0] == self.strata
                pair_ad = np.concatenate([a[order], self.d[s]])
                pair_bc = np.concatenate([b[order], c[order]])
                ends = (pair_ad, pair_bc)
                hi.append(ends[first])
                lo.append(ends[second])
                sizes.append(int(s.shape[0]))
            self._sorted = (np.concatenate(hi), np.concatenate(lo), sizes[0], sizes[1],
                            starts[0], starts[1])
        return self._sorted

    def rates(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` of shape ``(len(ks), strata)`` over the cells held."""
        hi_base, lo_base, mu, md, stu, std = self._arrays()
        kk = ks[:, None]
        hi = self._g(hi_base + kk)
        lo = self._g(np.maximum(lo_base - (kk + 1), 0))
        e = 2 * mu
        up = _up_bound(hi[:, :mu], lo[:, :mu], lo[:, mu:e], hi[:, mu:e])
        down = _down_bound(lo[:, e:e + md], hi[:, e:e + md], hi[:, e + md:], lo[:, e + md:])
        return (np.maximum(np.maximum.reduceat(up, stu, axis=1), 0.0),
                np.maximum(np.maximum.reduceat(down, std, axis=1), 0.0))

    def rates_at(self, k: int) -> tuple[list[float], list[float]] | tuple[
            NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` at radius ``k``: :meth:`at` where it applies, else :meth:`rates`."""
        if self.plain:
            return self.at(k)
        U, V = self.rates(np.array([k], dtype=np.int64))
        return U[0], V[0]

    def at(self, k: int) -> tuple[list[float], list[float]]:
        """``(U, V)`` at radius ``k`` in plain floats (fewer than 8 strata): the same
        operations on the same tabulated ``g`` as :meth:`rates`, hence the same floats."""
        g = self._item
        assert g is not None
        U, V = [], []
        for d, ups, downs in zip(self._d_list, *self._cells, strict=True):
            d_hi = g(d + k)
            u = 0.0
            for a, b, c in ups:
                b_lo, c_lo = g(max(b - k - 1, 0)), g(max(c - k - 1, 0))
                m = b_lo if b_lo > c_lo else c_lo
                z = b_lo + c_lo - g(a + k)
                up = d_hi - (m if m > z else z)
                if up > u:
                    u = up
            d_lo = g(max(d - k - 1, 0))
            v = 0.0
            for a, b, c in downs:
                b_hi, c_hi = g(b + k), g(c + k)
                m = b_hi if b_hi < c_hi else c_hi
                z = b_hi + c_hi - d_lo
                down = (m if m < z else z) - (g(a - k - 1) if a > k + 1 else 0.0)
                if down > v:
                    v = down
            U.append(u)
            V.append(v)
        return U, V


class _Ladder:
    """The per-stratum rate bounds ``U_s(k)``, ``V_s(k)`` of one table, for many ``k``
    at once (one vectorised pass over the cells per batch of radii)."""

    def __init__(self, N: NDArray[np.int64], n: int, bm: NDArray[np.int64] | None = None,
                 cm: NDArray[np.int64] | None = None) -> None:
        self.k, self.cx, self.cy = (int(v) for v in N.shape)
        self.a = N.reshape(self.k, -1)                      # (strata, cells)
        self.bm = N.sum(axis=2) if bm is None else bm       # (strata, cx) x-margins
        self.cm = N.sum(axis=1) if cm is None else cm       # (strata, cy) y-margins
        self.d = self.bm.sum(axis=1)                        # (strata,)
        self.size = int(N.size)
        self.level_min = int(min(self.bm.min(), self.cm.min())) if N.size else 0
        size = 2 * n + 2
        self.table = _g_table(size) if size <= LOOKUP_MAX else None
        self._flat: NDArray[np.int64] | None = None

    def _g(self, m: NDArray[np.int64]) -> NDArray[np.float64]:
        if self.table is not None:
            out: NDArray[np.float64] = self.table[m]
            return out
        return g_increment_array(m.astype(np.float64))

    def cells(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-cell bounds on ``+D`` and ``-D``, shape ``(len(ks), strata, cells)``. ``g`` is
        read at the two ends of every box in one gather each, over the cell counts, the
        margins and the stratum sizes laid end to end (margin terms are computed once per
        margin, then broadcast)."""
        st, cx, cy = self.k, self.cx, self.cy
        if self._flat is None:
            self._flat = np.concatenate([self.a.ravel(), self.bm.ravel(), self.cm.ravel(),
                                         self.d])
        flat = self._flat
        nc = cx * cy
        kk = ks[:, None]
        hi = self._g(flat + kk)
        lo = self._g(np.maximum(flat - kk - 1, 0))
        K = len(ks)
        e1, e2, e3 = st * nc, st * (nc + cx), st * (nc + cx + cy)
        up = _up_bound(hi[:, :e1].reshape(K, st, cx, cy), lo[:, e1:e2].reshape(K, st, cx, 1),
                       lo[:, e2:e3].reshape(K, st, 1, cy), hi[:, e3:].reshape(K, st, 1, 1))
        down = _down_bound(lo[:, :e1].reshape(K, st, cx, cy),
                           hi[:, e1:e2].reshape(K, st, cx, 1),
                           hi[:, e2:e3].reshape(K, st, 1, cy), lo[:, e3:].reshape(K, st, 1, 1))
        return up.reshape(K, st, nc), down.reshape(K, st, nc)

    def rates(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` of shape ``(len(ks), strata)``: per stratum, the largest bounds on
        ``+D`` and ``-D`` over its cells (clamped at 0)."""
        up, down = self.cells(ks)
        return np.maximum(up.max(axis=2), 0.0), np.maximum(down.max(axis=2), 0.0)

    def check(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], _Cells, _Cells,
                                     Callable[[NDArray[np.float64], NDArray[np.float64]],
                                              tuple[_Cells, _Cells]]]:
        """``(U, V)`` at radius ``k`` (shape ``(strata,)``), per stratum a cell attaining
        each maximum (``(stratum, a, b, c)`` arrays), and a function of per-stratum
        floors ``(U', V')`` that gives the cells whose bound at radius ``k`` exceeds their
        stratum's floor (the per-cell bounds are kept). The cells are read in blocks of
        strata of about ``_BLOCK_CELLS`` cells (the same floats as :meth:`cells`, with
        less memory traffic on large tables)."""
        st, cx, cy = self.k, self.cx, self.cy
        g = self._g
        b_hi, b_lo = g(self.bm + k), g(np.maximum(self.bm - k - 1, 0))
        c_hi, c_lo = g(self.cm + k), g(np.maximum(self.cm - k - 1, 0))
        d_hi, d_lo = g(self.d + k), g(np.maximum(self.d - k - 1, 0))
        U, V = np.empty(st), np.empty(st)
        ju, jv = np.empty(st, dtype=np.intp), np.empty(st, dtype=np.intp)
        ups, downs = np.empty((st, cx * cy)), np.empty((st, cx * cy))
        step = max(1, _BLOCK_CELLS // max(cx * cy, 1))
        for s0 in range(0, st, step):
            sl = slice(s0, min(s0 + step, st))
            a = self.a[sl].reshape(-1, cx, cy)
            up = _up_bound(g(a + k), b_lo[sl, :, None], c_lo[sl, None, :],
                           d_hi[sl, None, None]).reshape(a.shape[0], -1)
            down = _down_bound(g(np.maximum(a - k - 1, 0)), b_hi[sl, :, None],
                               c_hi[sl, None, :], d_lo[sl, None, None]).reshape(a.shape[0], -1)
            ju[sl], jv[sl] = up.argmax(axis=1), down.argmax(axis=1)
            rows = np.arange(up.shape[0])
            U[sl], V[sl] = up[rows, ju[sl]], down[rows, jv[sl]]
            ups[sl], downs[sl] = up, down
        s = np.arange(st)
        cells = [self._cells_at(s, j) for j in (ju, jv)]

        def above(floor_u: NDArray[np.float64], floor_v: NDArray[np.float64]
                  ) -> tuple[_Cells, _Cells]:
            out = [self._cells_at(*np.nonzero(vals > floor[:, None]))
                   for vals, floor in ((ups, floor_u), (downs, floor_v))]
            return out[0], out[1]
        return np.maximum(U, 0.0), np.maximum(V, 0.0), cells[0], cells[1], above

    def seed(self, logs: NDArray[np.float64] | None = None) -> tuple[_Cells, _Cells]:
        """Per stratum, the cells of largest and of smallest ``(a + 1/2) / (b c + 1)`` (a
        cheap guess at the cells that attain the bounds' maxima: the largest ``a d / (b
        c)`` for ``+D``, the smallest for ``-D``), or of ``logs = ln(a / E)`` (0 where
        ``a = 0``) when the G-test computed them, and the smallest cell (the first to
        empty as the radius grows), as candidates for both bounds."""
        st, cx, cy = self.k, self.cx, self.cy
        if logs is not None:
            lift = logs.reshape(st, cx * cy)
        else:
            lift = (self.a + 0.5) / (self.bm[:, :, None] * self.cm[:, None, :] + 1.0
                                     ).reshape(st, cx * cy)
        s = np.tile(np.arange(st), 3)
        cells = self._cells_at(s, np.concatenate([lift.argmax(axis=1), lift.argmin(axis=1),
                                                  self.a.argmin(axis=1)]))
        return cells, cells

    def _cells_at(self, s: NDArray[np.intp], j: NDArray[np.intp]) -> _Cells:
        """The cells ``j`` (flat index in the stratum) of strata ``s``."""
        cy = self.cy
        return s, self.a[s, j], self.bm[s, j // cy], self.cm[s, j % cy]


class _EntryLadder:
    """The same per-stratum rates as :class:`_Ladder` (bit for bit), from a table's
    non-zero cells and, per stratum and x level, one empty cell for each bound: a pass
    costs ``O(entries + strata (cx + cy))`` instead of ``O(strata cx cy)``.

    An empty cell (``a = 0``) has ``a_hi = g(k)`` and ``a_lo = 0`` whatever its place, so
    its bounds depend on its margins only: the bound on ``+D`` falls as the y-margin
    grows and the bound on ``-D`` rises with it (every operation rounds monotonically,
    and the tabulated ``g`` is non-decreasing). So within an x level the largest bound
    on ``+D`` over its empty cells is at the empty cell of smallest y-margin, and on
    ``-D`` at the one of largest y-margin; those two per (stratum, x level) stand for
    all the empty cells, and the maxima over cells are unchanged."""

    def __init__(self, stratum: NDArray[np.intp], x: NDArray[np.intp], y: NDArray[np.intp],
                 a: NDArray[np.int64], bm: NDArray[np.int64], cm: NDArray[np.int64],
                 n: int) -> None:
        self.k, self.cx = (int(v) for v in bm.shape)
        self.cy = int(cm.shape[1])
        self.bm, self.cm, self.d = bm, cm, bm.sum(axis=1)
        self.level_min = int(min(bm.min(), cm.min())) if bm.size else 0
        size = 2 * n + 2
        self.table = _g_table(size) if size <= LOOKUP_MAX else None
        # U: the entries and every row's empty cell of smallest y-margin; V: of largest
        self._up = self._cells(stratum, x, y, a, ascending=True)
        self._down = self._cells(stratum, x, y, a, ascending=False)
        self.size = int(self._up[0].shape[0] + self._down[0].shape[0])

    def _cells(self, stratum: NDArray[np.intp], x: NDArray[np.intp], y: NDArray[np.intp],
               a: NDArray[np.int64], ascending: bool
               ) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp],
                          NDArray[np.int64], NDArray[np.intp]]:
        """``(stratum, x, y, a, segment starts)`` of the cells to evaluate, sorted by
        stratum: the entries, then per (stratum, x level) with an empty cell the empty
        cell first in the y order (y-margins ascending or descending)."""
        k, cx, cy = self.k, self.cx, self.cy
        order = np.argsort(self.cm if ascending else -self.cm, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(cy)[None, :].repeat(k, axis=0), axis=1)
        row = stratum * cx + x                              # (stratum, x) of each entry
        r = rank[stratum, y]
        srt = np.lexsort((r, row))
        row_s, r_s = row[srt], r[srt]
        first = np.concatenate(([True], row_s[1:] != row_s[:-1]))
        pos = np.arange(row_s.shape[0]) - np.maximum.accumulate(
            np.where(first, np.arange(row_s.shape[0]), 0))
        # ranks are distinct and increasing within a row: the leading run r == 0, 1, ..
        # is the filled prefix, and the first empty cell is at rank = its length
        gap = np.bincount(row_s, weights=(r_s == pos), minlength=k * cx).astype(np.intp)
        empty_rows = np.flatnonzero(gap < cy)
        es, ex = empty_rows // cx, empty_rows % cx
        ey = order[es, gap[empty_rows]]
        cs = np.concatenate([stratum, es])
        srt2 = np.argsort(cs, kind="stable")
        cs = cs[srt2]
        starts = np.flatnonzero(np.concatenate(([True], cs[1:] != cs[:-1])))
        return (cs, np.concatenate([x, ex])[srt2], np.concatenate([y, ey])[srt2],
                np.concatenate([a, np.zeros(es.shape[0], dtype=np.int64)])[srt2], starts)

    def _g(self, m: NDArray[np.int64]) -> NDArray[np.float64]:
        if self.table is not None:
            out: NDArray[np.float64] = self.table[m]
            return out
        return g_increment_array(m.astype(np.float64))

    def _ends(self, m: NDArray[np.int64], kk: NDArray[np.int64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return self._g(m + kk), self._g(np.maximum(m - kk - 1, 0))

    def values(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The bounds on ``+D`` and ``-D`` of the cells evaluated, ``(len(ks), cells)``."""
        kk = ks[:, None]
        out = []
        for (s, x, y, a, _starts), up in ((self._up, True), (self._down, False)):
            a_hi, a_lo = self._ends(a, kk)
            b_hi, b_lo = self._ends(self.bm[s, x], kk)
            c_hi, c_lo = self._ends(self.cm[s, y], kk)
            if up:
                val = _up_bound(a_hi, b_lo, c_lo, self._g(self.d[s] + kk))
            else:
                val = _down_bound(a_lo, b_hi, c_hi, self._g(np.maximum(self.d[s] - kk - 1, 0)))
            out.append(val)
        return out[0], out[1]

    def rates(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` of shape ``(len(ks), strata)``, equal to :meth:`_Ladder.rates`."""
        vals = self.values(ks)
        U, V = (np.maximum(np.maximum.reduceat(val, cells[4], axis=1), 0.0)
                for val, cells in zip(vals, (self._up, self._down), strict=True))
        return U, V

    def seed(self) -> tuple[_Cells, _Cells]:
        """As :meth:`_Ladder.seed`, over the cells this ladder evaluates."""
        out: list[_Cells] = []
        for s, x, y, a, starts in (self._up, self._down):
            b, c = self.bm[s, x], self.cm[s, y]
            lift = (a + 0.5) / (b * c + 1.0)
            seg = np.repeat(np.arange(starts.shape[0]), np.diff(np.append(starts, a.shape[0])))
            picked = []
            for extreme in (np.maximum, np.minimum):
                hit = np.flatnonzero(lift == extreme.reduceat(lift, starts)[seg])
                picked.append(hit[np.concatenate(([True], seg[hit][1:] != seg[hit][:-1]))])
            m = np.concatenate(picked)
            out.append((s[m], a[m], b[m], c[m]))
        return out[0], out[1]

    def check(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], _Cells, _Cells,
                                     Callable[[NDArray[np.float64], NDArray[np.float64]],
                                              tuple[_Cells, _Cells]]]:
        """As :meth:`_Ladder.check`."""
        vals = self.values(np.array([k], dtype=np.int64))
        out: list[_Cells] = []
        rates: list[NDArray[np.float64]] = []
        for val2, (s, x, y, a, starts) in zip(vals, (self._up, self._down), strict=True):
            val = val2[0]
            mx = np.maximum.reduceat(val, starts)
            seg = np.repeat(np.arange(starts.shape[0]), np.diff(np.append(starts, val.shape[0])))
            hit = np.flatnonzero(val == mx[seg])
            first = hit[np.concatenate(([True], seg[hit][1:] != seg[hit][:-1]))]
            out.append((s[first], a[first], self.bm[s[first], x[first]],
                        self.cm[s[first], y[first]]))
            rates.append(np.maximum(mx, 0.0))

        def above(floor_u: NDArray[np.float64], floor_v: NDArray[np.float64]
                  ) -> tuple[_Cells, _Cells]:
            res: list[_Cells] = []
            for val2, (s, x, y, a, _), floor in zip(vals, (self._up, self._down),
                                                    (floor_u, floor_v), strict=True):
                m = np.flatnonzero(val2[0] > floor[s])
                res.append((s[m], a[m], self.bm[s[m], x[m]], self.cm[s[m], y[m]]))
            return res[0], res[1]
        return rates[0], rates[1], out[0], out[1], above


@lru_cache(maxsize=16)
def _quantile_grid(alpha: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(d values, q(d))``: exact integers ``1..4096`` then a geometric grid to 1e15,
    with ``q`` made non-decreasing."""
    ints = np.arange(1, QUANTILE_EXACT_UP_TO + 1, dtype=np.float64)
    steps = math.ceil(math.log(_GRID_MAX / QUANTILE_EXACT_UP_TO) / math.log(_GRID_RATIO))
    geo = np.unique(np.ceil(QUANTILE_EXACT_UP_TO * _GRID_RATIO ** np.arange(1, steps + 1)))
    ds = np.concatenate([ints, geo])
    qs = np.maximum.accumulate(chdtri(ds, alpha))
    return tuple(float(v) for v in ds), tuple(float(v) for v in qs)


def _q_upper(alpha: float, d: float) -> float:
    """An upper bound on ``q(d) = chi2_{1-alpha}(d)``, non-decreasing in ``d`` (0 at 0)."""
    if d <= 0:
        return 0.0
    ds, qs = _quantile_grid(alpha)
    i = bisect.bisect_left(ds, d)
    return qs[min(i, len(qs) - 1)] if i < len(qs) else math.inf


def _q_lower(alpha: float, d: float) -> float:
    """A lower bound on ``q(d)`` (``d >= 1``), non-decreasing in ``d``."""
    ds, qs = _quantile_grid(alpha)
    i = bisect.bisect_right(ds, d) - 1
    return qs[max(i, 0)]


@dataclass(frozen=True)
class G2Distance:
    """The statistic and what it was computed from (for tests and benchmarks)."""

    value: int          # s(T): >= 1 if dependent, <= 0 if independent
    dependent: bool     # the G^2 decision (p <= alpha)
    g2: float
    df: int
    pvalue: float
    evaluations: int    # vectorised passes over the cells


def _check(alpha: float, table: StrataTable) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) \
            or not (math.isfinite(float(alpha)) and 0.0 < float(alpha) < 1.0):
        raise StatisticInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not isinstance(table, StrataTable):
        raise StatisticInputError(f"expected a StrataTable, got {type(table).__name__}")
    return float(alpha)


def _per_stratum_g2_entries(table: SparseStrataTable, E: NDArray[np.float64]
                            ) -> NDArray[np.float64]:
    """:func:`_per_stratum_g2` from a table's non-zero cells and their ``E`` (the same
    terms; only the order of the float sums differs)."""
    N = table.weight
    out: NDArray[np.float64] = np.maximum(
        2.0 * np.bincount(table.stratum, weights=N * np.log(N / E), minlength=table.k), 0.0)
    return out


def _per_stratum_from_logs(N: NDArray[np.int64], logs: NDArray[np.float64]
                           ) -> NDArray[np.float64]:
    """:func:`_per_stratum_g2` from the G-test's ``ln(N / E)`` (0 where ``N = 0``)."""
    out: NDArray[np.float64] = np.maximum(2.0 * (N * logs).sum(axis=(1, 2)), 0.0)
    return out


def _per_stratum_g2(N: NDArray[np.int64]) -> NDArray[np.float64]:
    """``G^2`` of each stratum (cell-wise form, clamped at 0); they sum to ``G^2``."""
    return _per_stratum_from_logs(N, _g2_and_logs(N, _expected_from(*_margins(N)))[1])


#: Tables of more than ``_CANDIDATE_CELLS`` cells (or evaluated cells, for a sparse
#: table) and more than ``_CANDIDATE_PER_STRATUM`` per stratum are searched over
#: candidate cells (about six per stratum) and checked with one pass over every cell;
#: the others with the exact rates directly. Tables with fewer than 8 strata and ``cells + 3 strata
#: <= _SMALL_COST`` have their rates computed in plain floats (a vectorised pass costs
#: more there), and so do candidate sets of at most ``_SMALL_CELLS`` cells with fewer
#: than 8 strata. Only the speed depends on these.
_CANDIDATE_CELLS = 256
_CANDIDATE_PER_STRATUM = 16
_SMALL_COST = 36
_SMALL_CELLS = 32
#: A bracket is evaluated in one batch (NumPy ladders) when its radii times the cells
#: evaluated are at most ``_BATCH_ELEMENTS`` and it has at most ``_BATCH_RADII`` radii.
_BATCH_ELEMENTS = 4096
_BATCH_RADII = 8
#: After a check that crosses, the cells that can still be a maximum join the candidates
#: when they are at most this share of the table (one in ``_SURVIVOR_SHARE``).
_SURVIVOR_SHARE = 8
#: Rounds of the candidate search (each checked with one pass over every cell) before
#: the search over every cell takes over.
_CANDIDATE_ROUNDS = 8
#: Cells per block when one radius is evaluated over a large dense table.
_BLOCK_CELLS = 1 << 15
#: Values of ``t`` tested at once when the first crossing with fixed rates is narrowed.
_FIXED_POINTS = 8


class _Rates:
    """The rates of one radius ``k`` as the crossing test reads them: the total rate
    ``r = 2 (max(max_s U_s, gamma_k) + max(max_s V_s, gamma_k))``, the per-stratum
    ``U_s + V_s`` (``W``; a list below 8 strata, else an array) and the df step."""

    __slots__ = ("W", "k", "r", "step")

    def __init__(self, k: int, r: float, W: list[float] | NDArray[np.float64] | None,
                 step: int) -> None:
        self.k, self.r, self.W, self.step = k, r, W, step


#: Rates of a batch of radii, each built when it is read.
_Batch = Callable[[NDArray[np.int64]], list[Callable[[], _Rates]]]


class _Crossing:
    """The ladder's crossing test (one definition for every search path) and the search.

    Dependent ``T``: ``t`` crosses with the rates of radius ``k`` when
    ``max(0, G^2 - min(t r, sum_s min(G_s, 2 t (U_s + V_s)))) - Q+(min(df + t iota_k,
    DFMAX)) <= SLACK (1 + G^2 + Q+)``; independent ``T``: when ``min(G^2 + t r, GMAX) -
    Q-(max(df - t iota_k, 1)) >= -SLACK (1 + G^2 + Q-)``. The sum over the strata is
    NumPy's from 8 strata on, plain ``sum`` below (the same float: NumPy adds fewer than
    8 values in order). The test is monotone in ``t`` and in the rates, in floating
    point as well (every operation rounds monotonically), so where a search probes
    changes only its speed.
    """

    def __init__(self, *, dependent: bool, g2: float, gs: NDArray[np.float64] | None,
                 df: int, dfmax: float, gmax: float, alpha: float, iota_full: int,
                 level_min: int, unobserved: bool, strata: int,
                 g: Callable[[NDArray[np.int64]], NDArray[np.float64]]) -> None:
        self.dependent, self.g2, self.df = dependent, g2, df
        self.dfmax, self.gmax, self.alpha = dfmax, gmax, alpha
        self.iota_full, self.level_min, self.unobserved, self._g = (
            iota_full, level_min, unobserved, g)
        self.few = strata < 8
        self.gs_list: list[float] = gs.tolist() if gs is not None and self.few else []
        self.gs = gs
        if dependent:
            self.linear = g2 - _q_upper(alpha, min(df, dfmax))  # t r = G^2 - Q+(df)
        else:
            self.linear = _q_lower(alpha, max(df, 1)) - g2

    def unobserved_g(self, k: int) -> float:
        """``g(k)`` where an unobserved configuration exists, else 0."""
        if not self.unobserved:
            return 0.0
        return float(self._g(np.array([k], dtype=np.int64))[0])

    def iota(self, k: int) -> int:
        """Bound on the change of df in one replacement at step ``k``."""
        if self.level_min <= k + 1 or (self.unobserved and k >= 1):
            return self.iota_full
        return 0

    def rates(self, k: int, U: NDArray[np.float64] | list[float],
              V: NDArray[np.float64] | list[float]) -> _Rates:
        """The :class:`_Rates` of per-stratum rates ``U``, ``V`` at radius ``k``."""
        gk = self.unobserved_g(k)
        if isinstance(U, list):
            assert isinstance(V, list)
            r = 2.0 * (max(max(U), gk) + max(max(V), gk))
            W: list[float] | NDArray[np.float64] | None = (
                [u + v for u, v in zip(U, V, strict=True)] if self.dependent else None)
        elif self.few:
            assert not isinstance(V, list)
            return self.rates(k, U.tolist(), V.tolist())
        else:
            assert not isinstance(V, list)
            r = 2.0 * (max(float(U.max()), gk) + max(float(V.max()), gk))
            W = U + V if self.dependent else None
        return _Rates(k, r, W, self.iota(k))

    def crosses(self, t: int, R: _Rates) -> bool:
        """Whether ``t`` crosses with the fixed rates ``R``."""
        return self.crosses_at([t], R)[0]

    def crosses_at(self, ts: list[int], R: _Rates) -> list[bool]:
        """Whether each ``t`` of ``ts`` crosses with the fixed rates ``R``: the per-stratum
        sums of all of them in one NumPy call from 8 strata on (a row sum is the sum of
        that row alone), the rest in plain floats."""
        g2 = self.g2
        if not self.dependent:
            out = []
            for t in ts:
                g_part = min(g2 + t * R.r, self.gmax)
                q = _q_lower(self.alpha, max(self.df - t * R.step, 1))
                out.append(g_part - q >= -SLACK * (1.0 + g2 + q))
            return out
        W = R.W
        if isinstance(W, list):
            pers = [sum([min(g, t * 2.0 * w) for g, w in zip(self.gs_list, W, strict=True)])
                    for t in ts]
        else:
            assert W is not None
            assert self.gs is not None
            t2 = np.array(ts, dtype=np.float64) * 2.0
            pers = np.minimum(self.gs, t2[:, None] * W).sum(axis=1).tolist()
        out = []
        for t, per in zip(ts, pers, strict=True):
            g_part = max(0.0, g2 - min(t * R.r, per))
            q = _q_upper(self.alpha, min(self.df + t * R.step, self.dfmax))
            out.append(g_part - q <= SLACK * (1.0 + g2 + q))
        return out

    def first_fixed(self, lo: int, hi: int, R: _Rates) -> int:
        """Smallest ``t`` in ``[lo, hi]`` crossing with the fixed rates ``R`` (``hi + 1``
        if none). Each round tests a few ``t`` at once: first the bracket's ends and the
        neighbours of where the linear part crosses (``t r = G^2 - Q``, usually within a
        step of the answer), then evenly spread points of what is left."""
        if lo > hi:
            return hi + 1
        pts = {lo, hi}
        r = R.r
        if r > 0 and self.linear / r < hi:
            g = math.ceil(self.linear / r)
            pts.update(v for v in (g - 1, g, g + 1) if lo < v < hi)
        known = False                      # whether hi is known to cross
        while True:
            ts = sorted(pts)
            hits = self.crosses_at(ts, R)
            if not known and not hits[-1]:
                return hi + 1
            j = hits.index(True) if True in hits else len(ts)
            if j == 0:
                return ts[0]
            lo = ts[j - 1] + 1
            if j < len(ts):
                hi = ts[j]
            known = True
            if lo >= hi:
                return hi
            pts = {lo + (hi - lo) * i // _FIXED_POINTS for i in range(_FIXED_POINTS)}

    def search(self, rates: Callable[[int], _Rates], lo: int, hi: int, R_low: _Rates,
               phi_low: int, batch: _Batch | None = None, batch_radii: int = 0
               ) -> tuple[int, int]:
        """``(t, probes)``: the smallest ``t`` in ``[lo, hi - 1]`` that crosses with
        ``rates(t - 1)``, else ``hi``, for ``rates`` non-decreasing in the radius.
        ``R_low`` and ``phi_low`` (rates evaluated before, and the first ``t`` in the
        bracket, or above it, that crosses with them fixed) seed where it probes first.

        A probe at ``m`` evaluates ``R = rates(m - 1)``. If ``m`` crosses with it, the
        answer is at most ``m`` and at least the first ``t`` that crosses with ``R``
        fixed (every ``t <= m`` has rates at most ``R``); if not, it is above ``m`` and
        at most that first ``t`` (every ``t > m`` has rates at least ``R``). So every
        probe moves both ends of the bracket. The next probe is where ``m r(m - 1)``
        meets the target ``phi r`` of the last probe, with ``r`` extrapolated linearly
        from the last two probes (a secant step: the crossing is mostly ``t r >= G^2 -
        q``, and ``r`` grows smoothly between nearby radii), or the middle of the
        bracket after a probe that did not halve it. ``batch``, where given, evaluates a
        bracket of at most ``batch_radii`` radii at once. Only the speed depends on where
        it probes: the bracket's ends are proven bounds."""
        probes = 0
        last = (R_low.k, R_low.r, phi_low * R_low.r)   # (radius, rate, target)
        before: tuple[int, float, float] | None = None
        known_top = False          # whether hi crosses (a probe there said so)
        slow = False
        while lo < hi:
            if batch is not None and hi - lo < batch_radii:
                # every radius of the bracket at once; crossing is monotone along them
                rows = batch(np.arange(lo - 1, hi, dtype=np.int64))
                a, b = 0, len(rows) - 1  # the answer's row is in [a, b] (the last: hi)
                while a < b:
                    mid = (a + b) // 2
                    if self.crosses(lo + mid, rows[mid]()):
                        b = mid
                    else:
                        a = mid + 1
                return lo + a, probes + 1
            top = hi - 1 if known_top else hi
            m = (lo + hi) // 2 if slow else self._predict(last, before, lo, top)
            m = min(max(m, lo), top)
            width = hi - lo
            R = rates(m - 1)
            probes += 1
            # the first crossing with R fixed over the bracket: m crosses iff it is <= m
            phi = self.first_fixed(lo, hi, R)
            if phi <= m:
                # phi == lo: the first crossing with R may lie below the bracket
                target = phi * R.r if phi > lo else min(phi * R.r, self.linear)
                hi, lo, known_top = m, phi, True
            else:
                # phi > hi: the first crossing with R lies above the bracket
                target = phi * R.r if phi <= hi else max(phi * R.r, self.linear)
                lo, hi = m + 1, min(hi, phi)
            before, last = last, (m - 1, R.r, target)
            slow = not slow and 2 * (hi - lo) > width
        return hi, probes

    @staticmethod
    def _predict(last: tuple[int, float, float], before: tuple[int, float, float] | None,
                 lo: int, top: int) -> int:
        """Where ``m r(m - 1) = C``, ``r`` linear through the probes ``last`` and
        ``before`` (``(radius, rate, target)``), ``C`` the target of ``last``; a quarter
        of the way up the bracket after one probe."""
        if before is None or before[0] == last[0]:
            return lo + (top - lo) // 4
        k0, r0, _ = before
        k1, r1, C = last
        slope = max((r1 - r0) / (k1 - k0), 0.0)
        b = r1 - slope * (1 + k1)           # m r(m - 1) = slope m^2 + b m
        if slope == 0.0:
            return math.ceil(C / b) if b > 0 else top
        disc = b * b + 4.0 * slope * C
        if disc < 0.0:
            return lo
        return math.ceil((-b + math.sqrt(disc)) / (2.0 * slope))


class _SmallLadder:
    """The rates of a small table (fewer than 8 strata, ``_SMALL_COST``) in
    plain floats: the same operations on the same tabulated ``g`` as :class:`_Ladder`,
    hence the same floats, without a NumPy call per operation."""

    def __init__(self, N: NDArray[np.int64], bm: NDArray[np.int64], cm: NDArray[np.int64],
                 table: NDArray[np.float64]) -> None:
        self.a: list[list[list[int]]] = N.tolist()
        self.bm: list[list[int]] = bm.tolist()
        self.cm: list[list[int]] = cm.tolist()
        self.d: list[int] = bm.sum(axis=1).tolist()
        self.g = table.item

    def at(self, k: int) -> tuple[list[float], list[float]]:
        """Per-stratum ``(U, V)`` at radius ``k`` (clamped at 0)."""
        g = self.g
        U, V = [], []
        for a_s, b_s, c_s, d in zip(self.a, self.bm, self.cm, self.d, strict=True):
            d_hi, d_lo = g(d + k), g(max(d - k - 1, 0))
            c_hi = [g(c + k) for c in c_s]
            c_lo = [g(max(c - k - 1, 0)) for c in c_s]
            u = v = 0.0
            for row, b in zip(a_s, b_s, strict=True):
                b_hi, b_lo = g(b + k), g(max(b - k - 1, 0))
                for a, ch, cl in zip(row, c_hi, c_lo, strict=True):
                    # max/min as conditional expressions: the same floats (no NaN, and
                    # equal values are the same float here), without a call each
                    m = b_lo if b_lo > cl else cl
                    z = b_lo + cl - g(a + k)
                    up = d_hi - (m if m > z else z)
                    m = b_hi if b_hi < ch else ch
                    z = b_hi + ch - d_lo
                    down = (m if m < z else z) - (g(a - k - 1) if a > k + 1 else 0.0)
                    if up > u:
                        u = up
                    if down > v:
                        v = down
            U.append(u)
            V.append(v)
        return U, V


def g2_distance_details(table: StrataTable, alpha: float) -> G2Distance:
    """:func:`g2_distance` with the G^2 decision and the work done."""
    alpha = _check(alpha, table)
    cx, cy = table.cx, table.cy
    lad: _Ladder | _EntryLadder
    gs: NDArray[np.float64] | None = None
    logs: NDArray[np.float64] | None = None
    small: _SmallLadder | None = None
    if isinstance(table, SparseStrataTable):
        # the non-zero cells only (every stratum of the table is observed)
        n = table.n
        if n == 0:
            return G2Distance(0, False, 0.0, 0, 1.0, 0)
        E, nx, ny = _sparse_expected(table)
        df = _df(nx, ny)
        g2 = _g2_entries(table.weight, E) if df > 0 else 0.0
        strata = table.k
        lad = _EntryLadder(table.stratum, *table.levels(), table.weight, nx, ny, n)
        pvalue = 1.0 if df == 0 else float(chdtrc(df, g2))
        dependent = df > 0 and pvalue <= alpha
        if dependent:
            gs = _per_stratum_g2_entries(table, E)
    else:
        N = table.counts
        if N.shape[0] and not N.any(axis=(1, 2)).all():
            N = N[N.any(axis=(1, 2))]  # only observed strata count (causal-learn's df rule)
        n = int(N.sum())
        if n == 0 or N.size == 0:
            return G2Distance(0, False, 0.0, 0, 1.0, 0)  # no rows: independent, s = 0
        ns, nx, ny = _margins(N)
        df = _df(nx, ny)
        g2 = 0.0
        if df > 0:
            # G^2 as the G-test computes it (the same float, hence its decision), and the
            # per-stratum G_s from the same logarithms
            g2, logs = _g2_and_logs(N, _expected_from(ns, nx, ny))
        strata = int(N.shape[0])
        lad = _Ladder(N, n, nx, ny)
        pvalue = 1.0 if df == 0 else float(chdtrc(df, g2))
        dependent = df > 0 and pvalue <= alpha
        if dependent:
            assert logs is not None
            gs = _per_stratum_from_logs(N, logs)
        if N.size + 3 * strata <= _SMALL_COST and strata < 8 and lad.table is not None:
            small = _SmallLadder(N, nx, ny, lad.table)
    cross = _Crossing(
        dependent=dependent, g2=g2, gs=gs, df=df,
        dfmax=float(table.n_configs) * (cx - 1) * (cy - 1),
        gmax=2.0 * n * math.log(min(cx, cy)), alpha=alpha, iota_full=max(cx + cy - 3, 0),
        level_min=lad.level_min, unobserved=table.n_configs > strata, strata=strata,
        g=lad._g)
    if small is not None:
        sm = small

        def exact(k: int) -> _Rates:
            return cross.rates(k, *sm.at(k))
        dist, passes = _direct(cross, exact, None, 0, n)
    elif lad.size <= _CANDIDATE_CELLS or lad.size <= _CANDIDATE_PER_STRATUM * strata:
        dist, passes = _direct(cross, *_providers(cross, lad.rates, lad.size), n)
    else:
        dist, passes = _with_candidates(lad, cross, n, logs)
    return G2Distance(dist if dependent else 1 - dist, dependent, g2, df, pvalue, passes)


_RatesOf = Callable[[NDArray[np.int64]], tuple[NDArray[np.float64], NDArray[np.float64]]]


def _providers(cross: _Crossing, rates: _RatesOf, cells: int
               ) -> tuple[Callable[[int], _Rates], _Batch, int]:
    """The :class:`_Rates` of one radius, and of a batch of radii (each built when it is
    read), from a ladder's ``rates`` (per-stratum ``(U, V)``, shape ``(radii, strata)``)."""
    def one(k: int) -> _Rates:
        U, V = rates(np.array([k], dtype=np.int64))
        return cross.rates(k, U[0], V[0])

    def many(ks: NDArray[np.int64]) -> list[Callable[[], _Rates]]:
        U, V = rates(ks)
        return [functools.partial(cross.rates, int(k), U[i], V[i]) for i, k in enumerate(ks)]
    return one, many, min(_BATCH_RADII, _BATCH_ELEMENTS // max(cells, 1))


def _direct(cross: _Crossing, exact: Callable[[int], _Rates],
            batch: _Batch | None, batch_radii: int, n: int) -> tuple[int, int]:
    """``min(n, first t that crosses with the exact rates of radius t - 1)`` and the
    number of passes, searching with the exact rates."""
    R0 = exact(0)
    if cross.crosses(1, R0) or n == 1:
        return 1, 1  # t = 1 crosses, or the clamp at n = 1
    # rates only grow: the first crossing with the rates of radius 0 bounds the answer
    phi0 = cross.first_fixed(2, n, R0)
    t, probes = cross.search(exact, 2, min(phi0, n), R0, phi0, batch, batch_radii)
    return t, probes + 1


def _with_candidates(lad: _Ladder | _EntryLadder, cross: _Crossing, n: int,
                     logs: NDArray[np.float64] | None = None) -> tuple[int, int]:
    """As :func:`_direct`, over candidate cells checked with passes over every cell.

    The rates over any subset of the cells are a lower bound on the rates at every
    radius and are non-decreasing in the radius, and crossing is monotone in the rates,
    so the first ``t`` that crosses with a subset's rates, ``t_c``, bounds the answer
    above. The search starts from a cheap guess at the cells that attain the maxima
    (:meth:`_Ladder.seed`), finds ``t_c`` with those few cells, and evaluates every cell
    at radius ``k = t_c - 2``: if ``t_c - 1`` does not cross there, no smaller ``t`` does
    (crossing is monotone in ``t``) and the answer is ``t_c``. If it does, those exact
    rates also bound the answer below, by ``lo`` (every ``t <= t_c - 1`` has rates at
    most theirs), and every radius left to search lies in ``[lo - 1, k]``. A cell's
    bound grows with the radius, so a cell whose bound at ``k`` does not exceed its
    stratum's candidate rate at ``lo - 1`` is never above the candidates in between:
    with every other cell added, the candidates' rates are exact on ``[lo - 1, k]`` and
    the search over them returns the answer. (If those cells are more than one in
    ``_SURVIVOR_SHARE`` of the table, the cells attaining the maxima at ``k`` join the
    candidates and the next round starts; after ``_CANDIDATE_ROUNDS`` rounds the search
    over every cell finishes.)
    """
    if n == 1:
        return 1, 0  # the clamp at n = 1
    cand = _Candidates(lad.d, lad._g, lad.table)
    cand.add(*(lad.seed(logs) if isinstance(lad, _Ladder) else lad.seed()))
    passes = 0
    # the candidates' rates at radius 0 are at most every exact rate, so the first t that
    # crosses with them bounds the answer above
    R = cross.rates(0, *cand.rates_at(0))
    phi = cross.first_fixed(1, n, R)
    lo, hi = 1, min(phi, n)

    def search() -> tuple[int, int]:
        if cand.plain:
            return cross.search(lambda k: cross.rates(k, *cand.at(k)), lo, hi, R, phi)
        one, many, radii = _providers(cross, cand.rates, cand.size)
        return cross.search(one, lo, hi, R, phi, many, radii)

    for _ in range(_CANDIDATE_ROUNDS):
        t_c, probes = search()
        passes += probes
        if t_c <= lo:
            return t_c, passes
        k = t_c - 2
        Uk, Vk, upk, downk, above = lad.check(k)
        passes += 1
        R = cross.rates(k, Uk, Vk)
        if not cross.crosses(t_c - 1, R):
            return t_c, passes
        hi = t_c - 1
        phi = cross.first_fixed(lo, hi, R)
        lo = max(lo, phi)
        if lo >= hi:
            return hi, passes
        cand.add(upk, downk)
        floor_u, floor_v = (np.asarray(f) for f in cand.rates_at(lo - 1))
        more_up, more_down = above(floor_u, floor_v)
        if more_up[0].shape[0] + more_down[0].shape[0] <= lad.size // _SURVIVOR_SHARE:
            cand.add(more_up, more_down)
            t, probes = search()     # exact rates on the radii left: the answer
            return t, passes + probes

    one, many, radii = _providers(cross, lad.rates, lad.size)
    t, probes = cross.search(one, lo, hi, R, phi, many, radii)
    return t, passes + probes


def g2_distance(table: StrataTable, alpha: float) -> int:
    """Signed distance (in replaced rows) to the G^2 decision at level ``alpha``.

    ``>= 1`` when the G-test says dependent, ``<= 0`` when it says independent;
    replace-one sensitivity 1; decision threshold ``1/2``. ``alpha`` and the table's
    declared ``cx``, ``cy``, ``n_configs`` and ``n`` are public.
    """
    return g2_distance_details(table, alpha).value

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

Everything is vectorised over the cells of the table. The search over ``t`` narrows a
bracket with grids of radii; on tables of more than 4,096 cells it searches with the
rates of a few candidate cells (a lower bound at every radius) and checks the step below
their first crossing with one pass over every cell (docs/privacy/statistics-g2-distance.md,
"Cost"). Every search returns the same value.
"""

from __future__ import annotations

import bisect
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
    _g2_entries,
    _g2_from,
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
    """The rates over a few cells of a table (for each bound, the cells that attained a
    stratum's maximum at the radii evaluated so far): a lower bound on the table's rates
    at every radius, computed in ``O(candidates)`` per radius. A cell's bound is the
    float the full ladders compute for it (same expression, same ``g``)."""

    def __init__(self, d: NDArray[np.int64], g: Callable[[NDArray[np.int64]],
                                                         NDArray[np.float64]]) -> None:
        self.d, self._g, self.strata = d, g, int(d.shape[0])
        none = np.zeros(0, dtype=np.int64)
        self.up: _Cells = (np.zeros(0, dtype=np.intp), none, none, none)
        self.down: _Cells = self.up

    @staticmethod
    def _join(old: _Cells, new: _Cells) -> _Cells:
        return (np.concatenate([old[0], new[0]]), np.concatenate([old[1], new[1]]),
                np.concatenate([old[2], new[2]]), np.concatenate([old[3], new[3]]))

    def add(self, up: _Cells, down: _Cells) -> None:
        self.up, self.down = self._join(self.up, up), self._join(self.down, down)

    def rates(self, ks: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` of shape ``(len(ks), strata)`` over the candidates (0 where a
        stratum has none: the rates are clamped at 0)."""
        kk = ks[:, None]
        g = self._g
        out = []
        for (s, a, b, c), up in ((self.up, True), (self.down, False)):
            if up:
                val = _up_bound(g(a + kk), g(np.maximum(b - kk - 1, 0)),
                                g(np.maximum(c - kk - 1, 0)), g(self.d[s] + kk))
            else:
                val = _down_bound(g(np.maximum(a - kk - 1, 0)), g(b + kk), g(c + kk),
                                  g(np.maximum(self.d[s] - kk - 1, 0)))
            r = np.zeros((self.strata, ks.shape[0]))
            np.maximum.at(r, s, val.T)
            out.append(r.T)
        return out[0], out[1]


class _Ladder:
    """The per-stratum rate bounds ``U_s(k)``, ``V_s(k)`` of one table, for many ``k``
    at once (one vectorised pass over the cells per batch of radii)."""

    def __init__(self, N: NDArray[np.int64], n: int) -> None:
        self.k, self.cx, self.cy = (int(v) for v in N.shape)
        self.a = N.reshape(self.k, -1)                      # (strata, cells)
        self.bm = N.sum(axis=2)                             # (strata, cx) x-margins
        self.cm = N.sum(axis=1)                             # (strata, cy) y-margins
        self.d = self.bm.sum(axis=1)                        # (strata,)
        # per cell: the index of its x-margin and y-margin in the margins
        self.xi = np.repeat(np.arange(self.cx), self.cy)
        self.yi = np.tile(np.arange(self.cy), self.cx)
        self.level_min = int(min(self.bm.min(), self.cm.min())) if N.size else 0
        size = 2 * n + 2
        self.table = _g_table(size) if size <= LOOKUP_MAX else None
        self._flat: NDArray[np.int64] | None = None
        self._flat_cells: NDArray[np.intp] | None = None

    def _g(self, m: NDArray[np.int64]) -> NDArray[np.float64]:
        if self.table is not None:
            out: NDArray[np.float64] = self.table[m]
            return out
        return g_increment_array(m.astype(np.float64))

    def cells(self, ks: NDArray[np.int64], cells: NDArray[np.intp] | None = None
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-cell bounds on ``+D`` and ``-D``, shape ``(len(ks), strata, cells)`` (all
        cells, or the columns ``cells``). ``g`` is read at the two ends of every box in
        one gather each, over the cell counts, the margins and the stratum sizes laid
        end to end (margin terms are computed once per margin, then broadcast)."""
        st, cx, cy = self.k, self.cx, self.cy
        if self._flat is None or self._flat_cells is not cells:
            a = self.a if cells is None else self.a[:, cells]
            self._flat = np.concatenate([a.ravel(), self.bm.ravel(), self.cm.ravel(), self.d])
            self._flat_cells = cells
        flat = self._flat
        nc = self.a.shape[1] if cells is None else len(cells)
        kk = ks[:, None]
        hi = self._g(flat + kk)
        lo = self._g(np.maximum(flat - kk - 1, 0))
        K = len(ks)
        e1, e2, e3 = st * nc, st * (nc + cx), st * (nc + cx + cy)
        a_hi, b_hi, c_hi, d_hi = hi[:, :e1], hi[:, e1:e2], hi[:, e2:e3], hi[:, e3:]
        a_lo, b_lo, c_lo, d_lo = lo[:, :e1], lo[:, e1:e2], lo[:, e2:e3], lo[:, e3:]
        d_hi, d_lo = d_hi.reshape(K, st, 1), d_lo.reshape(K, st, 1)
        if cells is None:
            a_hi, a_lo = a_hi.reshape(K, st, cx, cy), a_lo.reshape(K, st, cx, cy)
            b_hi, b_lo = b_hi.reshape(K, st, cx, 1), b_lo.reshape(K, st, cx, 1)
            c_hi, c_lo = c_hi.reshape(K, st, 1, cy), c_lo.reshape(K, st, 1, cy)
            d_hi, d_lo = d_hi[..., None], d_lo[..., None]
        else:
            a_hi, a_lo = a_hi.reshape(K, st, nc), a_lo.reshape(K, st, nc)
            xi, yi = self.xi[cells], self.yi[cells]
            b_hi, b_lo = b_hi.reshape(K, st, cx)[:, :, xi], b_lo.reshape(K, st, cx)[:, :, xi]
            c_hi, c_lo = c_hi.reshape(K, st, cy)[:, :, yi], c_lo.reshape(K, st, cy)[:, :, yi]
        up = _up_bound(a_hi, b_lo, c_lo, d_hi)
        down = _down_bound(a_lo, b_hi, c_hi, d_lo)
        return up.reshape(K, st, nc), down.reshape(K, st, nc)

    def rates(self, ks: NDArray[np.int64], cells: NDArray[np.intp] | None = None
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(U, V)`` of shape ``(len(ks), strata)``: per stratum, the largest bounds on
        ``+D`` and ``-D`` over its cells (clamped at 0)."""
        up, down = self.cells(ks, cells)
        if up.shape[2] == 0:
            z = np.zeros(up.shape[:2])
            return z, z.copy()
        return np.maximum(up.max(axis=2), 0.0), np.maximum(down.max(axis=2), 0.0)

    def at_radius(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                         _Cells, _Cells]:
        """``(U, V)`` at radius ``k`` (shape ``(strata,)``) and, per stratum, a cell
        attaining each maximum: ``(stratum, a, b, c)`` arrays. The cells are read in
        blocks of strata of about ``_BLOCK_CELLS`` cells (the same floats as
        :meth:`cells`, with less memory traffic on large tables)."""
        st, cx, cy = self.k, self.cx, self.cy
        g = self._g
        b_hi, b_lo = g(self.bm + k), g(np.maximum(self.bm - k - 1, 0))
        c_hi, c_lo = g(self.cm + k), g(np.maximum(self.cm - k - 1, 0))
        d_hi, d_lo = g(self.d + k), g(np.maximum(self.d - k - 1, 0))
        U, V = np.empty(st), np.empty(st)
        ju, jv = np.empty(st, dtype=np.intp), np.empty(st, dtype=np.intp)
        step = max(1, _BLOCK_CELLS // max(cx * cy, 1))
        for s0 in range(0, st, step):
            sl = slice(s0, min(s0 + step, st))
            a = self.a[sl].reshape(-1, cx, cy)
            up = _up_bound(g(a + k), b_lo[sl, :, None], c_lo[sl, None, :],
                           d_hi[sl, None, None]).reshape(a.shape[0], -1)
            down = _down_bound(g(np.maximum(a - k - 1, 0)), b_hi[sl, :, None],
                               c_hi[sl, None, :], d_lo[sl, None, None]).reshape(a.shape[0], -1)
            ju[sl], jv[sl] = up.argmax(axis=1), down.argmax(axis=1)
            U[sl] = np.take_along_axis(up, ju[sl, None], axis=1)[:, 0]
            V[sl] = np.take_along_axis(down, jv[sl, None], axis=1)[:, 0]
        s = np.arange(st)
        cells = [(s, self.a[s, j], self.bm[s, j // cy], self.cm[s, j % cy]) for j in (ju, jv)]
        return np.maximum(U, 0.0), np.maximum(V, 0.0), cells[0], cells[1]


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

    def at_radius(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                         _Cells, _Cells]:
        """As :meth:`_Ladder.at_radius`."""
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
        return rates[0], rates[1], out[0], out[1]


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


def _per_stratum_g2(N: NDArray[np.int64]) -> NDArray[np.float64]:
    """``G^2`` of each stratum (cell-wise form, clamped at 0); they sum to ``G^2``."""
    ns, nx, ny = _margins(N)
    E = _expected_from(ns, nx, ny)
    logs = np.log(np.divide(N, E, out=np.ones(E.shape), where=N > 0))
    out: NDArray[np.float64] = np.maximum(2.0 * (N * logs).sum(axis=(1, 2)), 0.0)
    return out


#: Radii per refinement pass of the search: 16 on small tables (where a pass costs its
#: fixed overhead), fewer as the table grows (where it costs cells x radii), at least 4.
#: Only the speed depends on it: every radius used is evaluated exactly.
_REFINE_POINTS_SMALL = 16
_REFINE_POINTS_LARGE = 4
_REFINE_CELL_RADII = 16384
#: Tables of at most this many cells are searched without pruning passes.
_LARGE_TABLE = 4096
#: Tables of more than this many cells are searched over candidate cells, with one
#: pass over the cells per check (at most ``_CANDIDATE_ROUNDS`` checks, then the search
#: over every cell), and ``_CANDIDATE_POINTS`` radii per pass over the candidates.
_CANDIDATE_CELLS = 4096
_CANDIDATE_ROUNDS = 8
_CANDIDATE_POINTS = 32
#: Cells per block when one radius is evaluated over a large dense table.
_BLOCK_CELLS = 1 << 15


#: A crossing test with fixed rates, and where its linear part crosses (a first probe).
_Crossing = tuple[Callable[[int], bool], float]
_At = Callable[[NDArray[np.float64], NDArray[np.float64], int], _Crossing]


def _radii(lo: int, hi: int, points: int) -> NDArray[np.int64]:
    """About ``points`` distinct radii evenly spread over ``[lo, hi]``, both ends
    included (``lo <= hi``)."""
    m = min(points, hi - lo + 1)
    if m <= 1:
        return np.array([lo], dtype=np.int64)
    out: NDArray[np.int64] = lo + (hi - lo) * np.arange(m, dtype=np.int64) // (m - 1)
    return out


def _first_crossing_radius(at: _At, ks: NDArray[np.int64], Uk: NDArray[np.float64],
                           Vk: NDArray[np.float64]) -> int:
    """The first ``j`` such that ``t = ks[j] + 1`` crosses with the exact rates of radius
    ``ks[j]`` (``-1`` if none does), by bisection: the crossing is monotone in ``j``
    (rates and ``t`` both grow)."""
    def crosses(j: int) -> bool:
        k = int(ks[j])
        return at(Uk[j], Vk[j], k)[0](k + 1)
    last = len(ks) - 1
    if crosses(0):
        return 0
    if not crosses(last):
        return -1
    hit, miss = last, 0
    while hit - miss > 1:
        mid = (hit + miss) // 2
        if crosses(mid):
            hit = mid
        else:
            miss = mid
    return hit


def g2_distance_details(table: StrataTable, alpha: float) -> G2Distance:
    """:func:`g2_distance` with the G^2 decision and the work done."""
    alpha = _check(alpha, table)
    cx, cy = table.cx, table.cy
    lad: _Ladder | _EntryLadder
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
        cells = lad.size
    else:
        N = table.counts
        if N.shape[0] and not N.any(axis=(1, 2)).all():
            N = N[N.any(axis=(1, 2))]  # only observed strata count (causal-learn's df rule)
        n = int(N.sum())
        if n == 0 or N.size == 0:
            return G2Distance(0, False, 0.0, 0, 1.0, 0)  # no rows: independent, s = 0
        ns, nx, ny = _margins(N)
        df = _df(nx, ny)
        g2 = _g2_from(N, _expected_from(ns, nx, ny)) if df > 0 else 0.0
        strata = int(N.shape[0])
        cells = int(N.size)
        lad = _Ladder(N, n)
    pvalue = 1.0 if df == 0 else float(chdtrc(df, g2))
    dependent = df > 0 and pvalue <= alpha
    unobserved = table.n_configs > strata
    iota_full = max(cx + cy - 3, 0)
    dfmax = float(table.n_configs) * (cx - 1) * (cy - 1)
    gmax = 2.0 * n * math.log(min(cx, cy))
    passes = 0
    points = max(_REFINE_POINTS_LARGE,
                 min(_REFINE_POINTS_SMALL, _REFINE_CELL_RADII // max(cells, 1)))

    def iota(k: int) -> int:
        """Bound on the change of df in one replacement at step ``k``."""
        if lad.level_min <= k + 1 or (unobserved and k >= 1):
            return iota_full
        return 0

    def g_scalar(k: int) -> float:
        if not unobserved:
            return 0.0
        if lad.table is not None and k < lad.table.size:
            return float(lad.table[k])
        return float(g_increment_array(np.array([float(k)]))[0])

    def total_rate(u: NDArray[np.float64], v: NDArray[np.float64], k: int) -> float:
        """``r = 2 (max(U, g(k)) + max(V, g(k)))`` over the strata (plain floats when
        there are few)."""
        gk = g_scalar(k)
        if u.size < 8:
            ul: list[float] = u.tolist()
            vl: list[float] = v.tolist()
            return 2.0 * (max(max(ul), gk) + max(max(vl), gk))
        return 2.0 * (max(float(u.max()), gk) + max(float(v.max()), gk))

    # The crossing tests with fixed rates, as closures over their scalars: the search
    # evaluates them tens of times per table, and with few strata plain floats are far
    # cheaper than NumPy calls. The arithmetic is the same, operation by operation (a
    # NumPy sum of fewer than 8 values adds them in order, as ``sum`` does).
    at: _At
    if dependent:
        gs = _per_stratum_g2_entries(table, E) if isinstance(table, SparseStrataTable) \
            else _per_stratum_g2(N)
        gs_list: list[float] = gs.tolist()
        q_at_zero = _q_upper(alpha, min(df, dfmax))

        def at(u: NDArray[np.float64], v: NDArray[np.float64], k: int) -> _Crossing:
            # m_t(T) <= 0: G^2 - min(t r, sum_s min(G_s, t r_s)) - Q+(min(df + t iota, DFMAX))
            r = total_rate(u, v, k)
            w = u + v
            w_list: list[float] | None = w.tolist() if w.size < 8 else None
            step = iota(k)
            q_fixed = q_at_zero if step == 0 else None

            def crossed(t: int) -> bool:
                t2 = t * 2.0
                if w_list is not None:
                    per_stratum = sum([min(g, t2 * x) for g, x in zip(gs_list, w_list,
                                                                      strict=True)])
                else:
                    per_stratum = float(np.minimum(gs, t2 * w).sum())
                g_part = max(0.0, g2 - min(t * r, per_stratum))
                q = q_fixed if q_fixed is not None else \
                    _q_upper(alpha, min(df + t * step, dfmax))
                return g_part - q <= SLACK * (1.0 + g2 + q)
            return crossed, (g2 - q_at_zero) / r if r > 0 else math.inf
    else:
        q_low_zero = _q_lower(alpha, max(df, 1))

        def at(u: NDArray[np.float64], v: NDArray[np.float64], k: int) -> _Crossing:
            # M_t(T) >= 0: min(G^2 + t r, GMAX) - Q-(max(df - t iota, 1))
            r = total_rate(u, v, k)
            step = iota(k)

            def crossed(t: int) -> bool:
                g_part = min(g2 + t * r, gmax)
                q = _q_lower(alpha, max(df - t * step, 1))
                return g_part - q >= -SLACK * (1.0 + g2 + q)
            return crossed, (q_low_zero - g2) / r if r > 0 else math.inf

    def first(lo: int, hi: int, u: NDArray[np.float64], v: NDArray[np.float64],
              k: int) -> int:
        """Smallest ``t`` in ``[lo, hi]`` crossing with fixed rates (``hi + 1`` if none).

        ``crossed`` is monotone in ``t`` (in floating point too: every operation rounds
        monotonically), so the bisection's answer does not depend on where it probes;
        it first probes next to the crossing of the linear part, ``t r = G^2 - q``,
        which is usually within a step of the answer."""
        crossed, guess = at(u, v, k)
        if not crossed(hi):
            return hi + 1
        if lo < hi and math.isfinite(guess):
            g = min(max(math.ceil(guess), lo), hi)
            if crossed(g):
                if g == lo or not crossed(g - 1):
                    return g
                hi = g - 1
            else:
                if crossed(g + 1):
                    return g + 1
                lo = g + 2
        while lo < hi:
            mid = (lo + hi) // 2
            if crossed(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def narrow(ks: NDArray[np.int64], Uk: NDArray[np.float64], Vk: NDArray[np.float64],
               hit: int) -> tuple[int, int]:
        """The bracket of the answer when radius ``ks[hit]`` crosses and ``ks[hit - 1]``
        does not: within it the exact rates lie between those two radii' rates, so
        crossing with the larger bounds it below and with the smaller above."""
        k_a, k_b = int(ks[hit - 1]), int(ks[hit])
        return (max(k_a + 2, first(k_a + 2, k_b + 1, Uk[hit], Vk[hit], k_b)),
                min(k_b + 1, first(k_a + 2, k_b + 1, Uk[hit - 1], Vk[hit - 1], k_a)))

    # t = k + 1: the rates of step t - 1 decide whether t replacements can cross. The
    # rates are exact at every radius used (cells are only pruned when they provably
    # cannot be a stratum's maximum in the remaining range), so the search returns
    # exactly min(n, smallest crossing t).
    def grid_search(rates: Callable[[NDArray[np.int64]],
                                    tuple[NDArray[np.float64], NDArray[np.float64]]],
                    lo: int, hi: int, per_pass: int) -> int:
        """Smallest ``t`` in ``[lo, hi]`` crossing with ``rates(t - 1)`` (``hi + 1`` if
        none), ``rates`` non-decreasing in the radius: each pass evaluates a grid of radii
        across the bracket (its ends included) and narrows it."""
        nonlocal passes
        while True:
            ks = _radii(lo - 1, hi - 1, per_pass)
            Uk, Vk = rates(ks)
            passes += 1
            hit = _first_crossing_radius(at, ks, Uk, Vk)
            if hit < 0:
                return hi + 1
            if hit == 0:
                return int(ks[0]) + 1
            lo, hi = narrow(ks, Uk, Vk, hit)  # now t = hi crosses
            if lo >= hi:
                return hi

    if cells > _CANDIDATE_CELLS:
        # Large tables: search with the rates over a few candidate cells (a lower bound on
        # the rates at every radius, so their first crossing t is an upper bound on the
        # answer), then check t - 1 with the exact rates of radius t - 2 in one pass over
        # the cells. If t - 1 does not cross, the answer is t (crossing is monotone in
        # t); if it does, the cells attaining the maxima at t - 2 join the candidates,
        # whose rates are then exact there, so the next t is smaller.
        U0, V0, up0, down0 = lad.at_radius(0)
        passes += 1
        if at(U0, V0, 0)[0](1):
            return _done(1, dependent, g2, df, pvalue, passes)
        if n == 1:
            return _done(1, dependent, g2, df, pvalue, passes)  # clamped at n
        cand = _Candidates(lad.d, lad._g)
        cand.add(up0, down0)
        hi = n
        for _ in range(_CANDIDATE_ROUNDS):
            t = min(grid_search(cand.rates, 2, hi, _CANDIDATE_POINTS), n)
            if t <= 2:
                return _done(t, dependent, g2, df, pvalue, passes)  # 1 does not cross
            Uv, Vv, upv, downv = lad.at_radius(t - 2)
            passes += 1
            if not at(Uv, Vv, t - 2)[0](t - 1):
                return _done(t, dependent, g2, df, pvalue, passes)
            cand.add(upv, downv)
            hi = t - 1
        # rarely reached: the exact search below t = hi, which crosses
        return _done(min(grid_search(lad.rates, 2, hi, points), hi), dependent, g2, df,
                     pvalue, passes)

    k0 = np.zeros(1, dtype=np.int64)
    U0, V0 = lad.rates(k0)
    passes += 1
    dist = u_t = 1
    at_one = at(U0[0], V0[0], 0)[0](1)
    if not at_one:
        # rates only grow: crossing with the rates of step 0 bounds the answer above
        u_t = min(first(2, n, U0[0], V0[0], 0), n)
    if not at_one and (cells <= _LARGE_TABLE or isinstance(lad, _EntryLadder)):
        # A small table: each pass costs its fixed overhead, so no pruning passes; each
        # pass evaluates a grid of radii across the bracket (its ends included). Also
        # for a mostly empty table, whose passes read only its non-zero cells.
        # (u_t crosses, or u_t = n and the answer is clamped there)
        dist = min(grid_search(lad.rates, 2, u_t, points), u_t) if u_t > 2 else u_t
    elif not at_one:
        assert isinstance(lad, _Ladder)
        ku = np.array([u_t - 1], dtype=np.int64)
        Uc, Vc = lad.cells(ku)
        passes += 1
        Uu = np.maximum(Uc.max(axis=2), 0.0) if Uc.shape[2] else np.zeros((1, lad.k))
        Vu = np.maximum(Vc.max(axis=2), 0.0) if Vc.shape[2] else np.zeros((1, lad.k))
        if not at(Uu[0], Vu[0], u_t - 1)[0](u_t):
            dist = n  # u_t = n and even n replacements cannot cross: clamp
        else:
            lo_t = first(2, u_t, Uu[0], Vu[0], u_t - 1)  # crossing with the larger rates
            hi_t = u_t
            # Cells whose bound at radius hi_t - 1 does not exceed their stratum's maximum
            # at radius lo_t - 1 are never a maximum in between (bounds grow with the
            # radius): drop them; the stratum maxima stay exact as max(kept, floor).
            Uf, Vf = U0[0], V0[0]
            keep: NDArray[np.intp] | None = None
            upper_cells = (Uc[0], Vc[0])
            dist = hi_t
            while lo_t < hi_t:
                ka = np.array([lo_t - 1], dtype=np.int64)
                Ua, Va = lad.rates(ka, keep)
                passes += 1
                Uf, Vf = np.maximum(Ua[0], Uf), np.maximum(Va[0], Vf)
                if at(Uf, Vf, lo_t - 1)[0](lo_t):
                    dist = lo_t
                    break
                sel = np.flatnonzero(((upper_cells[0] > Uf[:, None])
                                      | (upper_cells[1] > Vf[:, None])).any(axis=0))
                keep = sel if keep is None else keep[sel]
                ks = _radii(lo_t - 1, hi_t - 1, points)
                up, down = lad.cells(ks, keep)
                passes += 1
                if up.shape[2]:
                    Uk = np.maximum(up.max(axis=2), Uf[None, :])
                    Vk = np.maximum(down.max(axis=2), Vf[None, :])
                else:
                    Uk = np.repeat(Uf[None, :], len(ks), axis=0)
                    Vk = np.repeat(Vf[None, :], len(ks), axis=0)
                hit = _first_crossing_radius(at, ks, Uk, Vk)
                if hit < 0:
                    hit = len(ks) - 1
                if hit == 0:
                    dist = int(ks[0]) + 1
                    break
                lo_t, hi_t = narrow(ks, Uk, Vk, hit)
                dist = hi_t
                upper_cells = (up[hit], down[hit])
    return _done(dist, dependent, g2, df, pvalue, passes)


def _done(dist: int, dependent: bool, g2: float, df: int, pvalue: float,
          passes: int) -> G2Distance:
    return G2Distance(dist if dependent else 1 - dist, dependent, g2, df, pvalue, passes)


def g2_distance(table: StrataTable, alpha: float) -> int:
    """Signed distance (in replaced rows) to the G^2 decision at level ``alpha``.

    ``>= 1`` when the G-test says dependent, ``<= 0`` when it says independent;
    replace-one sensitivity 1; decision threshold ``1/2``. ``alpha`` and the table's
    declared ``cx``, ``cy``, ``n_configs`` and ``n`` are public.
    """
    return g2_distance_details(table, alpha).value

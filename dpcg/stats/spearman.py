"""Spearman's rho on stratified contingency tables (midranks from margins).

In block ``b`` with ``m = n_b`` rows, the midrank of x level ``i`` is
``R_i = (rows with a smaller x) + (N_{b,i,+} + 1) / 2``; centred midranks are
``a_i = R_i - (m + 1)/2`` and, exactly in integers, ``2 a_i = 2 cum_{<i} + N_{b,i,+} - m``.
With ``T_b = sum_{i,j} N_{b,i,j} a_i a'_j`` (``a'`` the y midranks):

* :func:`spearman_rho_a_blocks`: ``rho_a = 12 T_b / (m (m^2 - 1))``: Spearman's rho
  with the no-ties normaliser (equal to the usual rho when there are no ties). Its
  replace-one sensitivity is proven in ``docs/privacy/statistics-spearman-rho-a.md``.
* :func:`spearman_rho_blocks`: the usual Spearman rho (Pearson correlation of
  midranks; 0 where x or y is constant in the block). Non-private use only.
* :func:`conditional_spearman_z`: the stratified rank-correlation statistic
  ``sum_b T_b / sqrt(sum_b Sxx_b Syy_b / (m_b - 1))`` (``Sxx_b = sum a_i^2`` over the
  block's rows): the exact permutation null variance of ``T_b`` given the margins is
  ``Sxx_b Syy_b / (m_b - 1)``, so ``z`` is asymptotically N(0,1) under conditional
  independence (the Mantel-Haenszel correlation statistic with midrank scores).
  Non-private use only.
* :func:`conditional_spearman_numerator` / :func:`conditional_spearman_z_public`: the
  private conditional Spearman statistic ``U = sum_b (n_b - 1) rho_a,b
  = sum_b 12 T_b / (n_b (n_b + 1))`` divided by the public ``sqrt(n)`` (an upper bound
  of ``sqrt(sum_b (n_b - 1))``, the null sd of ``U`` without ties). Replace-one
  sensitivity ``16 / sqrt(n)``: ``docs/privacy/statistics-conditional-spearman-z.md``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import SparseStrataTable, StrataTable


def _centred_midranks2(margins: NDArray[np.int64]) -> NDArray[np.float64]:
    """``2 (midrank - (m+1)/2)`` per level, per block (exact integers as float64)."""
    m = margins.sum(axis=1, keepdims=True)
    below = np.cumsum(margins, axis=1) - margins
    out: NDArray[np.float64] = (2 * below + margins - m).astype(np.float64)
    return out


def _parts(
    table: StrataTable,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per block: ``T_b``, ``Sxx_b``, ``Syy_b`` and ``m_b`` (float64). A
    :class:`SparseStrataTable` is read from its non-zero cells (``T_b`` is a sum over
    them), without the dense array."""
    nx = table.x_margins()
    ny = table.y_margins()
    ax = _centred_midranks2(nx)
    ay = _centred_midranks2(ny)
    if isinstance(table, SparseStrataTable):
        s, (x, y) = table.stratum, table.levels()
        T = np.bincount(s, weights=ax[s, x] * table.weight * ay[s, y],
                        minlength=table.k) / 4.0
    else:
        Nf = table.counts.astype(np.float64)
        T = np.einsum("bi,bij,bj->b", ax, Nf, ay) / 4.0
    Sxx = np.einsum("bi,bi->b", nx.astype(np.float64), ax * ax) / 4.0
    Syy = np.einsum("bj,bj->b", ny.astype(np.float64), ay * ay) / 4.0
    return T, Sxx, Syy, table.stratum_sizes().astype(np.float64)


def spearman_rho_a_blocks(table: StrataTable) -> NDArray[np.float64]:
    """``12 T_b / (m (m^2 - 1))`` per block (0 for blocks with < 2 rows)."""
    T, _, _, m = _parts(table)
    denom = m * (m * m - 1.0)
    out = np.zeros_like(T)
    np.divide(12.0 * T, denom, out=out, where=denom > 0)
    return out


def spearman_rho_a(table: StrataTable) -> float:
    """rho_a of an unstratified table."""
    if table.n_strata > 1:
        raise StatisticInputError(
            f"spearman_rho_a needs a single stratum, got {table.n_strata}"
        )
    r = spearman_rho_a_blocks(table)
    return float(r[0]) if r.size else 0.0


def spearman_rho_blocks(table: StrataTable) -> NDArray[np.float64]:
    """Usual Spearman rho (Pearson of midranks) per block; 0 where undefined."""
    T, Sxx, Syy, _ = _parts(table)
    d = np.sqrt(Sxx * Syy)
    out = np.zeros_like(T)
    np.divide(T, d, out=out, where=d > 0)
    return np.clip(out, -1.0, 1.0)


def conditional_spearman_z(table: StrataTable) -> float:
    """Stratified Spearman statistic ``sum T_b / sqrt(sum Sxx_b Syy_b / (m_b - 1))``."""
    T, Sxx, Syy, m = _parts(table)
    ok = m > 1
    V = float(np.sum(Sxx[ok] * Syy[ok] / (m[ok] - 1.0)))
    if V <= 0:
        return 0.0
    return float(np.sum(T)) / math.sqrt(V)


def spearman_rho_a_sensitivity(n: int) -> float:
    """Proven replace-one bound on ``rho_a`` for ``n >= 2`` rows:
    ``12 (floor(n^2/4) + (n-1)^2/2) / (n (n^2 - 1))`` (about ``9/n``)."""
    if n < 2:
        raise StatisticInputError(f"n must be >= 2, got {n}")
    return 12.0 * (n * n // 4 + (n - 1) ** 2 / 2.0) / (n * (n * n - 1.0))


def conditional_spearman_numerator(table: StrataTable) -> float:
    """``U = sum_b (n_b - 1) rho_a,b = sum_b 12 T_b / (n_b (n_b + 1))``."""
    T, _, _, m = _parts(table)
    denom = m * (m + 1.0)
    out = np.zeros_like(T)
    np.divide(12.0 * T, denom, out=out, where=denom > 0)
    return float(np.sum(out))


def conditional_spearman_z_public(table: StrataTable) -> float:
    """``U / sqrt(n)`` with the public ``n`` (all observed strata kept)."""
    n = table.n
    if n == 0:
        return 0.0
    return conditional_spearman_numerator(table) / math.sqrt(n)

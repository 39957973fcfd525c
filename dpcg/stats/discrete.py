"""G^2, chi^2 and conditional mutual information on stratified tables.

With ``N[s, i, j]`` the counts of a :class:`~dpcg.stats.contingency.StrataTable` and
``E[s, i, j] = N[s, i, +] N[s, +, j] / N[s, +, +]`` the expected counts under
conditional independence:

* ``G^2 = 2 sum_{N > 0} N ln(N / E)`` (= ``2 n CMI``);
* ``chi^2 = sum_{E > 0} (N - E)^2 / E``;
* degrees of freedom ``sum_s (r_s - 1)(c_s - 1)`` where ``r_s`` / ``c_s`` are the
  numbers of x / y levels observed in stratum ``s`` (rows and columns of ``E`` that are
  zero are not counted), and the p-value is 1 when the degrees of freedom are 0.

This is the convention of causal-learn's ``Chisq_or_Gsq`` (checked to 1e-9 by
``tests/stats/test_discrete.py``). ``n CMI`` is computed in the entropy form
``sum h(N_sxy) + sum h(N_s) - sum h(N_sx) - sum h(N_sy)`` with ``h(c) = c ln c``, the
form its sensitivity proof (``docs/privacy/statistics-cmi.md``) works with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from dpcg.stats.contingency import (
    Margined,
    SparseStrataTable,
    StackedTables,
    StrataTable,
    strata_margins,
)


@dataclass(frozen=True)
class ChiSquareResult:
    """A G^2 or chi^2 statistic with its degrees of freedom and p-value."""

    statistic: float
    df: int
    pvalue: float


def _xlogx(c: NDArray[np.int64]) -> float:
    """``sum c ln c`` over the entries (``0 ln 0 = 0``)."""
    c = c[c > 1]  # 0 ln 0 = 1 ln 1 = 0
    if c.size == 0:
        return 0.0
    cf = c.astype(np.float64)
    return float(np.dot(cf, np.log(cf)))


def degrees_of_freedom(table: StrataTable) -> int:
    """``sum_s (r_s - 1)(c_s - 1)`` over observed strata (causal-learn's rule)."""
    if table.n_strata == 0:
        return 0
    return _df(table.x_margins(), table.y_margins())


def _df(nx: NDArray[np.int64], ny: NDArray[np.int64]) -> int:
    """Degrees of freedom from the ``(k, cx)`` / ``(k, cy)`` margins of observed strata."""
    k, cx = int(nx.shape[0]), int(nx.shape[1])
    cy = int(ny.shape[1])
    if np.count_nonzero(nx) == k * cx and np.count_nonzero(ny) == k * cy:
        return k * (cx - 1) * (cy - 1)  # every level observed in every stratum
    r = (nx > 0).sum(axis=1)
    c = (ny > 0).sum(axis=1)
    return int(np.dot(r - 1, c - 1))


def n_cmi(table: StrataTable) -> float:
    """``n`` times the plug-in conditional mutual information ``I(X; Y | S)`` in nats.

    Equal to ``G^2 / 2``. Clamped at 0 against rounding (the exact value is >= 0).
    A :class:`SparseStrataTable` is read from its entries (the same terms in the same
    order: bit-identical).
    """
    if isinstance(table, SparseStrataTable):
        val = (_xlogx(table.weight) + _xlogx(table.stratum_sizes())
               - _xlogx(table.x_margins()) - _xlogx(table.y_margins()))
        return max(val, 0.0)
    N = table.counts
    if N.size == 0:
        return 0.0
    val = (
        _xlogx(N)
        + _xlogx(N.sum(axis=(1, 2)))
        - _xlogx(N.sum(axis=2))
        - _xlogx(N.sum(axis=1))
    )
    return max(val, 0.0)


def cmi(table: StrataTable) -> float:
    """Plug-in conditional mutual information ``I(X; Y | S)`` in nats (``G^2 / 2n``)."""
    n = table.n
    return n_cmi(table) / n if n else 0.0


def _margins(N: NDArray[np.int64]
             ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``(N[s, +, +], N[s, i, +], N[s, +, j])``: exact integer margins (by slice sums:
    ``ndarray.sum`` over the short inner axes took 5-10x as long; the same integers)."""
    if N.dtype == np.int64 and N.ndim == 3:
        return strata_margins(N)
    nx = N.sum(axis=2)
    return nx.sum(axis=1), nx, N.sum(axis=1)


def _expected_from(ns: NDArray[np.int64], nx: NDArray[np.int64], ny: NDArray[np.int64]
                   ) -> NDArray[np.float64]:
    """``E = N[s, i, +] N[s, +, j] / N[s, +, +]`` (the integer product is exact and
    rounds once to float64, like the product of the float margins)."""
    out: NDArray[np.float64] = (nx[:, :, None] * ny[:, None, :]) / ns[:, None, None]
    return out


def _expected(N: NDArray[np.int64]) -> NDArray[np.float64]:
    return _expected_from(*_margins(N))


def _g2_and_logs(N: NDArray[np.int64], E: NDArray[np.float64]
                 ) -> tuple[float, NDArray[np.float64]]:
    """``2 sum_{N > 0} N ln(N / E)`` (cells with ``N = 0`` contribute ``0``) and the
    logarithms ``ln(N / E)`` (0 where ``N = 0``) it was summed from."""
    if np.count_nonzero(N) == N.size:
        logs = np.log(N / E)
    else:  # ln 1 = 0 where N = 0 (and E may be 0)
        logs = np.log(np.divide(N, E, out=np.ones(E.shape), where=N > 0))
    return float(max(2.0 * np.dot(N.reshape(-1), logs.reshape(-1)), 0.0)), logs


def _g2_from(N: NDArray[np.int64], E: NDArray[np.float64]) -> float:
    """``2 sum_{N > 0} N ln(N / E)`` (cells with ``N = 0`` contribute ``0``)."""
    return _g2_and_logs(N, E)[0]


def _sparse_expected(table: SparseStrataTable
                     ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """``E`` at a table's non-zero cells (the integer product rounded once, as in
    :func:`_expected_from`) and the ``(k, cx)``, ``(k, cy)`` margins."""
    nx, ny = table.x_margins(), table.y_margins()
    ns = nx.sum(axis=1)
    s, (x, y) = table.stratum, table.levels()
    E: NDArray[np.float64] = (nx[s, x] * ny[s, y]) / ns[s]
    return E, nx, ny


def _g2_sparse(table: SparseStrataTable) -> ChiSquareResult:
    """The G-test from a table's non-zero cells (only they contribute to ``G^2``), and
    ``df`` from the margins: no dense ``(n_strata, cx, cy)`` array."""
    E, nx, ny = _sparse_expected(table)
    return _result(_g2_entries(table.weight, E), _df(nx, ny))


def _g2_entries(N: NDArray[np.int64], E: NDArray[np.float64]) -> float:
    """``G^2`` from the non-zero cells' counts and their ``E``."""
    return float(max(2.0 * np.dot(N, np.log(N / E)), 0.0))


def _chi2_sparse(table: SparseStrataTable) -> float:
    """Pearson's ``chi^2`` from the non-zero cells: their ``(N - E)^2 / E``, plus the
    empty cells' ``E``, which sum to ``n`` minus the non-empty cells' (``E`` sums to the
    stratum size in every stratum)."""
    E, _, _ = _sparse_expected(table)
    d = table.weight - E
    empty = max(float(table.weight.sum()) - float(E.sum()), 0.0)
    return float(np.sum(d * d / E)) + empty


def g2_statistic(table: StrataTable) -> float:
    """``G^2 = 2 sum N ln(N/E)`` (cell-wise form, as in causal-learn)."""
    if isinstance(table, SparseStrataTable):
        return _g2_sparse(table).statistic
    N = table.counts
    if N.size == 0:
        return 0.0
    return _g2_from(N, _expected(N))


def chi2_statistic(table: StrataTable) -> float:
    """Pearson's ``chi^2 = sum_{E>0} (N - E)^2 / E``."""
    if isinstance(table, SparseStrataTable):
        return _chi2_sparse(table)
    N = table.counts
    if N.size == 0:
        return 0.0
    E = _expected(N)
    pos = E > 0
    d = N[pos] - E[pos]
    return float(np.sum(d * d / E[pos]))


def _result(stat: float, df: int) -> ChiSquareResult:
    # chdtrc is the chi^2 survival function (what scipy.stats.chi2.sf evaluates),
    # without the distribution-object overhead (~1 us instead of ~120 us).
    p = 1.0 if df == 0 else float(chdtrc(df, stat))
    return ChiSquareResult(stat, df, p)


def g2_test(table: StrataTable) -> ChiSquareResult:
    """The G-test of ``X _||_ Y | S`` on a stratified table."""
    if isinstance(table, SparseStrataTable):
        return _g2_sparse(table)
    N = table.counts
    if N.size == 0:
        return _result(0.0, 0)
    ns, nx, ny = _margins(N)
    return _g2_dense(N, ns, nx, ny)


def _g2_dense(N: NDArray[np.int64], ns: NDArray[np.int64], nx: NDArray[np.int64],
              ny: NDArray[np.int64]) -> ChiSquareResult:
    return _result(_g2_from(N, _expected_from(ns, nx, ny)), _df(nx, ny))


def g2_test_margined(m: Margined) -> ChiSquareResult:
    """:func:`g2_test` of the dense table ``m.counts`` given its exact margins (from
    :class:`dpcg.stats.contingency.PairTables`): the same statistic, degrees of freedom
    and p-value bit for bit (the margins are exact integers, whichever way they were
    summed; every floating-point step is :func:`g2_test`'s)."""
    if m.counts.size == 0:
        return _result(0.0, 0)
    return _g2_dense(m.counts, m.ns, m.nx, m.ny)


def g2_tests_stacked(st: StackedTables) -> list[ChiSquareResult]:
    """:func:`g2_test` of every table of ``st`` (tables stacked by
    :func:`dpcg.stats.contingency.stack_observed`), bit for bit: the elementwise steps
    (``E``, ``N / E`` where ``N > 0``, the logarithm) run once over all tables, and each
    table's ``G^2`` is the same ``np.dot`` of its own cells as :func:`g2_test`'s (a cell
    with ``N > 0`` gets the same ``ln(N / E)`` in both branches of
    :func:`_g2_and_logs`, an empty cell ``ln 1 = 0``); the degrees of freedom are exact
    integer sums of ``(r_s - 1)(c_s - 1)`` and the p-values the same ``chdtrc``."""
    N, ns, nx, ny, bounds = st
    m = int(bounds.shape[0]) - 1
    if m <= 0:
        return []
    cx, cy = int(N.shape[1]), int(N.shape[2])
    # in float64 from the start: counts (< 2^53) convert exactly, and the float product
    # of two exact integers rounds the exact product once, as the conversion of
    # _expected_from's int64 product does: the same E; and np.dot converts an int64
    # operand to the same float64 values
    k = int(N.shape[0])
    cells = cx * cy
    Nf = N.astype(np.float64)
    E = np.einsum("si,sj->sij", nx.astype(np.float64), ny.astype(np.float64))
    # ln(N / E) where N > 0 and ln 1 = 0 elsewhere, as _g2_and_logs (the quotient of an
    # empty cell, 0 / E or 0 / 0, is replaced by 1 before the logarithm)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(E.reshape(k, cells), ns.astype(np.float64)[:, None],
                  out=E.reshape(k, cells))
        q = np.divide(Nf, E)
    np.putmask(q, N == 0, 1.0)
    logs = np.log(q)
    # observed levels per stratum, by slices (exact)
    r = (nx[:, 0] > 0).astype(np.int64)
    for i in range(1, cx):
        r += nx[:, i] > 0
    c = (ny[:, 0] > 0).astype(np.int64)
    for j in range(1, cy):
        c += ny[:, j] > 0
    per = (r - 1) * (c - 1)
    cum = np.zeros(per.shape[0] + 1, dtype=np.int64)
    np.cumsum(per, out=cum[1:])
    df = cum[bounds[1:]] - cum[bounds[:-1]]
    flat_n = Nf.reshape(-1)
    flat_l = logs.reshape(-1)
    cells = cx * cy
    stats = np.zeros(m)
    lo = bounds[:-1] * cells
    hi = bounds[1:] * cells
    for t in range(m):
        a, b = int(lo[t]), int(hi[t])
        if a < b:
            stats[t] = float(max(2.0 * np.dot(flat_n[a:b], flat_l[a:b]), 0.0))
    pv = np.ones(m)
    live = df != 0
    if bool(live.any()):
        pv[live] = chdtrc(df[live], stats[live])
    return [ChiSquareResult(float(stats[t]), int(df[t]), float(pv[t])) for t in range(m)]


#: The sparse-table rules of the G-test (``docs/stats.md``, "Sparse tables"): how the
#: degrees of freedom treat empty cells, and a minimum of rows per degree of freedom
#: below which independence is assumed (p-value 1). ``causal-learn`` is the default.
SPARSE_RULES: dict[str, tuple[str, float]] = {
    # Chisq_or_Gsq: df summed over observed strata, from their observed levels
    "causal-learn": ("adjusted", 0.0),
    # gSquareDis (adaptDF = FALSE): declared df; n < 10 df -> independence assumed
    "pcalg": ("structural", 10.0),
    # gSquareDis (adaptDF = TRUE): df lowered by one per empty cell (at least 1);
    # n.min still 10 times the declared df
    "pcalg-adaptdf": ("zero-cells", 10.0),
    # bnlearn "mi": declared df, no minimum
    "structural": ("structural", 0.0),
    # the adjusted df with a rule-of-thumb minimum of 5 rows per declared df
    "adjusted-min5": ("adjusted", 5.0),
}


def structural_df(table: StrataTable) -> int:
    """``(cx - 1)(cy - 1) * n_configs``: the degrees of freedom of the declared table
    (every configuration of ``S`` possible, no empty cell discounted)."""
    return (table.cx - 1) * (table.cy - 1) * table.n_configs


def _empty_cells(table: StrataTable) -> int:
    """Cells of the declared ``(n_configs, cx, cy)`` table with count 0 (unobserved
    strata count whole)."""
    cells = table.n_configs * table.cx * table.cy
    if isinstance(table, SparseStrataTable):
        return cells - int(table.weight.shape[0])
    return cells - int(np.count_nonzero(table.counts))


def g2_test_rule(table: StrataTable, rule: str = "causal-learn") -> ChiSquareResult:
    """The G-test under one of :data:`SPARSE_RULES` (the statistic is the same; the
    degrees of freedom and the small-sample rule differ). ``causal-learn`` is
    :func:`g2_test` exactly."""
    try:
        df_rule, min_rows = SPARSE_RULES[rule]
    except KeyError:
        raise ValueError(f"sparse rule: expected one of {', '.join(SPARSE_RULES)}, "
                         f"got {rule!r}") from None
    if df_rule == "adjusted" and min_rows == 0.0:
        return g2_test(table)
    stat = g2_statistic(table)
    declared = structural_df(table)
    if min_rows > 0.0 and table.n < min_rows * declared:
        return ChiSquareResult(stat, declared, 1.0)  # too few rows: independence assumed
    if df_rule == "adjusted":
        return _result(stat, degrees_of_freedom(table))
    if df_rule == "zero-cells":
        return _result(stat, max(declared - _empty_cells(table), 1))
    return _result(stat, declared)


def chi2_test(table: StrataTable) -> ChiSquareResult:
    """Pearson's chi-square test of ``X _||_ Y | S`` on a stratified table."""
    return _result(chi2_statistic(table), degrees_of_freedom(table))

"""Kendall's tau on stratified contingency tables, and the conditional Kendall z.

For one stratum (block) ``b`` with table ``N_b`` (``cx x cy``), the concordance sum
``S_b = C_b - D_b`` counts pairs of rows ordered the same way in x and y (``C``)
minus pairs ordered oppositely (``D``); pairs tied in x or in y count 0. ``C_b`` and
``D_b`` come from 2-D cumulative sums of the table, vectorised across blocks, in exact
``int64`` arithmetic (every product is at most ``n^2/4``, every sum at most
``n(n-1)/2``; :data:`dpcg.stats.contingency.MAX_ROWS` keeps both below 2^63).

* tau-a of a block: ``tau_b = S_b / (n_b (n_b - 1) / 2)`` (0 for ``n_b < 2``).
* Conditional Kendall (Priv-PC Definition 6): ``w_b = 9 n_b (n_b-1) / (2 (2 n_b + 5))``,
  so ``w_b tau_b = 9 S_b / (2 n_b + 5)``; ``U = sum_b w_b tau_b``, ``W = sum_b w_b``.
  Every observed stratum is kept, including strata where x or y is constant
  (``tau_b = 0`` there): skipping them lets one row switch a whole stratum in or out
  (PRIVACY.md section 6, defect 7).

  - :func:`conditional_kendall_z` (the private statistic): ``z = U / sqrt(max(W, W0))``
    with a **public** floor ``W0``; by default ``W0 = 9n/4``, a public upper bound of
    ``W`` (``w_b < 9 n_b / 4``), so the normaliser is the constant ``sqrt(9n/4)``.
    Sensitivity: ``docs/privacy/statistics-conditional-kendall-z.md``.
  - :func:`conditional_kendall_z_unfloored`: ``U / sqrt(W)`` as published; its global
    sensitivity is Theta(1). Non-private use only.
  - :func:`split_kendall_z` (the default private score): the largest ``|z|`` of the
    floored conditional Kendall z over a public family of **binary splits** of x and
    y (:func:`binary_splits`): every split is a row-wise recoding to {0, 1}, so each
    member is the binary-case statistic and the maximum keeps the binary bound
    ``6/sqrt(n)`` for any cardinalities, while it sees non-monotone dependence that
    the ordinal ``z`` averages away. Sensitivity and null variance:
    ``docs/privacy/statistics-split-kendall-z.md``.
  - :func:`tie_corrected_kendall_z`: ``sum_b S_b / sqrt(sum_b Var0(S_b))`` with the exact
    permutation null variance of ``S_b`` given the block's margins (Kendall 1948,
    ties in both variables). Calibrated under ties; non-private use only.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import SparseStrataTable, StrataTable


def _concordance_entries(table: SparseStrataTable) -> NDArray[np.int64]:
    """:func:`concordance` from a table's non-zero cells, exact int64, without the dense
    array: ``S_b = 2 C_b - (pairs differing in both x and y)``, and that count is
    ``(m^2 - sum b^2)/2 - (sum c^2 - sum N^2)/2`` (pairs with different x, minus those
    in one column) from the margins. ``C_b`` (pairs with ``x' < x`` and ``y' < y``) is
    counted by the highest bit in which ``y'`` and ``y`` differ: at bit ``l`` the two
    share ``y >> (l + 1)``, ``y'`` has the bit 0 and ``y`` 1, so per group of equal
    ``(stratum, y >> (l + 1))`` sorted by x (bit-1 cells before bit-0 cells of the same x)
    the weight of bit-0 cells before a bit-1 cell is its count at that level.
    ``O(entries log entries)`` per bit of ``cy - 1``."""
    cx, cy = table.cx, table.cy
    st, w = table.stratum, table.weight
    x, y = table.levels()
    below = np.zeros(w.shape[0], dtype=np.int64)
    idx = np.arange(w.shape[0])
    for level in range(max(cy - 1, 1).bit_length()):
        bit = (y >> level) & 1
        grp = st.astype(np.int64) * ((cy >> (level + 1)) + 1) + (y >> (level + 1))
        order = np.argsort((grp * cx + x) * 2 + (1 - bit), kind="stable")
        g, b = grp[order], bit[order]
        v = np.where(b == 0, w[order], 0)
        before = np.cumsum(v) - v
        start = np.maximum.accumulate(
            np.where(np.concatenate(([True], g[1:] != g[:-1])), idx, 0))
        below[order] += np.where(b == 1, before - before[start], 0)
    starts = np.flatnonzero(np.concatenate(([True], st[1:] != st[:-1])))
    C = np.add.reduceat(w * below, starts)
    m, bm, cm = table.stratum_sizes(), table.x_margins(), table.y_margins()
    n_sq = np.add.reduceat(w * w, starts)
    both = (m * m - (bm * bm).sum(axis=1)) // 2 - ((cm * cm).sum(axis=1) - n_sq) // 2
    out: NDArray[np.int64] = 2 * C - both
    return out


def concordance(table: StrataTable) -> NDArray[np.int64]:
    """``S_b = C_b - D_b`` per observed block, exact int64 (from the non-zero cells of a
    :class:`SparseStrataTable`: :func:`_concordance_entries`)."""
    if isinstance(table, SparseStrataTable):
        if table.cx < 2 or table.cy < 2:
            return np.zeros(table.k, dtype=np.int64)
        return _concordance_entries(table)
    N = table.counts
    k, cx, cy = N.shape
    if k == 0 or cx < 2 or cy < 2:
        return np.zeros(k, dtype=np.int64)
    A = N.cumsum(axis=1).cumsum(axis=2)  # A[b,i,j] = sum_{i'<=i, j'<=j} N[b,i',j']
    # below-left: rows with x' < x and y' < y  -> A[b, i-1, j-1]
    ll = A[:, :-1, :-1]
    # below-right: rows with x' < x and y' > y -> A[b, i-1, cy-1] - A[b, i-1, j]
    lg = A[:, :-1, -1:] - A[:, :-1, :]
    Nin = N[:, 1:, :]
    C = np.einsum("bij,bij->b", Nin[:, :, 1:], ll)
    D = np.einsum("bij,bij->b", Nin, lg)
    return np.asarray(C - D, dtype=np.int64)


def _pairs(sizes: NDArray[np.int64]) -> NDArray[np.int64]:
    return sizes * (sizes - 1) // 2


def tau_a_blocks(table: StrataTable) -> NDArray[np.float64]:
    """Kendall tau-a of each observed block (0 where the block has < 2 rows)."""
    S = concordance(table)
    pairs = _pairs(table.stratum_sizes())
    out = np.zeros(S.shape, dtype=np.float64)
    np.divide(S, pairs, out=out, where=pairs > 0)
    return out


def tau_a(table: StrataTable) -> float:
    """Kendall tau-a of an unstratified table (``n_strata`` must be <= 1)."""
    if table.n_strata > 1:
        raise StatisticInputError(
            f"tau_a needs a single stratum, got {table.n_strata}; use tau_a_blocks"
        )
    t = tau_a_blocks(table)
    return float(t[0]) if t.size else 0.0


def kendall_weights(sizes: NDArray[np.int64]) -> NDArray[np.float64]:
    """``w_b = 9 n_b (n_b - 1) / (2 (2 n_b + 5))`` (inverse null variance of tau-a)."""
    m = sizes.astype(np.float64)
    out: NDArray[np.float64] = 9.0 * m * (m - 1.0) / (2.0 * (2.0 * m + 5.0))
    return out


def kendall_numerator(table: StrataTable) -> float:
    """``U = sum_b w_b tau_b = sum_b 9 S_b / (2 n_b + 5)``."""
    S = concordance(table)
    m = table.stratum_sizes()
    return float(np.sum(9.0 * S.astype(np.float64) / (2.0 * m.astype(np.float64) + 5.0)))


def public_floor(n: int) -> float:
    """The default public floor ``W0 = 9n/4`` (an upper bound of ``W``; depends on the
    public ``n`` only)."""
    return 9.0 * n / 4.0


def conditional_kendall_z(table: StrataTable, w0: float | None = None) -> float:
    """Floored conditional Kendall ``z = U / sqrt(max(W, W0))``.

    ``w0`` must be public (a function of ``n`` and the schema, never of the data);
    ``None`` means the default ``9n/4``, for which the normaliser is the constant
    ``sqrt(9n/4)`` because ``W < 9n/4`` always.
    """
    n = table.n
    if w0 is None:
        # max(W, 9n/4) == 9n/4 exactly (see split_kendall_z): W need not be summed
        return 0.0 if n == 0 else kendall_numerator(table) / math.sqrt(public_floor(n))
    if not (isinstance(w0, int | float) and math.isfinite(w0) and w0 > 0):
        raise StatisticInputError(f"w0 must be a finite number > 0, got {w0!r}")
    if n == 0:
        return 0.0
    W = float(np.sum(kendall_weights(table.stratum_sizes())))
    return kendall_numerator(table) / math.sqrt(max(W, float(w0)))


def conditional_kendall_z_unfloored(table: StrataTable) -> float:
    """Priv-PC Definition 6 as published: ``U / sqrt(W)`` (0 when ``W = 0``).

    NOT low-sensitivity (PRIVACY.md section 4): non-private use only.
    """
    W = float(np.sum(kendall_weights(table.stratum_sizes())))
    if W <= 0:
        return 0.0
    return kendall_numerator(table) / math.sqrt(W)


def _tie_sums(m: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """Per block: sum t(t-1)(2t+5), sum t(t-1)(t-2), sum t(t-1) over tie groups."""
    a = np.sum(m * (m - 1) * (2 * m + 5), axis=1)
    b = np.sum(m * (m - 1) * (m - 2), axis=1)
    c = np.sum(m * (m - 1), axis=1)
    return a, b, c


def kendall_null_variance(table: StrataTable) -> NDArray[np.float64]:
    """Exact permutation variance of ``S_b`` under independence given the block's
    margins, with ties in both variables (Kendall 1948, eq. 4.4):

    ``(v0 - vt - vu)/18 + (sum t(t-1)(t-2))(sum u(u-1)(u-2)) / (9 m(m-1)(m-2))
    + (sum t(t-1))(sum u(u-1)) / (2 m (m-1))``.
    """
    m = table.stratum_sizes().astype(np.float64)
    tx = table.x_margins().astype(np.float64)
    ty = table.y_margins().astype(np.float64)
    vt, t3, t2 = _tie_sums(tx)
    vu, u3, u2 = _tie_sums(ty)
    v0 = m * (m - 1) * (2 * m + 5)
    d3 = 9 * m * (m - 1) * (m - 2)
    d2 = 2 * m * (m - 1)
    term2 = np.zeros_like(m)
    np.divide(t3 * u3, d3, out=term2, where=d3 > 0)
    term3 = np.zeros_like(m)
    np.divide(t2 * u2, d2, out=term3, where=d2 > 0)
    var = (v0 - vt - vu) / 18.0 + term2 + term3
    out: NDArray[np.float64] = np.maximum(var, 0.0)
    return out


def tie_corrected_kendall_z(table: StrataTable) -> float:
    """``sum_b S_b / sqrt(sum_b Var0(S_b))``: N(0, 1) under conditional independence
    (asymptotically), also on heavily tied categorical data. Non-private use only.
    """
    V = float(np.sum(kendall_null_variance(table)))
    if V <= 0:
        return 0.0
    return float(np.sum(concordance(table).astype(np.float64))) / math.sqrt(V)


# --------------------------------------------------------------- binary splits


_SPLITS: dict[int, NDArray[np.int64]] = {}


def binary_splits(c: int) -> NDArray[np.int64]:
    """The public family of binary splits of a ``c``-category variable, as a
    ``(k, c)`` 0/1 matrix whose row ``A`` recodes a value ``v`` to ``A[v]``.

    * ``c <= 1``: no split (``k = 0``); ``c = 2``: the variable itself (``[0, 1]``);
    * ``c >= 3``: each category against the rest (``c`` rows) and the cumulative
      splits ``{v < t}`` for ``t = 2 .. c-2`` (``c - 3`` rows): ``2c - 3`` splits, no
      two equal or complementary (a complement only flips the sign of ``z``).

    Depends on the declared cardinality only (public).
    """
    c = int(c)
    cached = _SPLITS.get(c)
    if cached is not None:
        return cached
    if c <= 1:
        rows: list[list[int]] = []
    elif c == 2:
        rows = [[0, 1]]
    else:
        rows = [[int(v == k) for v in range(c)] for k in range(c)]
        rows += [[int(v < t) for v in range(c)] for t in range(2, c - 1)]
    out = np.array(rows, dtype=np.int64).reshape(len(rows), max(c, 0))
    out.setflags(write=False)
    _SPLITS[c] = out
    return out


_AUGMENTED: dict[int, NDArray[np.int64]] = {}


def _augmented_splits(c: int) -> NDArray[np.int64]:
    """:func:`binary_splits` of ``c`` with a row of ones appended (the whole range)."""
    out = _AUGMENTED.get(c)
    if out is None:
        out = np.vstack([binary_splits(c), np.ones((1, c), dtype=np.int64)])
        out.setflags(write=False)
        _AUGMENTED[c] = out
    return out


#: Up to this much work (strata x cx x cy x (cx + cy)) the splits are applied by an
#: exact int64 matrix product, which has less fixed overhead than the prefix sums of
#: :func:`_recode`; above it the product's cost grows a factor of ``c`` faster.
_PRODUCT_MAX_WORK = 20_000


_Num = TypeVar("_Num", np.int64, np.float64)


def _recode(N: NDArray[_Num], c: int, axis: int) -> NDArray[_Num]:
    """The product ``A N`` along ``axis`` of ``N`` (exact for int64 counts), where ``A`` is
    :func:`_augmented_splits` of ``c``, from prefix sums instead of a matrix product:
    the one-category splits are the lines of ``N`` themselves, the cumulative cuts
    ``{v < t}`` and the row of ones are prefix sums. ``O(c)`` per line instead of
    ``O(c^2)``, which keeps the score's cost within a few times G^2's for many
    categories."""
    P = np.cumsum(N, axis=axis)
    take = partial(np.take, axis=axis)
    if c == 2:
        parts = [take(N, [1]), take(P, [1])]
    else:
        parts = [N, take(P, np.arange(1, c - 2)), take(P, [c - 1])]
    return np.concatenate(parts, axis=axis)


#: Above this many (block, split pair) terms, with more than one block, ``U`` is summed
#: over the blocks before the splits are applied (:func:`_split_u_summed`) instead of
#: block by block.
_BLOCKWISE_MAX_WORK = 10_000


def _split_u_from(M: NDArray[np.float64], bm: NDArray[np.int64], cm: NDArray[np.int64],
                  w: NDArray[np.float64], cx: int, cy: int, kx: int, ky: int
                  ) -> NDArray[np.float64]:
    """``U = A_x (M - Q) A_y^T`` from the weighted table ``M = sum_b w_b m_b N_b`` and
    ``Q = sum_b w_b bm_b cm_b^T`` (the blocks' x and y margins ``bm``, ``cm``; ``w`` per
    block): the splits' row totals are ``R = bm A_x^T`` and column totals
    ``C = cm A_y^T``, so ``R^T diag(w) C = A_x Q A_y^T`` and the splits are applied once,
    to one ``cx x cy`` table. Shared by :func:`_split_u_summed` and
    :func:`_split_u_sparse`."""
    Q = (bm.T.astype(np.float64) * w) @ cm.astype(np.float64)  # (cx, cy)
    U: NDArray[np.float64] = _recode(_recode((M - Q)[None], cx, 1), cy, 2)[0, :kx, :ky]
    return U


def _split_u_summed(N: NDArray[np.int64], m: NDArray[np.int64], cx: int, cy: int,
                    kx: int, ky: int) -> NDArray[np.float64]:
    """``U`` of every pair of splits without a ``(blocks, kx, ky)`` intermediate.

    ``U = sum_b w_b (m_b a_b - r_b s_b)`` with ``w_b = 9 / (2 m_b + 5)`` splits into
    ``A_x (sum_b w_b m_b N_b) A_y^T`` minus ``R^T diag(w) C`` (``R``, ``C``: every
    block's row and column totals under the splits), which is
    ``A_x (sum_b w_b (m_b N_b - bm_b cm_b^T)) A_y^T``: the splits applied once, to one
    weighted ``cx x cy`` table (:func:`_split_u_from`).
    Blocks of at most one row add exactly 0 (``m a = r s``) and are left out. The same
    ``U`` as the exact block-by-block sum up to float rounding (at most 2.4e-12 on the
    ``z`` scale over 300 random tables of up to 200,000 rows and 3,000 blocks, against
    a bound of ``6/sqrt(n)``); memory
    ``O(k (cx + cy))`` instead of ``O(k kx ky)``, which matters when ``S`` has thousands
    of configurations of high-cardinality variables (a ``6,339 x 92 x 88`` table: 0.3 s
    instead of 6.6 s and gigabytes of intermediates). ``m``: the block sizes."""
    keep = m >= 2
    if not keep.all():
        N, m = N[keep], m[keep]
    if N.shape[0] == 0:
        return np.zeros((kx, ky), dtype=np.float64)
    w = 9.0 / (2.0 * m.astype(np.float64) + 5.0)
    M = np.tensordot(w * m, N.astype(np.float64), axes=(0, 0))  # (cx, cy)
    return _split_u_from(M, N.sum(axis=2), N.sum(axis=1), w, cx, cy, kx, ky)


def _split_u_sparse(table: SparseStrataTable, kx: int, ky: int
                    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """:func:`_split_u_summed` on a table kept as its non-zero cells: the weighted
    ``cx x cy`` table and the blocks' margins are accumulated from the entries
    (``O(entries + k (cx + cy))`` memory, no dense ``(k, cx, cy)`` array)."""
    cx, cy = table.cx, table.cy
    m = table.stratum_sizes()
    keep = m >= 2  # blocks of at most one row add exactly 0
    w = np.where(keep, 9.0 / (2.0 * m.astype(np.float64) + 5.0), 0.0)
    coef = (w * m)[table.stratum] * table.weight
    M = np.asarray(np.bincount(table.cell, weights=coef, minlength=cx * cy),
                   dtype=np.float64).reshape(cx, cy)  # float weights: float64 already
    U = _split_u_from(M, table.x_margins()[keep], table.y_margins()[keep], w[keep],
                      cx, cy, kx, ky)
    return U, m


def _split_parts(table: StrataTable) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``(U, m)``: ``U`` of every pair of splits (``(kx, ky)``) and the block sizes.

    ``G = A_x N A_y^T`` per block, with the splits augmented by a row of ones
    (:func:`_augmented_splits`; a matrix product for few categories, :func:`_recode`
    along each axis for many), gives, exactly in int64, ``a`` (x in split i
    and y in split j, ``G[:i, :j]``), the row totals ``r`` (``G[:, ky]``), the column
    totals ``s`` (``G[kx, :]``) and the block size ``m`` (``G[kx, ky]``).
    """
    cx, cy = table.cx, table.cy
    kx, ky = binary_splits(cx).shape[0], binary_splits(cy).shape[0]
    if (isinstance(table, SparseStrataTable) and table.k > 1 and kx and ky
            and table.k * kx * ky > _BLOCKWISE_MAX_WORK):
        return _split_u_sparse(table, kx, ky)
    N = table.counts
    k = N.shape[0]
    if k == 0 or kx == 0 or ky == 0:
        return np.zeros((kx, ky), dtype=np.float64), N.sum(axis=(1, 2))
    if k > 1 and k * kx * ky > _BLOCKWISE_MAX_WORK:
        m = N.sum(axis=(1, 2))
        return _split_u_summed(N, m, cx, cy, kx, ky), m
    if k * cx * cy * (cx + cy) <= _PRODUCT_MAX_WORK:
        G = _augmented_splits(cx) @ N @ _augmented_splits(cy).T  # (k, kx + 1, ky + 1)
    else:
        G = _recode(_recode(N, cx, 1), cy, 2)
    m = G[:, kx, ky]
    a = G[:, :kx, :ky]  # rows with x in A and y in B
    r = G[:, :kx, ky]  # (k, kx)
    s = G[:, kx, :ky]  # (k, ky)
    S = m[:, None, None] * a - r[:, :, None] * s[:, None, :]
    w = 9.0 / (2.0 * m.astype(np.float64) + 5.0)
    U: NDArray[np.float64] = (w @ S.reshape(k, kx * ky).astype(np.float64)).reshape(kx, ky)
    return U, m


def split_kendall_u(table: StrataTable) -> NDArray[np.float64]:
    """``U`` of every pair of splits: ``(kx, ky)`` array, entry ``(i, j)`` the
    conditional Kendall numerator of the data recoded by split ``i`` of x and split
    ``j`` of y (:func:`binary_splits` of the declared cardinalities).

    For a 2 x 2 block with ``a = n_11``, row total ``r`` (x in the split), column
    total ``s`` (y in the split) and size ``m``: ``S = C - D = m a - r s`` (exact in
    int64), so all pairs of splits come from ``A_x N A_y^T`` per block (with many
    blocks, summed over the blocks first: :func:`_split_u_summed`).
    """
    return _split_parts(table)[0]


def split_kendall_z(table: StrataTable, w0: float | None = None) -> float:
    """``max_{i, j} |U_ij| / sqrt(max(W, W0))``: the largest floored conditional Kendall
    ``|z|`` over the binary splits of x and y (:func:`split_kendall_u`). ``W`` depends
    on the block sizes only, so every pair of splits shares the normaliser; ``w0`` is
    public (default ``9n/4``, making it the constant ``sqrt(9n/4)``). Non-negative.
    """
    U, m = _split_parts(table)
    n = int(m.sum())
    if w0 is None:
        if n == 0 or U.size == 0:
            return 0.0
        # The default floor always wins: each block has w_b = 9 m(m-1)/(2(2m+5)), and
        # 9m/4 - w_b = 63 m / (4 (2m + 5)) is 0 for m = 0 and >= 2.25 for m >= 1, far
        # above float rounding, so max(W, 9n/4) == 9n/4 exactly and W need not be summed.
        return float(np.abs(U).max()) / math.sqrt(public_floor(n))
    if not (isinstance(w0, int | float) and math.isfinite(w0) and w0 > 0):
        raise StatisticInputError(f"w0 must be a finite number > 0, got {w0!r}")
    if n == 0 or U.size == 0:
        return 0.0
    W = float(np.sum(kendall_weights(m)))
    return float(np.abs(U).max()) / math.sqrt(max(W, float(w0)))

"""Tables kept as their non-zero cells (``SparseStrataTable``).

A table of many observed strata of high-cardinality variables is mostly empty; the
in-memory builder then keeps its non-zero cells instead of a dense
``(n_strata, cx, cy)`` array, and the split Kendall numerators read them directly.
Every statistic must give the same value on both layouts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcg.stats.contingency as contingency
import dpcg.stats.kendall as kendall
from dpcg.stats.contingency import SparseStrataTable, StrataTable, table_from_codes
from dpcg.stats.discrete import (
    chi2_statistic,
    chi2_test,
    degrees_of_freedom,
    g2_statistic,
    g2_test,
    n_cmi,
)
from dpcg.stats.g2_distance import g2_distance
from dpcg.stats.kendall import (
    concordance,
    conditional_kendall_z,
    split_kendall_u,
    split_kendall_z,
    tau_a_blocks,
    tie_corrected_kendall_z,
)
from dpcg.stats.spearman import (
    conditional_spearman_z,
    conditional_spearman_z_public,
    spearman_rho_a_blocks,
    spearman_rho_blocks,
)


def _both(x: np.ndarray, y: np.ndarray, s: np.ndarray, cx: int, cy: int, k: int,
          monkeypatch: pytest.MonkeyPatch) -> tuple[StrataTable, StrataTable]:
    """The same table in the dense layout and (forced) in the sparse one."""
    dense = table_from_codes(x, y, s, cx, cy, k)
    with monkeypatch.context() as m:
        m.setattr(contingency, "DENSE_CELLS_MIN", 0)
        m.setattr(contingency, "DENSE_CELLS_PER_ROW", 0)
        m.setattr(contingency, "SPARSE_CELLS_PER_ROW", 0)
        sparse = table_from_codes(x, y, s, cx, cy, k)
    return dense, sparse


@st.composite
def stratified(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(1, 60))
    cx = draw(st.integers(1, 9))
    cy = draw(st.integers(1, 9))
    k = draw(st.integers(1, 12))
    ints = st.lists
    x = np.array(draw(ints(st.integers(0, cx - 1), min_size=n, max_size=n)), dtype=np.int64)
    y = np.array(draw(ints(st.integers(0, cy - 1), min_size=n, max_size=n)), dtype=np.int64)
    s = np.array(draw(ints(st.integers(0, k - 1), min_size=n, max_size=n)), dtype=np.int64)
    return x, y, s, np.array([cx, cy, k])


@given(stratified())
@settings(max_examples=200, deadline=None)
def test_sparse_layout_holds_the_same_table(d: tuple[np.ndarray, ...]) -> None:
    x, y, s, (cx, cy, k) = d
    with pytest.MonkeyPatch.context() as mp:
        dense, sparse = _both(x, y, s, int(cx), int(cy), int(k), mp)
    assert isinstance(sparse, SparseStrataTable)
    assert not isinstance(dense, SparseStrataTable)
    # margins and sizes come from the entries, without the dense array
    assert sparse.n == dense.n
    assert sparse.n_strata == dense.n_strata
    np.testing.assert_array_equal(sparse.stratum_sizes(), dense.stratum_sizes())
    np.testing.assert_array_equal(sparse.x_margins(), dense.x_margins())
    np.testing.assert_array_equal(sparse.y_margins(), dense.y_margins())
    # the G-test reads the entries: same df, G^2 up to the order of the float sum
    got, want = g2_test(sparse), g2_test(dense)
    assert got.df == want.df
    assert got.statistic == pytest.approx(want.statistic, rel=1e-12, abs=1e-9)
    assert got.pvalue == pytest.approx(want.pvalue, rel=1e-9, abs=1e-12)
    assert g2_statistic(sparse) == got.statistic
    # df, n CMI (the same terms in the same order), chi^2 and Spearman's parts read the
    # entries too
    assert degrees_of_freedom(sparse) == degrees_of_freedom(dense) == want.df
    assert n_cmi(sparse) == n_cmi(dense)
    assert chi2_statistic(sparse) == pytest.approx(chi2_statistic(dense), rel=1e-10,
                                                   abs=1e-9)
    assert chi2_test(sparse).df == chi2_test(dense).df
    for f in (conditional_spearman_z, conditional_spearman_z_public):
        assert f(sparse) == pytest.approx(f(dense), rel=1e-10, abs=1e-12)
    for blocks in (spearman_rho_blocks, spearman_rho_a_blocks):
        np.testing.assert_allclose(blocks(sparse), blocks(dense), rtol=1e-10, atol=1e-12)
    # Kendall's concordance counts from the entries: the same integers
    np.testing.assert_array_equal(concordance(sparse), concordance(dense))
    for f in (conditional_kendall_z, tie_corrected_kendall_z):
        assert f(sparse) == f(dense)
    np.testing.assert_array_equal(tau_a_blocks(sparse), tau_a_blocks(dense))
    # the G^2 decision distance searches the same rates from the entries
    for alpha in (0.05, 0.2, 0.6):
        assert g2_distance(sparse, alpha) == g2_distance(dense, alpha)
    assert "counts" not in vars(sparse)
    assert (sparse.cx, sparse.cy, sparse.n_configs) == (dense.cx, dense.cy, dense.n_configs)
    # every statistic that reads the dense array gets the same array
    np.testing.assert_array_equal(sparse.counts, dense.counts)
    assert sparse.counts.dtype == np.int64


@given(stratified())
@settings(max_examples=200, deadline=None)
def test_split_u_from_the_entries_equals_the_exact_sum(d: tuple[np.ndarray, ...]) -> None:
    """With the block-wise path switched off, ``U`` is accumulated from the non-zero
    cells; it equals the exact block-by-block ``U`` up to float rounding."""
    x, y, s, (cx, cy, k) = d
    with pytest.MonkeyPatch.context() as mp:
        dense, sparse = _both(x, y, s, int(cx), int(cy), int(k), mp)
        exact = split_kendall_u(dense)
        mp.setattr(kendall, "_BLOCKWISE_MAX_WORK", -1)
        summed = split_kendall_u(sparse)
    assert summed.shape == exact.shape
    scale = math.sqrt(9 * len(x) / 4)
    np.testing.assert_allclose(summed / scale, exact / scale, rtol=0, atol=1e-12)


def test_many_strata_of_many_categories_stay_sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test conditioning on two 60-state variables at 20,000 rows: the builder keeps
    the non-zero cells (a dense table would have about 3,000 x 80 x 70 cells), and
    the split score never materialises the dense array; its value is the exact one."""
    rng = np.random.default_rng(7)
    n, cx, cy, cs = 20_000, 80, 70, 60
    s1, s2 = rng.integers(0, cs, n), rng.integers(0, cs, n)
    x = (s1 + rng.integers(0, 4, n)) % cx
    y = np.where(rng.random(n) < 0.3, x % cy, rng.integers(0, cy, n))
    codes = np.vstack([x, y, s1, s2])
    t = contingency.contingency_table(codes, [cx, cy, cs, cs], 0, 1, [2, 3])
    assert isinstance(t, SparseStrataTable)
    assert len(t.weight) <= n < t.k * cx * cy // 16
    z = split_kendall_z(t)
    dist = g2_distance(t, 0.05)
    for stat in (g2_test, chi2_test, n_cmi, conditional_kendall_z, tie_corrected_kendall_z,
                 conditional_spearman_z, conditional_spearman_z_public):
        stat(t)  # every statistic reads the entries
    assert "counts" not in vars(t)
    monkeypatch.setattr(kendall, "_BLOCKWISE_MAX_WORK", 10**12)
    exact = split_kendall_z(StrataTable(t.counts, cx, cy, t.n_configs))
    assert abs(z - exact) < 1e-11
    assert dist == g2_distance(StrataTable(t.counts, cx, cy, t.n_configs), 0.05) >= 1


def test_small_tables_stay_dense() -> None:
    rng = np.random.default_rng(3)
    n = 5_000
    codes = np.vstack([rng.integers(0, 4, n), rng.integers(0, 3, n),
                       rng.integers(0, 5, n), rng.integers(0, 2, n)])
    t = contingency.contingency_table(codes, [4, 3, 5, 2], 0, 1, [2, 3])
    assert type(t) is StrataTable


def test_unknown_attributes_still_raise() -> None:
    t = SparseStrataTable(np.zeros(1, np.intp), np.zeros(1, np.intp), np.ones(1, np.int64),
                          1, 2, 2, 1)
    with pytest.raises(AttributeError):
        _ = t.not_an_attribute
    np.testing.assert_array_equal(t.counts, [[[1, 0], [0, 0]]])

"""G^2 / chi^2 / CMI against causal-learn and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.errors import StatisticInputError
from dpcg.stats import (
    chi2_test,
    cmi,
    contingency_table,
    degrees_of_freedom,
    g2_test,
    n_cmi,
    table_from_codes,
)
from dpcg.stats.contingency import StrataTable
from tests.stats.conftest import make_codes

CASES = [
    # (seed, n, cards, S)
    (0, 2000, [2, 3, 4, 2, 3, 5], ()),
    (1, 2000, [2, 3, 4, 2, 3, 5], (2,)),
    (2, 500, [3, 3, 4, 2, 3, 5], (2, 3)),
    (3, 300, [2, 4, 4, 3, 3, 5], (2, 3, 4)),
    (4, 60, [3, 3, 4, 4, 5, 5], (2, 3, 4)),  # sparse strata
    (5, 40, [4, 4, 2, 5, 5, 5], (3, 4, 5)),  # very sparse, some df = 0 strata
    (6, 5000, [2, 2, 2, 2, 2, 2], (2, 3, 4)),
    (7, 30, [5, 5, 2, 2, 2, 2], ()),  # unobserved levels
]


@pytest.mark.oracle
@pytest.mark.parametrize(("seed", "n", "cards", "S"), CASES)
def test_pvalues_match_causal_learn(
    seed: int, n: int, cards: list[int], S: tuple[int, ...]
) -> None:
    cit = pytest.importorskip("causallearn.utils.cit")
    codes = make_codes(seed, n, cards)
    for indep in (False, True):
        if indep:
            codes = make_codes(seed + 100, n, cards, dependent=False)
        t = contingency_table(codes, cards, 0, 1, S)
        data = codes.T.astype(np.int64)
        g_ref = cit.CIT(data, "gsq")(0, 1, list(S))
        c_ref = cit.CIT(data, "chisq")(0, 1, list(S))
        assert abs(g2_test(t).pvalue - g_ref) <= 1e-9
        assert abs(chi2_test(t).pvalue - c_ref) <= 1e-9


def _table(rows: list[list[list[int]]]) -> StrataTable:
    a = np.array(rows, dtype=np.int64)
    return StrataTable(a, a.shape[1], a.shape[2], a.shape[0])


def test_hand_computed_2x2() -> None:
    # [[10, 20], [30, 40]]: E = [[12, 18], [28, 42]]
    t = _table([[[10, 20], [30, 40]]])
    g = 2 * (10 * math.log(10 / 12) + 20 * math.log(20 / 18) + 30 * math.log(30 / 28)
             + 40 * math.log(40 / 42))
    c = 4 / 12 + 4 / 18 + 4 / 28 + 4 / 42
    assert g2_test(t).statistic == pytest.approx(g, rel=1e-12)
    assert chi2_test(t).statistic == pytest.approx(c, rel=1e-12)
    assert g2_test(t).df == 1
    assert 2 * n_cmi(t) == pytest.approx(g, rel=1e-12)
    assert cmi(t) == pytest.approx(g / 200, rel=1e-12)


def test_df_rule_counts_observed_levels_per_stratum() -> None:
    t = _table([[[5, 0, 1], [0, 0, 0], [2, 0, 3]], [[1, 1, 1], [1, 1, 1], [0, 0, 0]]])
    # stratum 0: 2 x-levels, 2 y-levels -> 1; stratum 1: 2 x 3 -> 2
    assert degrees_of_freedom(t) == 3
    one = _table([[[5, 0], [0, 0]]])
    assert degrees_of_freedom(one) == 0
    assert g2_test(one).pvalue == 1.0


def test_independent_table_has_zero_statistics() -> None:
    t = _table([[[2, 4], [3, 6]], [[1, 1], [1, 1]]])
    assert g2_test(t).statistic == pytest.approx(0.0, abs=1e-12)
    assert chi2_test(t).statistic == pytest.approx(0.0, abs=1e-12)
    assert n_cmi(t) == pytest.approx(0.0, abs=1e-12)


def test_dense_and_unique_paths_agree() -> None:
    codes = make_codes(9, 400, [3, 3, 7, 7, 7, 7])
    cards = [3, 3, 7, 7, 7, 7]
    t = contingency_table(codes, cards, 0, 1, (2, 3, 4, 5))  # 2401*9 cells > 4n: unique path
    # the same table from a compressed label
    s = ((codes[2].astype(np.int64) * 7 + codes[3]) * 7 + codes[4]) * 7 + codes[5]
    _, inv = np.unique(s, return_inverse=True)
    t2 = table_from_codes(codes[0], codes[1], inv, 3, 3, int(inv.max()) + 1)
    assert np.array_equal(t.counts, t2.counts)
    assert t.n == 400
    assert t.n_configs == 7**4


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 80), st.integers(0, 3))
def test_row_permutation_and_xy_symmetry(seed: int, n: int, k: int) -> None:
    cards = [3, 2, 2, 3, 2]
    codes = make_codes(seed, n, cards)
    S = tuple(range(2, 2 + k))
    perm = np.argsort(np.random.default_rng(seed).random(n))
    t = contingency_table(codes, cards, 0, 1, S)
    tp = contingency_table(codes[:, perm], cards, 0, 1, S)
    ts = contingency_table(codes, cards, 1, 0, S)
    for f in (lambda u: g2_test(u).statistic, lambda u: chi2_test(u).statistic, n_cmi):
        assert f(tp) == pytest.approx(f(t), rel=1e-12, abs=1e-9)
        assert f(ts) == pytest.approx(f(t), rel=1e-12, abs=1e-9)
    assert degrees_of_freedom(ts) == degrees_of_freedom(t)


def test_bad_input_raises() -> None:
    codes = make_codes(0, 10, [2, 2, 2])
    with pytest.raises(StatisticInputError, match="outside"):
        contingency_table(codes, [2, 1, 2], 0, 1)
    with pytest.raises(StatisticInputError, match="distinct"):
        contingency_table(codes, [2, 2, 2], 0, 0)
    with pytest.raises(StatisticInputError, match="column index"):
        contingency_table(codes, [2, 2, 2], 0, 3)
    with pytest.raises(StatisticInputError, match="cardinality"):
        contingency_table(codes, [2, None, 2], 0, 1)
    with pytest.raises(StatisticInputError, match="integer"):
        contingency_table(codes.astype(float), [2, 2, 2], 0, 1)


@pytest.mark.parametrize(
    ("cards", "S", "n"),
    [
        ([3, 4, 2, 3], (2, 3), 1000),  # dense with lanes
        ([50, 50, 20], (2,), 300),  # dense without lanes (50000 cells, 8x exceeds limit)
        ([4, 4, 9, 9, 9, 9, 9], (2, 3, 4, 5, 6), 500),  # one sort: observed strata, dense
        ([40, 30, 50, 50], (2, 3), 800),  # one sort: kept as the non-zero cells
        ([300, 400], (), 600),  # no S, more cells than the dense limit: one sort
        # more than 2^62 possible cells: the configuration index is compressed first
        ([5, 6, *[100] * 9], tuple(range(2, 11)), 400),
        ([60, 70, *[100] * 9], tuple(range(2, 11)), 400),  # ... and kept sparse
        ([2, 2], (), 1),  # one row
    ],
)
def test_table_matches_naive_count(cards: list[int], S: tuple[int, ...], n: int) -> None:
    codes = make_codes(11, n, cards, dependent=False)
    t = contingency_table(codes, cards, 0, 1, S)
    naive: dict[tuple[int, ...], np.ndarray] = {}
    for r in range(n):
        key = tuple(int(codes[j, r]) for j in S)
        naive.setdefault(key, np.zeros((cards[0], cards[1]), dtype=np.int64))
        naive[key][codes[0, r], codes[1, r]] += 1
    expected = np.stack([naive[k] for k in sorted(naive)])  # observed strata, mixed-radix order
    assert np.array_equal(t.counts, expected)
    assert t.n == n
    assert t.n_strata == len(naive)

"""Conditional Kendall: naive parity, properties, and the published counterexample."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.errors import StatisticInputError
from dpcg.stats import table_from_codes
from dpcg.stats.contingency import StrataTable
from dpcg.stats.kendall import (
    concordance,
    conditional_kendall_z,
    conditional_kendall_z_unfloored,
    kendall_null_variance,
    kendall_numerator,
    tau_a,
    tau_a_blocks,
    tie_corrected_kendall_z,
)
from dpcg.stats.registry import get


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def naive(x: list[int], y: list[int], s: list[int]) -> tuple[float, float, dict[int, int]]:
    """Plain double loop over pairs within each stratum: (U, W, S per stratum)."""
    U = 0.0
    W = 0.0
    Ss: dict[int, int] = {}
    for b in sorted(set(s)):
        rows = [i for i in range(len(x)) if s[i] == b]
        m = len(rows)
        S = 0
        for a in range(m):
            for c in range(a + 1, m):
                i, j = rows[a], rows[c]
                S += _sign(x[i] - x[j]) * _sign(y[i] - y[j])
        Ss[b] = S
        w = 9 * m * (m - 1) / (2 * (2 * m + 5))
        tau = S / (m * (m - 1) / 2) if m > 1 else 0.0
        U += w * tau
        W += w
    return U, W, Ss


@pytest.mark.parametrize("seed", range(12))
def test_matches_naive_double_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 70))
    cx, cy, k = (int(v) for v in rng.integers(1, 6, 3))
    x = rng.integers(0, cx, n)
    y = (x + rng.integers(0, 2, n)) % cy if seed % 2 else rng.integers(0, cy, n)
    s = rng.integers(0, k, n)
    if seed % 3 == 0:
        x[s == 0] = 0  # a constant-x stratum: must be kept (tau = 0), not skipped
    t = table_from_codes(x, y, s, cx, cy, k)
    U, W, Ss = naive(x.tolist(), y.tolist(), s.tolist())
    assert np.array_equal(concordance(t), np.array([Ss[b] for b in sorted(Ss)]))
    assert kendall_numerator(t) == pytest.approx(U, abs=1e-12)
    if W > 0:
        assert conditional_kendall_z_unfloored(t) == pytest.approx(U / math.sqrt(W), abs=1e-12)
    w0 = 9 * n / 4
    assert conditional_kendall_z(t) == pytest.approx(U / math.sqrt(max(W, w0)), abs=1e-12)
    assert conditional_kendall_z(t, 0.7) == pytest.approx(U / math.sqrt(max(W, 0.7)), abs=1e-12)


def test_constant_strata_are_kept() -> None:
    # stratum 0 has x constant: tau = 0, but its weight counts in W
    x = np.array([0, 0, 0, 0, 0, 1, 2])
    y = np.array([0, 1, 2, 1, 0, 1, 2])
    s = np.array([0, 0, 0, 0, 0, 1, 1])
    t = table_from_codes(x, y, s, 3, 3, 2)
    assert t.n_strata == 2
    assert tau_a_blocks(t).tolist() == [0.0, 1.0]
    w5 = 9 * 5 * 4 / (2 * 15)
    w2 = 9 * 2 * 1 / (2 * 9)
    assert conditional_kendall_z_unfloored(t) == pytest.approx(w2 / math.sqrt(w5 + w2))


def test_hand_computed_tau() -> None:
    # (0,0),(1,2),(2,1): pairs: (0,1) C, (0,2) C, (1,2) D -> S = 1, tau = 1/3
    t = table_from_codes(np.array([0, 1, 2]), np.array([0, 2, 1]), None, 3, 3)
    assert concordance(t).tolist() == [1]
    assert tau_a(t) == pytest.approx(1 / 3)


def test_no_int64_overflow_at_large_counts() -> None:
    """Priv-PC's xtie*ytie product overflows; ours stays exact (one 2x2 block of 4e8 rows
    is represented directly by its counts)."""
    big = 10**8
    counts = np.array([[[big, big], [big, big]]], dtype=np.int64)
    t = StrataTable(counts, 2, 2, 1)
    assert concordance(t).tolist() == [big * big - big * big]
    counts = np.array([[[2 * big, 0], [0, 2 * big]]], dtype=np.int64)
    t = StrataTable(counts, 2, 2, 1)
    assert concordance(t).tolist() == [4 * big * big]
    assert tau_a(t) == pytest.approx(4 * big * big / (4 * big * (4 * big - 1) / 2))


def test_tie_corrected_matches_scipy() -> None:
    from scipy.stats import kendalltau, norm

    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, 400)
    y = (x + rng.integers(0, 3, 400)) % 4
    t = table_from_codes(x, y, None, 3, 4)
    z = tie_corrected_kendall_z(t)
    ref = kendalltau(x, y, method="asymptotic")
    assert 2 * norm.sf(abs(z)) == pytest.approx(ref.pvalue, rel=1e-9)
    assert (kendall_null_variance(t) > 0).all()


def test_tie_corrected_is_calibrated_under_ties() -> None:
    """Under independence with heavy ties the tie-corrected z has sd ~ 1, while the
    Def. 6 weights (tau-a variance without ties) give sd well below 1."""
    rng = np.random.default_rng(7)
    zs, zu = [], []
    for _ in range(300):
        n = 400
        s = rng.integers(0, 4, n)
        x = rng.integers(0, 2, n)
        y = rng.integers(0, 2, n)
        t = table_from_codes(x, y, s, 2, 2, 4)
        zs.append(tie_corrected_kendall_z(t))
        zu.append(conditional_kendall_z_unfloored(t))
    assert 0.85 < float(np.std(zs)) < 1.15
    assert float(np.std(zu)) < 0.75


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 60))
def test_properties(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    y = rng.integers(0, 3, n)
    s = rng.integers(0, 3, n)
    perm = rng.permutation(n)
    t = table_from_codes(x, y, s, 4, 3, 3)
    tp = table_from_codes(x[perm], y[perm], s[perm], 4, 3, 3)
    tsym = table_from_codes(y, x, s, 3, 4, 3)
    trev = table_from_codes(3 - x, y, s, 4, 3, 3)  # reversing x's order flips the sign
    for f in (
        conditional_kendall_z,
        conditional_kendall_z_unfloored,
        tie_corrected_kendall_z,
        kendall_numerator,
    ):
        v = f(t)
        assert f(tp) == pytest.approx(v, abs=1e-12)
        assert f(tsym) == pytest.approx(v, abs=1e-12)
        assert f(trev) == pytest.approx(-v, abs=1e-12)
    # the public normaliser only shrinks the statistic
    assert abs(conditional_kendall_z(t)) <= abs(conditional_kendall_z_unfloored(t)) + 1e-12


def test_bad_floor_rejected() -> None:
    t = table_from_codes(np.array([0, 1]), np.array([0, 1]), None, 2, 2)
    with pytest.raises(StatisticInputError, match="w0"):
        conditional_kendall_z(t, 0.0)
    with pytest.raises(StatisticInputError, match="w0"):
        conditional_kendall_z(t, float("nan"))


# --- the published counterexample (PRIVACY.md section 4) -------------------------------


def _blocks_2_and_4(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n - 4)/2 strata of size 2, each with x constant, plus one stratum of size 4
    with S = 1 (tau = 1/6)."""
    k = (n - 4) // 2
    x = np.r_[np.zeros(2 * k, dtype=np.int64), [0, 1, 2, 3]]
    y = np.r_[np.tile([0, 1], k), [0, 2, 1, 1]]  # 4-block: C = 3, D = 2, one tie
    s = np.r_[np.repeat(np.arange(k), 2), [k, k, k, k]]
    return x, y, s


def _skipping_z(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> float:
    """The Priv-PC reference code's variant: strata where x or y is constant are
    skipped (dropped from U and W). PRIVACY.md section 6, defect 7."""
    U = W = 0.0
    k = int(s.max()) + 1
    t = table_from_codes(x, y, s, int(x.max()) + 1, int(y.max()) + 1, k)
    S = concordance(t)
    m = t.stratum_sizes()
    nx = np.count_nonzero(t.x_margins(), axis=1)
    ok = (nx > 1) & (np.count_nonzero(t.y_margins(), axis=1) > 1)
    U = float(np.sum(9.0 * S[ok] / (2.0 * m[ok] + 5.0)))
    W = float(np.sum(9.0 * m[ok] * (m[ok] - 1) / (2.0 * (2.0 * m[ok] + 5.0))))
    return U / math.sqrt(W) if W > 0 else 0.0


def test_counterexample_unfloored_violates_priv_pc_claim() -> None:
    n = 10_000
    claimed = 4.5 / math.sqrt(n)  # Priv-PC Thm 3: c1/sqrt(n), c1 -> 9/2: ~0.045
    x, y, s = _blocks_2_and_4(n)
    t0 = table_from_codes(x, y, s, 4, 4, int(s.max()) + 1)
    assert concordance(t0)[-1] == 1  # the size-4 block: C = 3, D = 2
    # neighbour: one size-2 block (x constant) becomes discordant, (0,1) -> (1,0)
    # one row changes: block 0 goes from (0,0),(0,1) (x constant) to (1,0),(0,1)
    x2, y2 = x.copy(), y.copy()
    x2[0], y2[0] = 1, 0
    assert int(np.sum((x2 != x) | (y2 != y))) == 1
    dz_skip = abs(_skipping_z(x2, y2, s) - _skipping_z(x, y, s))
    assert dz_skip == pytest.approx(0.47, abs=0.01)  # the published |dz| = 0.47
    assert dz_skip > 10 * claimed

    # Definition 6 keeping every stratum, unfloored: Theta(1) sensitivity once most
    # rows sit in singleton strata (W small): 9,996 singleton strata plus the size-4
    # block, concordant; one singleton row moves into another singleton's stratum
    # and forms a discordant pair.
    k = n - 4
    xa = np.r_[np.zeros(k, dtype=np.int64), [0, 1, 2, 3]]
    ya = np.r_[np.zeros(k, dtype=np.int64), [0, 1, 2, 3]]
    xa[0], ya[0], xa[1], ya[1] = 1, 0, 0, 1
    sa = np.r_[np.arange(k), [k] * 4]
    sb = sa.copy()
    sb[0] = 1  # rows 0 and 1 now share a stratum: (1,0), (0,1) -> tau = -1
    ta = table_from_codes(xa, ya, sa, 4, 4, k + 1)
    tb = table_from_codes(xa, ya, sb, 4, 4, k + 1)
    dz = abs(conditional_kendall_z_unfloored(ta) - conditional_kendall_z_unfloored(tb))
    assert dz > 0.6  # ~0.65, independent of n
    assert dz > 10 * claimed

    # the floored statistic with the public normaliser respects its declared bound
    spec = get("conditional-kendall-z")
    bound = spec.bound(n=n, w0=9 * n / 4)
    assert bound == pytest.approx(9 / math.sqrt(n))
    for (xx, yy, ss), (xx2, yy2, ss2) in (
        ((x, y, s), (x2, y2, s)),
        ((xa, ya, sa), (xa, ya, sb)),
    ):
        d = abs(
            spec.evaluate(xx, yy, ss, n=n, w0=9 * n / 4)
            - spec.evaluate(xx2, yy2, ss2, n=n, w0=9 * n / 4)
        )
        assert d <= bound

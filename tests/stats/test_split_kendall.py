"""The split conditional Kendall z: definition, binary case, null variance, bound.

Proof note: docs/privacy/statistics-split-kendall-z.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import table_from_codes
from dpcg.stats.kendall import (
    binary_splits,
    conditional_kendall_z,
    kendall_null_variance,
    kendall_numerator,
    split_kendall_u,
    split_kendall_z,
)
from dpcg.stats.registry import get


@st.composite
def stratified(draw: st.DrawFn, max_c: int = 6) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(0, 40))
    cx = draw(st.integers(1, max_c))
    cy = draw(st.integers(1, max_c))
    k = draw(st.integers(1, 4))
    x = np.array(draw(st.lists(st.integers(0, cx - 1), min_size=n, max_size=n)), dtype=np.int64)
    y = np.array(draw(st.lists(st.integers(0, cy - 1), min_size=n, max_size=n)), dtype=np.int64)
    s = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), dtype=np.int64)
    return x, y, s, np.array([cx, cy, k])


@pytest.mark.parametrize("c", range(0, 9))
def test_family_shape_and_no_duplicates(c: int) -> None:
    F = binary_splits(c)
    expected = 0 if c <= 1 else 1 if c == 2 else 2 * c - 3
    assert F.shape == (expected, max(c, 0))
    seen: set[tuple[int, ...]] = set()
    for row in F:
        t = tuple(int(v) for v in row)
        comp = tuple(1 - v for v in t)
        assert 0 < sum(t) < c, "a split must have both sides non-empty"
        assert t not in seen, "duplicate split"
        assert comp not in seen, "complementary split"
        seen.add(t)
    if c >= 3:  # every single category is split off
        assert all(tuple(int(v == k) for v in range(c)) in seen for k in range(c))


@settings(max_examples=150, deadline=None)
@given(stratified())
def test_every_member_is_kendall_of_the_recoded_data(d: tuple[np.ndarray, ...]) -> None:
    x, y, s, (cx, cy, k) = d
    t = table_from_codes(x, y, s, int(cx), int(cy), int(k))
    U = split_kendall_u(t)
    Fx, Fy = binary_splits(int(cx)), binary_splits(int(cy))
    assert U.shape == (Fx.shape[0], Fy.shape[0])
    n = x.size
    for i in range(Fx.shape[0]):
        for j in range(Fy.shape[0]):
            rec = table_from_codes(Fx[i][x], Fy[j][y], s, 2, 2, int(k))
            assert U[i, j] == pytest.approx(kendall_numerator(rec), abs=1e-9)
            if n:
                assert abs(U[i, j]) / math.sqrt(9 * n / 4) <= split_kendall_z(t) + 1e-12
    if n and U.size:
        assert split_kendall_z(t) == pytest.approx(
            float(np.abs(U).max()) / math.sqrt(9 * n / 4), rel=1e-12)
    else:
        assert split_kendall_z(t) == 0.0


@settings(max_examples=100, deadline=None)
@given(stratified(max_c=2))
def test_binary_variables_give_the_kendall_z(d: tuple[np.ndarray, ...]) -> None:
    x, y, s, (_cx, _cy, k) = d
    t = table_from_codes(x, y, s, 2, 2, int(k))
    if x.size == 0:
        assert split_kendall_z(t) == 0.0
        return
    assert split_kendall_z(t) == pytest.approx(abs(conditional_kendall_z(t)), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(stratified())
def test_null_variance_of_every_member_is_at_most_nine_sixteenths(
        d: tuple[np.ndarray, ...]) -> None:
    """Claim 4: the exact permutation variance of every member's U (given each block's
    margins) is at most (9/16)(9n/4)."""
    x, y, s, (cx, cy, k) = d
    n = x.size
    Fx, Fy = binary_splits(int(cx)), binary_splits(int(cy))
    for i in range(Fx.shape[0]):
        for j in range(Fy.shape[0]):
            rec = table_from_codes(Fx[i][x], Fy[j][y], s, 2, 2, int(k))
            m = rec.stratum_sizes().astype(np.float64)
            var_u = float(np.sum(81.0 * kendall_null_variance(rec) / (2 * m + 5) ** 2))
            assert var_u <= (9 / 16) * (9 * n / 4) + 1e-9


def test_null_variance_bound_is_approached_by_balanced_splits() -> None:
    # one block of m rows, half with x in A and half with y in B: Var/(9n/4) -> 9/16
    m = 2000
    x = np.repeat([0, 1], m // 2)
    y = np.tile([0, 1], m // 2)
    rec = table_from_codes(x, y, None, 2, 2)
    var_u = float(81.0 * kendall_null_variance(rec)[0] / (2 * m + 5) ** 2)
    assert 0.99 * 9 / 16 < var_u / (9 * m / 4) <= 9 / 16


def test_sees_non_monotone_dependence() -> None:
    # y = 1 exactly when x is the middle category: tau-a is 0, a split sees it
    x = np.tile([0, 1, 2], 300)
    y = (x == 1).astype(np.int64)
    t = table_from_codes(x, y, None, 3, 2)
    assert conditional_kendall_z(t) == pytest.approx(0.0, abs=1e-12)
    assert split_kendall_z(t) > 10.0


def test_bound_is_nearly_attained_with_three_categories() -> None:
    """Three blocks: m rows at (0,1) plus one at (1,0); m rows at (0,0); m rows at (0,0)
    plus one at (1,1). Every member's U is 0. Moving the (1,0) row of the first block to
    (1,1) in the second makes U of every member about 2 x 9/2: the change is almost
    6/sqrt(n), with x and y declared three-category (kendall-z's bound would be 7.5)."""
    spec = get("split-kendall-z")

    def data(moved: bool, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = [0] * m + [0] * m + [0] * m + [1]
        y = [1] * m + [0] * m + [0] * m + [1]
        s = [0] * m + [1] * m + [2] * (m + 1)
        x.append(1)
        y.append(1 if moved else 0)
        s.append(1 if moved else 0)
        return np.array(x), np.array(y), np.array(s)

    m = 400
    d, d2 = data(False, m), data(True, m)
    n = d[0].size
    pub: dict[str, float] = {"n": n, "w0": 9 * n / 4, "cx": 3, "cy": 3}
    before = spec.evaluate(d[0], d[1], d[2], **pub)
    after = spec.evaluate(d2[0], d2[1], d2[2], **pub)
    assert before == pytest.approx(0.0, abs=1e-12)
    ratio = abs(after - before) / spec.bound(**pub)
    assert 0.98 < ratio <= 1.0
    assert spec.bound(**pub) == pytest.approx(6 / math.sqrt(n))


def test_registered_bounds() -> None:
    n = 100_000
    r1 = get("split-kendall-z")
    ar = get("split-kendall-z", "add-remove")
    for cx, cy in ((2, 2), (3, 3), (4, 6)):
        assert r1.bound(n=n, w0=9 * n / 4, cx=cx, cy=cy) == pytest.approx(6 / math.sqrt(n))
        assert r1.bound(n=n, w0=10.0, cx=cx, cy=cy) == pytest.approx(11.25 / math.sqrt(10))
        assert ar.bound(w0=9 * n / 4, cx=cx, cy=cy) == pytest.approx(5.625 / math.sqrt(9 * n / 4))
    with pytest.raises(StatisticInputError):
        r1.bound(n=n, w0=9 * n / 4, cx=0, cy=3)
    with pytest.raises(StatisticInputError):
        r1.evaluate(np.array([0, 3]), np.array([0, 1]), n=2, w0=4.5, cx=3, cy=2)


def test_bad_floor_is_rejected() -> None:
    t = table_from_codes(np.array([0, 1]), np.array([1, 0]), None, 2, 2)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(StatisticInputError):
            split_kendall_z(t, bad)


@settings(max_examples=200, deadline=None)
@given(stratified(), st.integers(1, 5000))
def test_default_floor_is_exactly_the_explicit_floor(d: tuple[np.ndarray, ...],
                                                      scale: int) -> None:
    """The default path skips summing W because max(W, 9n/4) is always 9n/4: it must
    return exactly what the explicit ``w0 = 9n/4`` path (which takes the max) returns,
    also for large blocks (counts scaled up)."""
    x, y, s, (cx, cy, k) = d
    t = table_from_codes(x, y, s, int(cx), int(cy), int(k))
    t = type(t)(t.counts * scale, t.cx, t.cy, t.n_configs)
    n = int(t.counts.sum())
    w0 = 9.0 * n / 4.0
    for f in (split_kendall_z, conditional_kendall_z):
        if n == 0:
            assert f(t) == 0.0
        else:
            assert f(t) == f(t, w0=w0)
    W = float(np.sum(9.0 * t.stratum_sizes() * (t.stratum_sizes() - 1.0)
                     / (2.0 * (2.0 * t.stratum_sizes() + 5.0))))
    assert n == 0 or w0 - W > 2.0


@pytest.mark.parametrize("seed", range(3))
def test_prefix_sum_recoding_is_the_split_matrix_product(seed: int) -> None:
    """The splits are applied by prefix sums (O(c) per line); the result is exactly the
    product with the split family plus a row of ones, for many categories too."""
    from dpcg.stats.kendall import _recode

    rng = np.random.default_rng(seed)
    for _ in range(40):
        cx, cy = (int(v) for v in rng.integers(2, 40, 2))
        k = int(rng.integers(1, 5))
        N = rng.integers(0, 50, (k, cx, cy)).astype(np.int64)
        ax = np.vstack([binary_splits(cx), np.ones((1, cx), dtype=np.int64)])
        ay = np.vstack([binary_splits(cy), np.ones((1, cy), dtype=np.int64)])
        want = ax @ N @ ay.T
        got = _recode(_recode(N, cx, 1), cy, 2)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


@given(stratified())
@settings(max_examples=100, deadline=None)
def test_both_ways_of_applying_the_splits_give_the_same_u(d: tuple[np.ndarray, ...]) -> None:
    """The matrix product (few categories) and the prefix sums (many) give the same
    ``U`` bit for bit, so the member-by-member check above covers both."""
    import dpcg.stats.kendall as mod

    x, y, s, (cx, cy, k) = d
    t = table_from_codes(x, y, s, int(cx), int(cy), int(k))
    product = split_kendall_u(t)
    saved = mod._PRODUCT_MAX_WORK
    try:
        mod._PRODUCT_MAX_WORK = -1  # every table through the prefix sums
        prefix = split_kendall_u(t)
    finally:
        mod._PRODUCT_MAX_WORK = saved
    np.testing.assert_array_equal(prefix, product)


@given(stratified(max_c=8))
@settings(max_examples=150, deadline=None)
def test_summing_over_blocks_first_gives_the_same_u(d: tuple[np.ndarray, ...]) -> None:
    """With many blocks ``U`` is summed over the blocks before the splits are applied
    (no ``(blocks, kx, ky)`` intermediate); it equals the exact block-by-block ``U`` up
    to float rounding, far below the bound ``6/sqrt(n)`` on the ``z`` scale."""
    import dpcg.stats.kendall as mod

    x, y, s, (cx, cy, k) = d
    t = table_from_codes(x, y, s, int(cx), int(cy), int(k))
    exact = split_kendall_u(t)
    saved = mod._BLOCKWISE_MAX_WORK
    try:
        mod._BLOCKWISE_MAX_WORK = -1
        summed = split_kendall_u(t) if int(k) > 1 else exact
    finally:
        mod._BLOCKWISE_MAX_WORK = saved
    assert summed.shape == exact.shape
    scale = math.sqrt(9 * max(len(x), 1) / 4)
    np.testing.assert_allclose(summed / scale, exact / scale, rtol=0, atol=1e-12)


def test_summing_over_blocks_first_on_large_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpcg.stats.kendall as mod

    rng = np.random.default_rng(4)
    for _ in range(20):
        cx, cy = (int(v) for v in rng.integers(2, 31, 2))
        k, n = int(rng.integers(2, 61)), 20_000
        x = rng.integers(0, cx, n)
        y = np.where(rng.random(n) < 0.3, x % cy, rng.integers(0, cy, n))
        s = np.where(rng.random(n) < 0.5, 0, rng.integers(0, k, n))
        t = table_from_codes(x, y, s, cx, cy, k)
        monkeypatch.setattr(mod, "_BLOCKWISE_MAX_WORK", 10**12)
        exact = split_kendall_u(t)
        monkeypatch.setattr(mod, "_BLOCKWISE_MAX_WORK", -1)
        summed = split_kendall_u(t)
        scale = math.sqrt(9 * n / 4)
        np.testing.assert_allclose(summed / scale, exact / scale, rtol=0, atol=1e-11)


# ------------------------------------------- claim 5: a test given the empty set


@st.composite
def marginal_neighbours(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Codes of one stratum and a replace-one neighbour (one row's x and y redrawn)."""
    n = draw(st.integers(1, 40))
    cx = draw(st.integers(1, 6))
    cy = draw(st.integers(1, 6))
    x = np.array(draw(st.lists(st.integers(0, cx - 1), min_size=n, max_size=n)), dtype=np.int64)
    y = np.array(draw(st.lists(st.integers(0, cy - 1), min_size=n, max_size=n)), dtype=np.int64)
    i = draw(st.integers(0, n - 1))
    x2, y2 = x.copy(), y.copy()
    x2[i] = draw(st.integers(0, cx - 1))
    y2[i] = draw(st.integers(0, cy - 1))
    return x, y, x2, y2, np.array([cx, cy])


@settings(max_examples=400, deadline=None)
@given(marginal_neighbours(), st.sampled_from(["default", "small", "large"]))
def test_empty_set_bound_holds_for_replace_one(d: tuple[np.ndarray, ...], floor: str) -> None:
    """Claim 5: given the empty set a replaced row stays in the one stratum, so the split
    z moves by less than 4.5/sqrt(w0) (3/sqrt(n) at the default floor, half of claim 1's
    bound), for any floor and any declared cardinalities."""
    x, y, x2, y2, (cx, cy) = d
    n = x.size
    w0 = {"default": 9 * n / 4, "small": 0.5, "large": 40.0 * n}[floor]
    spec = get("split-kendall-z-marginal")
    pub: dict[str, float] = {"n": n, "w0": w0, "cx": int(cx), "cy": int(cy)}
    strata = np.zeros(n, dtype=np.int64)
    a = spec.evaluate(x, y, strata, **pub)
    b = spec.evaluate(x2, y2, np.arange(n), **pub)  # the spec ignores strata: one stratum
    assert abs(a - b) < spec.bound(**pub)
    assert a == pytest.approx(split_kendall_z(
        table_from_codes(x, y, None, int(cx), int(cy)), w0), abs=1e-12)


def test_empty_set_bound_is_half_and_nearly_attained() -> None:
    """Every row at (0, 0): replacing one by (1, 1) gives S = n - 1 for the binary pair,
    0.99 of 3/sqrt(n) at n = 400; the bound is exactly half of claim 1's at the default
    floor, and it is registered under replace-one only."""
    spec = get("split-kendall-z-marginal")
    n = 400
    x = np.zeros(n, dtype=np.int64)
    y = np.zeros(n, dtype=np.int64)
    x2, y2 = x.copy(), y.copy()
    x2[0] = y2[0] = 1
    pub: dict[str, float] = {"n": n, "w0": 9 * n / 4, "cx": 2, "cy": 2}
    strata = np.zeros(n, dtype=np.int64)
    change = abs(spec.evaluate(x2, y2, strata, **pub) - spec.evaluate(x, y, strata, **pub))
    assert 0.98 < change / spec.bound(**pub) < 1.0
    assert spec.bound(**pub) == pytest.approx(3 / math.sqrt(n))
    for cx, cy in ((2, 2), (3, 5)):
        full = get("split-kendall-z").bound(n=10**5, w0=9 * 10**5 / 4, cx=cx, cy=cy)
        assert spec.bound(n=10**5, w0=9 * 10**5 / 4, cx=cx, cy=cy) == pytest.approx(full / 2)
    with pytest.raises(StatisticInputError):
        get("split-kendall-z-marginal", "add-remove")
    with pytest.raises(StatisticInputError):
        spec.bound(n=n, w0=0.0, cx=2, cy=2)

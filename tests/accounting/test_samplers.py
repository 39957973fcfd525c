"""Distribution tests of every sampler (fixed seeds: deterministic)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from accounting.errors import InvalidParameterError
from accounting.mechanisms import (
    Exponential,
    Gaussian,
    Laplace,
    ReportNoisyMax,
    SmoothSensitivityMedian,
    SparseVector,
    SubsampledSparseVector,
    smooth_sensitivity_median,
)
from accounting.noise import (
    GaussianGrid,
    LaplaceGrid,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    make_generator,
)

P_MIN = 1e-3  # fixed seeds make these deterministic; the bar only guards regressions


def lap_cdf(x: np.ndarray, b: float) -> np.ndarray:
    left = 0.5 * np.exp(np.minimum(x, 0) / b)
    right = 1 - 0.5 * np.exp(-np.maximum(x, 0) / b)
    out: np.ndarray = np.where(x < 0, left, right)
    return out


def lap_pdf(x: np.ndarray, b: float) -> np.ndarray:
    out: np.ndarray = np.exp(-np.abs(x) / b) / (2 * b)
    return out


XS = np.linspace(-60.0, 60.0, 600001)


def integral(values: np.ndarray) -> float:
    return float(np.trapezoid(values, XS))


def chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    probs = probs / probs.sum()
    expected = probs * counts.sum()
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


def test_make_generator() -> None:
    g1, explicit = make_generator(5)
    g2, _ = make_generator(5)
    assert explicit
    assert np.array_equal(g1.random(3), g2.random(3))
    g3, explicit3 = make_generator(None)
    g4, _ = make_generator(None)
    assert not explicit3
    assert not np.array_equal(g3.random(3), g4.random(3))
    assert g3.bit_generator.seed_seq.entropy.bit_length() > 64  # type: ignore[attr-defined]


def test_bernoulli_exp() -> None:
    rng = np.random.default_rng(1)
    num = np.repeat(np.array([0, 1, 3, 7], dtype=np.int64), 40000)
    out = bernoulli_exp(rng, num, 7).reshape(4, -1).mean(axis=1)
    assert out[0] == 1.0
    np.testing.assert_allclose(out, np.exp(-np.array([0, 1, 3, 7]) / 7), atol=0.01)


@pytest.mark.parametrize(("t", "s"), [(1, 1), (7, 2), (3, 10), (1000, 1)])
def test_discrete_laplace_pmf(t: int, s: int) -> None:
    rng = np.random.default_rng(t * 31 + s)
    y = discrete_laplace(rng, t, s, 60000)
    q = math.exp(-s / t)
    lo, hi = int(y.min()), int(y.max())
    support = np.arange(lo, hi + 1)
    counts = np.bincount(y - lo, minlength=support.size).astype(float)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    # add the mass outside the observed range to the ends so probabilities sum to 1
    tail = q ** (np.abs(np.array([lo, hi])) + 1) / (1 + q)
    pmf[0] += tail[0]
    pmf[-1] += tail[1]
    assert chi2_p(counts, pmf) > P_MIN
    assert abs(y.var() - 2 * q / (1 - q) ** 2) < 0.05 * 2 * q / (1 - q) ** 2 + 0.01


@pytest.mark.parametrize("sampler", ["discrete", "float"])
def test_laplace_matches_continuous(sampler: str) -> None:
    rng = np.random.default_rng(11)
    mech = Laplace(0.3, 0.7, sampler=sampler)
    x = mech.sample(1.25, rng, 20000)
    ks = stats.kstest(x, stats.laplace(loc=1.25, scale=mech.scale).cdf)
    assert ks.pvalue > P_MIN
    v = mech.sample([0.0, 10.0], rng, 20000)
    assert stats.kstest(v[:, 1], stats.laplace(loc=10.0, scale=mech.scale).cdf).pvalue > P_MIN


def test_grid_scale_covers_rounding() -> None:
    for sens, eps, d, mult in [(0.3, 0.7, 1, 1), (1e-6, 5.0, 7, 2), (12.4, 1e-4, 10**5, 1)]:
        grid = LaplaceGrid.build(sens, eps, d, mult)
        g = grid.step
        assert grid.grid_sensitivity == mult * (math.floor(sens / g) + d)
        # discrete scale t/s (grid units) >= grid_sensitivity/eps
        assert grid.t * eps >= grid.grid_sensitivity * grid.s * (1 - 1e-15)
        assert grid.t < 2**46
        # extra noise from the grid step: <= 2^-20 relative, or 2d/(eps 2^44) when the
        # scale cap coarsens the grid
        slack = max(2.0**-19, 2 * d / (eps * 2.0**44))
        assert grid.scale <= mult * sens / eps * (1 + slack)


@pytest.mark.parametrize("sampler", ["discrete", "float"])
def test_gaussian_ks(sampler: str) -> None:
    rng = np.random.default_rng(3)
    mech = Gaussian(1.0, 2.5, sampler=sampler)
    x = mech.sample(-1.0, rng, 20000)
    assert stats.kstest(x, stats.norm(loc=-1.0, scale=2.5).cdf).pvalue > P_MIN
    v = mech.sample([0.0, 3.0, 7.0], rng, 20000)
    assert stats.kstest(v[:, 2], stats.norm(loc=7.0, scale=2.5).cdf).pvalue > P_MIN
    if sampler == "discrete":
        g = mech.grid(3).step
        assert np.all(v / g == np.rint(v / g))


@pytest.mark.parametrize("t", [1, 2, 3, 7, 30])
def test_discrete_gaussian_pmf(t: int) -> None:
    rng = np.random.default_rng(100 + t)
    y = discrete_gaussian(rng, t, 60000)
    lo, hi = int(y.min()), int(y.max())
    support = np.arange(lo - 3 * t, hi + 3 * t + 1)
    counts = np.bincount(y - support[0], minlength=support.size).astype(float)
    pmf = np.exp(-(support.astype(float) ** 2) / (2.0 * t * t))
    assert chi2_p(counts, pmf) > P_MIN


def test_gaussian_grid_covers_rounding() -> None:
    for d2, sigma, d in [(0.1, 3.0, 1), (1e-6, 5.0, 7), (0.05, 50.0, 10**5), (2.0, 0.01, 4)]:
        grid = GaussianGrid.build(d2, sigma, d)
        g = Fraction(grid.step)
        r = grid.root_dimension
        assert r * r >= d
        assert (r - 1) ** 2 < d
        # (Delta2/g + r)^2 / (2 t^2) <= Delta2^2/(2 sigma^2), exactly
        lhs = (Fraction(d2) / g + r) ** 2 / (2 * grid.t**2)
        rhs = Fraction(d2) ** 2 / (2 * Fraction(sigma) ** 2)
        assert lhs <= rhs
        assert grid.t < 2**26
        # noise increase: <= 2^-19, or 4 r sigma/(Delta2 2^26) when the cap on t binds
        assert grid.sigma <= sigma * (1 + max(2.0**-19, 4 * r * sigma / (d2 * 2.0**26)))


def test_exponential_mechanism_chi2() -> None:
    rng = np.random.default_rng(4)
    u = np.array([0.0, 1.0, 2.5, -3.0, 2.0])
    mech = Exponential(1.5, 2.0)
    probs = mech.probabilities(u)
    expected = np.exp(2.0 * u / 3.0)
    np.testing.assert_allclose(probs, expected / expected.sum())
    idx = mech.sample(u, rng, 40000)
    assert chi2_p(np.bincount(idx, minlength=5).astype(float), probs) > P_MIN
    # huge utilities stay stable (Gumbel-max never exponentiates)
    big = mech.probabilities(u * 1e6)
    assert np.isfinite(big).all()
    assert mech.release(u * 1e6, rng) == 2


def test_rnm_gumbel_is_exponential_mechanism() -> None:
    rng = np.random.default_rng(6)
    s = np.array([0.0, 1.0, 2.0, 0.5])
    idx = ReportNoisyMax(0.5, 1.0, "gumbel").sample(s, rng, 40000)
    probs = Exponential(0.5, 1.0).probabilities(s)
    assert chi2_p(np.bincount(idx, minlength=4).astype(float), probs) > P_MIN


def permute_and_flip_probs(s: np.ndarray, sens: float, eps: float) -> np.ndarray:
    p = np.exp(eps * (s - s.max()) / (2 * sens))
    out = np.zeros(len(s))
    perms = list(itertools.permutations(range(len(s))))
    for perm in perms:
        survive = 1.0
        for r in perm:
            out[r] += survive * p[r]
            survive *= 1 - p[r]
    return out / len(perms)


def test_rnm_exponential_is_permute_and_flip() -> None:
    rng = np.random.default_rng(7)
    s = np.array([0.0, 1.0, 2.0, 1.5])
    idx = ReportNoisyMax(1.0, 1.0, "exponential").sample(s, rng, 40000)
    probs = permute_and_flip_probs(s, 1.0, 1.0)
    assert probs.sum() == pytest.approx(1.0)
    assert chi2_p(np.bincount(idx, minlength=4).astype(float), probs) > P_MIN


@pytest.mark.parametrize("sampler", ["discrete", "float"])
def test_rnm_laplace(sampler: str) -> None:
    rng = np.random.default_rng(8)
    s = np.array([0.0, 1.0, 2.0])
    mech = ReportNoisyMax(1.0, 2.0, "laplace", sampler=sampler)
    b = mech.scale

    def win(r: int) -> float:
        others = [lap_cdf(XS - s[j], b) for j in range(3) if j != r]
        return integral(lap_pdf(XS - s[r], b) * np.prod(others, axis=0))

    probs = np.array([win(r) for r in range(3)])
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)
    idx = mech.sample(s, rng, 40000)
    assert chi2_p(np.bincount(idx, minlength=3).astype(float), probs) > P_MIN


@pytest.mark.parametrize(("sampler", "monotone"), [("discrete", False), ("float", False),
                                                   ("discrete", True)])
def test_svt_first_positive_distribution(sampler: str, monotone: bool) -> None:
    rng = np.random.default_rng(9)
    answers = np.array([0.0, 0.5, 1.0, 0.2, 1.5])
    mech = SparseVector(1.0, 0.5, 1.0, cutoff=1, monotone=monotone, sampler=sampler)
    out = mech.sample(answers, rng, 40000)
    assert out.shape == (40000, 5)
    # outcome index: first positive (or 5 = none)
    pos = out == 1
    first = np.where(pos.any(axis=1), pos.argmax(axis=1), 5)
    bt, bq = mech.threshold_scale, mech.query_scale

    def prob(i: int) -> float:
        below = np.prod([lap_cdf(1.0 + XS - answers[j], bq) for j in range(i)], axis=0)
        if i == 5:
            return integral(lap_pdf(XS, bt) * below)
        return integral(lap_pdf(XS, bt) * below * (1 - lap_cdf(1.0 + XS - answers[i], bq)))

    probs = np.array([prob(i) for i in range(6)])
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)
    assert chi2_p(np.bincount(first, minlength=6).astype(float), probs) > P_MIN
    # after the first positive nothing more is answered
    after = np.cumsum(pos, axis=1) - pos >= 1
    assert np.all(out[after] == -1)
    assert np.all(out[~after] >= 0)


def test_svt_halts_after_cutoff() -> None:
    rng = np.random.default_rng(10)
    out = SparseVector(0.0, 1.0, 1.0, cutoff=3).sample(np.full(20, 100.0), rng, 100)
    assert np.all((out == 1).sum(axis=1) == 3)
    assert np.all(out[:, 3:] == -1)


def test_subsample_uniform() -> None:
    rng = np.random.default_rng(12)
    mech = SubsampledSparseVector(20, 5, 0.0, 1.0, 1.0)
    subs = mech.draw_subsamples(rng, 20000)
    assert subs.shape == (20000, 5)
    assert np.all(np.diff(subs, axis=1) > 0)
    counts = np.bincount(subs.ravel(), minlength=20).astype(float)
    assert chi2_p(counts, np.full(20, 1.0)) > P_MIN
    one = np.stack([mech.draw_subsample(rng) for _ in range(4000)])
    assert np.all(np.diff(one, axis=1) > 0)
    assert chi2_p(np.bincount(one.ravel(), minlength=20).astype(float), np.ones(20)) > P_MIN
    # pairs appear together with the without-replacement rate m(m-1)/(n(n-1))
    both = np.mean(np.any(subs == 0, axis=1) & np.any(subs == 1, axis=1))
    assert both == pytest.approx(5 * 4 / (20 * 19), abs=0.01)


# -- smooth sensitivity ----------------------------------------------------------
def brute_smooth_sensitivity(x: np.ndarray, lo: float, hi: float, beta: float) -> float:
    """max_k e^{-k beta} A^(k)(x) by enumerating datasets over a grid that contains every
    value a worst-case neighbour needs (data values and the bounds)."""
    n = len(x)
    grid = np.unique(np.concatenate([x, [lo, hi]]))

    def med(v: tuple[float, ...]) -> float:
        return float(np.sort(v)[(n + 1) // 2 - 1])

    def local(y: tuple[float, ...]) -> float:
        best = 0.0
        for i in range(n):
            for g in grid:
                z = list(y)
                z[i] = g
                best = max(best, abs(med(tuple(z)) - med(y)))
        return best

    all_y = list(itertools.product(grid, repeat=n))
    best = 0.0
    for y in all_y:
        # distance = number of positions to change (multiset distance)
        xs, ys = sorted(x), sorted(y)
        common = 0
        i = j = 0
        while i < n and j < n:
            if xs[i] == ys[j]:
                common += 1
                i += 1
                j += 1
            elif xs[i] < ys[j]:
                i += 1
            else:
                j += 1
        k = n - common
        best = max(best, math.exp(-k * beta) * local(y))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_smooth_sensitivity_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3 + seed % 2  # odd and even
    x = np.round(rng.uniform(-0.2, 1.2, n), 2)
    beta = [0.1, 0.5, 1.5][seed % 3]
    fast = smooth_sensitivity_median(x, 0.0, 1.0, beta)
    brute = brute_smooth_sensitivity(np.clip(x, 0.0, 1.0), 0.0, 1.0, beta)
    assert fast == pytest.approx(brute, abs=1e-12)


def test_smooth_sensitivity_large_vectorised() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 20001)
    s = smooth_sensitivity_median(x, 0.0, 1.0, 0.05)
    # local sensitivity at distance 0 is a lower bound; the width bound is an upper one
    xs = np.sort(x)
    m = 10001
    assert s >= max(xs[m] - xs[m - 1], xs[m - 1] - xs[m - 2]) - 1e-15
    assert s <= 1.0
    # an all-equal sample has tiny smooth sensitivity, decaying with beta
    assert smooth_sensitivity_median(np.full(101, 0.5), 0.0, 1.0, 0.2) == pytest.approx(
        0.5 * math.exp(-0.2 * 50), rel=1e-9
    )


def test_smooth_median_release_distribution() -> None:
    rng, _ = make_generator(13)
    x = np.linspace(0.1, 0.9, 41)
    mech = SmoothSensitivityMedian(1.0, 1e-6, 0.0, 1.0)
    s = mech.smooth_sensitivity(x)
    out = mech.sample(x, rng, 20000)
    z = (out - mech.median(x)) / (2 * s / mech.epsilon)
    assert stats.kstest(z, stats.laplace().cdf).pvalue > P_MIN
    assert mech.median(x) == pytest.approx(0.5)


def test_permute_and_flip_is_not_bounded_range() -> None:
    """Why RNM with exponential noise is charged rho = eps^2/2, not eps^2/8: on two
    candidates with u = (0, 0) and neighbour u' = (1, -1) (each score moves by
    Delta = 1) its Rényi divergence of order 1.5 exceeds 1.5 eps^2/8, and its
    privacy-loss spread exceeds eps, whereas the exponential mechanism's does not."""
    eps = 1.0
    u, u2 = np.array([0.0, 0.0]), np.array([1.0, -1.0])
    p, q = permute_and_flip_probs(u, 1.0, eps), permute_and_flip_probs(u2, 1.0, eps)
    alpha = 1.5
    renyi = math.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1)
    assert renyi > alpha * eps**2 / 8
    assert renyi <= alpha * eps**2 / 2
    loss = np.log(p / q)
    assert loss.max() - loss.min() > eps
    assert np.abs(loss).max() <= eps + 1e-12
    em = Exponential(1.0, eps)
    loss_em = np.log(em.probabilities(u) / em.probabilities(u2))
    assert loss_em.max() - loss_em.min() <= eps + 1e-12


# -- scalar fast path (size <= SCALAR_MAX): the same exact laws ---------------------
@pytest.mark.parametrize(("t", "s"), [(1, 1), (7, 2), (3, 10), (2**44 + 3, 2**43)])
def test_scalar_discrete_laplace_pmf(t: int, s: int) -> None:
    rng = np.random.default_rng(t % 1000 * 37 + s % 1000)
    draws = [discrete_laplace(rng, t, s, k) for k in (1, 2, 3) * 5000]
    assert all(d.shape == (k,) for d, k in zip(draws, (1, 2, 3) * 5000, strict=True))
    y = np.concatenate(draws)
    q = math.exp(-s / t)
    lo, hi = int(y.min()), int(y.max())
    support = np.arange(lo, hi + 1)
    counts = np.bincount(y - lo, minlength=support.size).astype(float)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    tail = q ** (np.abs(np.array([lo, hi])) + 1) / (1 + q)
    pmf[0] += tail[0]
    pmf[-1] += tail[1]
    assert chi2_p(counts, pmf) > P_MIN


@pytest.mark.parametrize("t", [1, 3, 30])
def test_scalar_discrete_gaussian_pmf(t: int) -> None:
    rng = np.random.default_rng(200 + t)
    y = np.concatenate([discrete_gaussian(rng, t, k) for k in (1, 4) * 6000])
    lo, hi = int(y.min()), int(y.max())
    support = np.arange(lo - 3 * t, hi + 3 * t + 1)
    counts = np.bincount(y - support[0], minlength=support.size).astype(float)
    pmf = np.exp(-(support.astype(float) ** 2) / (2.0 * t * t))
    assert chi2_p(counts, pmf) > P_MIN


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.MT19937, np.random.Philox])
def test_scalar_bits_uniform_and_exact(bitgen: type[np.random.BitGenerator]) -> None:
    from accounting.noise import _Bits

    src = _Bits(np.random.Generator(bitgen(9)))
    for n in (1, 2, 3, 5, 7, 2**40 + 1):
        v = [src.below(n) for _ in range(3000)]
        assert min(v) >= 0
        assert max(v) < n
    small = np.bincount([src.below(5) for _ in range(25000)], minlength=5).astype(float)
    assert chi2_p(small, np.full(5, 0.2)) > P_MIN
    # large n: the top bit is set about half the time among values below 2^k
    n = 3 * 2**60
    top = np.mean([src.below(n) >= 2**61 for _ in range(20000)])
    assert abs(top - 1 / 3) < 0.02
    # every one of the 64 bit positions of a word is fair (no 32-bit-only words)
    words = np.array([src.bits(64) for _ in range(4000)], dtype=np.uint64)
    freq = ((words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    assert np.all(np.abs(freq - 0.5) < 0.04)


def test_scalar_path_is_reproducible_and_uses_the_session_generator() -> None:
    a = discrete_laplace(np.random.default_rng(4), 1000, 3, 2)
    b = discrete_laplace(np.random.default_rng(4), 1000, 3, 2)
    assert np.array_equal(a, b)
    rng = np.random.default_rng(4)
    before = rng.bit_generator.state["state"]["state"]
    discrete_gaussian(rng, 5, 1)
    assert rng.bit_generator.state["state"]["state"] != before


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937])
def test_refill_words_are_the_integers_words(bitgen: type[np.random.BitGenerator]) -> None:
    """The raw-word fast path returns exactly the full-range ``integers`` words (so the
    noise stream of a seeded run does not depend on which path fetched them)."""
    from accounting.noise import _CHUNK_WORDS, _WORD_MAX, _refill

    a = np.random.Generator(bitgen(11))
    b = np.random.Generator(bitgen(11))
    for _ in range(50):
        words = b.integers(0, _WORD_MAX, size=_CHUNK_WORDS, dtype=np.uint64, endpoint=True)
        assert _refill(a) == int.from_bytes(words.astype("<u8").tobytes(), "little")
    assert a.integers(0, 2**62) == b.integers(0, 2**62)  # same state afterwards


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1, 8),
       t=st.one_of(st.integers(1, 40), st.integers(1, 2**57)),
       s=st.one_of(st.integers(1, 40), st.integers(1, 2**57)),
       mt=st.booleans())
def test_scalar_discrete_laplace_is_the_reference(
        seed: int, size: int, t: int, s: int, mt: bool) -> None:
    """The scalar path of :func:`discrete_laplace` consumes the same bits as CKS
    Algorithm 2 written with :class:`_Bits` and returns the same draws, leaving the
    generator in the same state."""
    from accounting.noise import _Bits, _discrete_laplace_py

    def gen() -> np.random.Generator:
        return np.random.Generator(np.random.MT19937(seed) if mt else np.random.PCG64(seed))

    a, b = gen(), gen()
    src = _Bits(a)
    reference = [_discrete_laplace_py(src, t, s) for _ in range(size)]
    assert discrete_laplace(b, t, s, size).tolist() == reference
    assert a.integers(0, 2**62) == b.integers(0, 2**62)


@pytest.mark.parametrize(("n", "m"), [(100_000, 5_000), (20_000, 5_000)])
def test_subsample_uniform_at_real_sizes(n: int, m: int) -> None:
    """Priv-PC's sizes (alarm: n = 10^5, m = 5000, NumPy's Floyd branch) and a larger
    fraction (its partial-shuffle branch): sorted distinct indices, uniform inclusion."""
    rng = np.random.default_rng(13)
    mech = SubsampledSparseVector(n, m, 0.0, 1.0, 1.0)
    draws = [mech.draw_subsample(rng) for _ in range(600)]
    assert all(d.shape == (m,) and d.dtype == np.int64 for d in draws)
    assert all(np.all(np.diff(d) > 0) for d in draws)
    counts = np.bincount(np.concatenate(draws), minlength=n).astype(float)
    assert counts.size == n
    assert chi2_p(counts, np.ones(n)) > P_MIN


def test_grid_samplers_refuse_noise_beyond_their_range_instead_of_looping() -> None:
    """Noise of more than 2^44 grid steps (Laplace) or 2^26 sensitivities (Gaussian)
    cannot be represented: the mechanism is refused when it is built (before any
    admission), and the grid search itself refuses too (it used to loop forever)."""
    Laplace(0.02, 1e-12)  # still representable
    Gaussian.for_rho(0.02, 1e-15)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        Laplace(0.02, 1e-15)
    with pytest.raises(InvalidParameterError, match="sigma"):
        Gaussian.for_rho(0.02, 1e-17)
    with pytest.raises(InvalidParameterError):
        LaplaceGrid._build(0.02, 1e-15, 1, 1)
    with pytest.raises(InvalidParameterError):
        GaussianGrid._build(0.02, 1e12, 1)
    Laplace(0.02, 1e-15, sampler="float")  # the float sampler has no grid


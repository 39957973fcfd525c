"""Exact Gumbel-max selection (``accounting.gumbel``, ``docs/privacy/exact-gumbel.md``):
the float keys stand where their enclosures decide the order, the decimal refinement
gives the exact law where they do not, and the far tail that NumPy's float Gumbel
cannot reach is reached."""

from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting import gumbel
from accounting.gumbel import Keys, Refiner, draw, float_bounds, winners
from accounting.mechanisms import Exponential, GroupTopK, ReportNoisyMax, TopK
from tests.accounting.test_samplers import P_MIN, chi2_p
from tests.accounting.test_topk import peeling_pmf

UNIT = 2.0**-53


def test_draw_reads_the_bits_numpy_gumbel_reads() -> None:
    for seed in range(5):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        bits, g = draw(a, (3, 1000))
        assert np.array_equal(g, b.gumbel(0.0, 1.0, size=(3, 1000)))
        assert a.random() == b.random()  # the stream advanced by the same amount
        assert np.array_equal(bits * 2.0**53, np.floor(bits * 2.0**53))
        with np.errstate(divide="ignore"):
            direct = -np.log(-np.log(1.0 - bits))
        assert np.max(np.abs(direct - g)) < 1e-14  # the same bits: equal up to an ulp


def test_decimal_gumbel_at_the_ends() -> None:
    ctx = Context(prec=50)
    assert gumbel._gumbel(ctx, Decimal(0)) == Decimal("-Infinity")
    assert gumbel._gumbel(ctx, Decimal(1)) == Decimal("Infinity")
    assert float(gumbel._gumbel(ctx, Decimal("0.5"))) == pytest.approx(0.36651292058166435)


EDGE_BITS = [0.0, UNIT, 2 * UNIT, 0.5, 1.0 - UNIT, 1.0 - 2 * UNIT, 1e-9, 1.0 - 1e-9]
EDGE_J = [round(x / UNIT) for x in EDGE_BITS]


@settings(max_examples=200, deadline=None)
@given(j=st.one_of(st.integers(0, 2**53 - 1), st.sampled_from(EDGE_J)),
       u=st.floats(-1e6, 1e6), eps=st.sampled_from([1e-3, 0.5, 2.0]),
       sens=st.sampled_from([0.25, 1.0, 6.0]))
def test_float_enclosure_contains_the_decimal_one(j: int, u: float, eps: float,
                                                 sens: float) -> None:
    """Both enclose the exact key; the decimal one is far tighter, so it must lie inside
    the float one (a float enclosure that missed the key would fail this)."""
    bits = np.array([j * UNIT])
    with np.errstate(divide="ignore"):
        g = -np.log(-np.log(1.0 - bits))
    logits = np.array([eps * u / (2.0 * sens)])
    lo, hi = float_bounds(logits, bits, g)
    coef = Fraction(eps) / (2 * Fraction(sens))
    d_lo, d_hi = Refiner(np.array([u]), bits, coef, np.random.default_rng(0)).bounds(0)
    assert Decimal(float(lo[0])) <= d_lo <= d_hi <= Decimal(float(hi[0]))


def test_releases_equal_the_float_sampler() -> None:
    """Where the enclosures decide (every release here), the exact sampler releases what
    ``argmax logits + rng.gumbel`` releases, and reads the same random bits."""
    rs = np.random.default_rng(1)
    for _ in range(200):
        m = int(rs.integers(2, 60))
        u = rs.normal(0.0, 20.0, m)
        eps, sens = float(rs.choice([0.1, 1.0, 5.0])), float(rs.choice([1.0, 0.3]))
        seed = int(rs.integers(2**31))
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        got = Exponential(sens, eps).sample(u, a, 20)
        keys = eps * u / (2.0 * sens) + b.gumbel(0.0, 1.0, size=(20, m))
        assert np.array_equal(got, np.argmax(keys, axis=1))
        k = int(rs.integers(1, m + 1))
        got_k = TopK(sens, eps, k).release(u, a)
        keys = eps * u / (2.0 * sens) + b.gumbel(0.0, 1.0, size=m)
        assert np.array_equal(got_k, np.argsort(-keys, kind="stable")[:k])
        assert a.random() == b.random()


@pytest.fixture
def undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float enclosures widened to a quarter logit or more on each side: about a quarter
    of the releases are decided by the decimal refinement instead of the float keys."""
    monkeypatch.setattr(gumbel, "PAD", 0.05)


@pytest.mark.usefixtures("undecided")
def test_refined_releases_have_the_exact_law(monkeypatch: pytest.MonkeyPatch) -> None:
    u = np.array([0.0, 1.0, 2.5, -3.0, 2.0])
    mech = Exponential(1.5, 2.0)
    n = 6000
    refined = 0
    original = gumbel.certain_order

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal refined
        refined += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gumbel, "certain_order", counting)
    idx = mech.sample(u, np.random.default_rng(4), n)
    assert n / 5 < refined < n
    assert chi2_p(np.bincount(idx, minlength=5).astype(float), mech.probabilities(u)) > P_MIN
    s = np.array([0.0, 1.0, 2.0, 0.5])
    idx = ReportNoisyMax(0.5, 1.0, "gumbel").sample(s, np.random.default_rng(6), n)
    probs = Exponential(0.5, 1.0).probabilities(s)
    assert chi2_p(np.bincount(idx, minlength=4).astype(float), probs) > P_MIN
    # top-2 of 4: the ordered pair follows two rounds of peeling
    exact = peeling_pmf(s, 1.0, 1.5, 2)
    rows = TopK(1.0, 1.5, 2).sample(s, np.random.default_rng(9), n)
    codes = rows[:, 0] * 4 + rows[:, 1]
    probs = np.zeros(16)
    for (i, j), p in exact.items():
        probs[i * 4 + j] = p
    counts = np.bincount(codes, minlength=16).astype(float)
    assert counts[probs == 0].sum() == 0
    assert chi2_p(counts[probs > 0], probs[probs > 0]) > P_MIN
    # grouped: candidates {0, 1} and {2, 3}; one pick is an exponential-mechanism draw
    mech_g = GroupTopK.over(np.array([0, 0, 1, 1]), 1.0, 1.5, 1)
    picks = mech_g.sample(s, np.random.default_rng(11), n)[:, 0]
    probs = Exponential(1.0, 1.5).probabilities(s)
    assert chi2_p(np.bincount(picks, minlength=4).astype(float), probs) > P_MIN


def test_undecided_53_bits_draw_fresh_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the decimal pad also wide at 53 bits, every refined release draws 62 more
    bits per key involved; the law is still the exponential mechanism's."""
    monkeypatch.setattr(gumbel, "PAD", 2.0)
    monkeypatch.setattr(gumbel, "GUARD_DIGITS", 44)  # pad ~1e-1 at 53 bits, ~1e-20 after
    reveals = 0
    original = Refiner.reveal

    def counting(self: Refiner, r: int) -> None:
        nonlocal reveals
        reveals += 1
        original(self, r)

    monkeypatch.setattr(Refiner, "reveal", counting)
    u = np.array([0.0, 1.0, 2.5])
    mech = Exponential(1.0, 1.0)
    idx = mech.sample(u, np.random.default_rng(12), 3000)
    assert reveals > 3000
    assert chi2_p(np.bincount(idx, minlength=3).astype(float), mech.probabilities(u)) > P_MIN


class _Bits:
    """A stand-in generator for the refinement: fixed fresh bits."""

    def __init__(self, chunks: list[int]) -> None:
        self.chunks = chunks

    def integers(self, low: int, high: int, dtype: object = None) -> int:
        return self.chunks.pop(0)


def test_the_far_tail_is_reachable() -> None:
    """A candidate 45 logits behind: NumPy's float Gumbel (support [-3.6, 36.7]) gives it
    probability 0; the exact sampler picks it when its uniform's bits put its Gumbel
    above 45 + the leader's (its 53 leading bits 0, then 5 in the next 62: ``U`` about
    ``5.5 2^-115``, ``G`` about 78). Both keys of the undecided pair draw fresh bits, the
    leader's first."""
    logits = np.array([[0.0, -45.0]])
    b = np.array([[0.5, 0.0]])  # the second key's leading 53 bits are all 0
    with np.errstate(divide="ignore"):
        g = -np.log(-np.log(1.0 - b))
    assert g[0, 1] == np.inf
    keys = Keys(logits + np.array([[g[0, 0], 36.7]]), logits, b, g, np.array([0.0, -45.0]),
                2.0, 1.0, _Bits([0, 5]))  # type: ignore[arg-type]
    assert winners(keys)[0] == 1
    # with the same leading bits but fresh bits putting its Gumbel near 37.4, it loses
    keys = Keys(logits + np.array([[g[0, 0], 36.7]]), logits, b, g, np.array([0.0, -45.0]),
                2.0, 1.0, _Bits([0, 2**61]))  # type: ignore[arg-type]
    assert winners(keys)[0] == 0


def test_the_refinement_alone_gives_the_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float Gumbel values replaced by 0 (the float keys are the bare logits, always
    in the same order) and enclosures wide enough to cover that: every release is
    decided by the decimal refinement from the bits alone, and follows the exponential
    mechanism's law and, for top-2, two rounds of peeling. A refinement that kept the
    float order would always release the largest logit first."""
    monkeypatch.setattr(gumbel, "PAD", 1e3)
    real_draw = gumbel.draw

    def uninformative(rng: np.random.Generator,
                      shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        b, _ = real_draw(rng, shape)
        return b, np.zeros(shape)

    monkeypatch.setattr(gumbel, "draw", uninformative)
    u = np.array([0.0, 2.0, 4.0])
    mech = Exponential(1.0, 1.0)
    idx = mech.sample(u, np.random.default_rng(21), 3000)
    probs = mech.probabilities(u)
    assert chi2_p(np.bincount(idx, minlength=3).astype(float), probs) > P_MIN
    rows = TopK(1.0, 1.0, 2).sample(u, np.random.default_rng(22), 3000)
    exact = peeling_pmf(u, 1.0, 1.0, 2)
    probs = np.zeros(9)
    for (i, j), p in exact.items():
        probs[i * 3 + j] = p
    counts = np.bincount(rows[:, 0] * 3 + rows[:, 1], minlength=9).astype(float)
    assert counts[probs == 0].sum() == 0
    assert chi2_p(counts[probs > 0], probs[probs > 0]) > P_MIN

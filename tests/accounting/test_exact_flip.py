"""Exact permute-and-flip (``accounting/flip.py``): uniform integers, exact
Bernoulli(exp(-x)) coins, and the selection law (``docs/privacy/report-noisy-max.md``,
"Exact sampling of the exponential variant")."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from accounting.errors import InvalidParameterError
from accounting.flip import bernoulli, bernoulli_exp_neg, permute_and_flip, uniform_below
from accounting.mechanisms import ReportNoisyMax

P_MIN = 1e-4  # every test below is a fixed-seed test: a miss is a real deviation


def _binomial_p(k: int, n: int, p: float) -> float:
    return float(stats.binomtest(k, n, p).pvalue)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 2**64 + 3])
def test_uniform_below_is_uniform(n: int) -> None:
    rng = np.random.default_rng(11)
    draws = [uniform_below(n, rng) for _ in range(6000)]
    assert all(0 <= d < n for d in draws)
    if n == 1:
        return
    buckets = min(n, 8)  # n >= 8: the residues mod 8 of a uniform on [0, n) are ~uniform
    counts = np.bincount([d % buckets for d in draws], minlength=buckets).astype(float)
    expected = np.array([(n - b + buckets - 1) // buckets for b in range(buckets)], float)
    expected *= len(draws) / n
    assert stats.chisquare(counts, expected).pvalue > P_MIN


def test_uniform_below_rejects_an_empty_range() -> None:
    with pytest.raises(InvalidParameterError):
        uniform_below(0, np.random.default_rng(0))


@pytest.mark.parametrize("p", [Fraction(0), Fraction(1, 3), Fraction(2, 7), Fraction(1)])
def test_bernoulli_is_exact_in_law(p: Fraction) -> None:
    rng = np.random.default_rng(12)
    n = 6000
    k = sum(bernoulli(p, rng) for _ in range(n))
    if p in (0, 1):
        assert k == n * p
    else:
        assert _binomial_p(k, n, float(p)) > P_MIN


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 5),
                               Fraction(5, 2), Fraction(0.1)])
def test_bernoulli_exp_neg_has_probability_exp_minus_x(x: Fraction) -> None:
    rng = np.random.default_rng(13)
    n = 8000
    k = sum(bernoulli_exp_neg(x, rng) for _ in range(n))
    if x == 0:
        assert k == n
    else:
        assert _binomial_p(k, n, math.exp(-float(x))) > P_MIN


def test_bernoulli_exp_neg_refuses_negative_exponents() -> None:
    with pytest.raises(InvalidParameterError):
        bernoulli_exp_neg(Fraction(-1, 2), np.random.default_rng(0))


def test_two_candidates_follow_the_closed_form() -> None:
    """Two candidates with gap g: the trailing one wins with probability e^{-c g}/2 (it
    must be visited first and flip heads), c = eps / (2 Delta); here a non-dyadic
    exponent (g = 0.3, c = 1.5)."""
    rng = np.random.default_rng(14)
    scores = np.array([0.3, 0.0])
    eps, delta = 3.0, 1.0
    n = 8000
    wins = sum(permute_and_flip(scores, eps, delta, rng) == 1 for _ in range(n))
    x = Fraction(eps) / (2 * Fraction(delta)) * (Fraction(0.3) - Fraction(0.0))
    assert _binomial_p(wins, n, math.exp(-float(x)) / 2) > P_MIN


def test_the_leader_is_released_when_visited_first_and_ties_are_uniform() -> None:
    rng = np.random.default_rng(15)
    draws = [permute_and_flip(np.array([1.0, 1.0, 1.0]), 1.0, 1.0, rng) for _ in range(6000)]
    assert stats.chisquare(np.bincount(draws, minlength=3)).pvalue > P_MIN
    # one candidate: always it, whatever its score
    assert permute_and_flip(np.array([-5.0]), 1.0, 1.0, rng) == 0


def test_a_far_trailing_candidate_costs_at_most_a_few_coins() -> None:
    """A gap of 10^6 scales (probability e^{-10^6}, beyond any float): the coin stops at
    the first tails of its e^{-1} factors, so the draw stays cheap and exact."""
    rng = np.random.default_rng(16)
    draws = {permute_and_flip(np.array([0.0, -1e6]), 2.0, 1.0, rng) for _ in range(200)}
    assert draws == {0}


def test_release_and_sample_use_the_exact_sampler() -> None:
    mech = ReportNoisyMax(1.0, 1.0, "exponential")
    s = np.array([0.0, 1.0, 2.0])
    a = mech.sample(s, np.random.default_rng(17), 50)
    rng = np.random.default_rng(17)
    b = [permute_and_flip(s, 1.0, 1.0, rng) for _ in range(50)]
    assert a.dtype == np.int64
    assert a.tolist() == b
    assert mech.release(s, np.random.default_rng(17)) == b[0]
    assert isinstance(mech.release(s, np.random.default_rng(3)), int)

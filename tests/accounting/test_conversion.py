"""The zCDP -> (eps, delta) conversion and its inverse ``rho_for_budget``.

``zcdp_to_epsilon`` is the smaller of the Bun-Steinke bound and the Renyi conversion of
Canonne, Kamath & Steinke (2020, Prop. 12) at a searched order. Checked here:

* soundness against an extremal mechanism: the Gaussian mechanism with
  ``rho = mu^2/2`` is ``rho``-zCDP and its exact privacy profile is known in closed form
  (Balle & Wang 2018, Thm. 8), so at the eps we report its exact delta must not exceed
  the target delta;
* it is never worse than Bun-Steinke, and within a hair of the optimum of the Renyi
  formula (independent search with scipy, and dp-accounting's ``compute_epsilon`` over a
  dense grid of orders);
* ``rho_for_budget`` always fits, is (numerically) the largest rho that fits, and never
  falls below the closed-form Bun-Steinke rho (so every ledger charged under the
  earlier, looser conversion still verifies).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from accounting import Budget, InvalidParameterError
from accounting.costs import rho_for_budget, zcdp_to_epsilon

RHOS = st.floats(min_value=1e-8, max_value=30.0)
DELTAS = st.floats(min_value=1e-12, max_value=0.5)
EPSILONS = st.floats(min_value=1e-4, max_value=50.0)


def _bun_steinke(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def _renyi(rho: float, delta: float, alpha: float) -> float:
    return alpha * rho + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (
        alpha - 1.0
    )


def _gaussian_delta(mu: float, eps: float) -> float:
    """Exact delta(eps) of the Gaussian mechanism with sensitivity/sigma = mu."""
    return float(norm.cdf(-eps / mu + mu / 2.0) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2.0))


@settings(max_examples=300, deadline=None)
@given(rho=RHOS, delta=DELTAS)
def test_conversion_holds_for_the_gaussian_mechanism(rho: float, delta: float) -> None:
    eps = float(zcdp_to_epsilon(Fraction(rho), Fraction(delta)))
    mu = math.sqrt(2.0 * rho)
    # relative 1e-9 covers the error of scipy's normal cdf, not of our bound
    assert _gaussian_delta(mu, eps) <= delta * (1.0 + 1e-9) + 1e-300


@settings(max_examples=300, deadline=None)
@given(rho=RHOS, delta=DELTAS)
def test_conversion_is_never_worse_than_bun_steinke(rho: float, delta: float) -> None:
    eps = zcdp_to_epsilon(Fraction(rho), Fraction(delta))
    assert float(eps) <= _bun_steinke(rho, delta) * (1.0 + 1e-11)


@settings(max_examples=100, deadline=None)
@given(rho=st.floats(min_value=1e-6, max_value=10.0), delta=st.floats(1e-10, 0.1))
def test_conversion_reaches_the_optimal_renyi_order(rho: float, delta: float) -> None:
    ours = float(zcdp_to_epsilon(Fraction(rho), Fraction(delta)))
    # independent search of the same formula over log(alpha - 1)
    res = minimize_scalar(lambda u: _renyi(rho, delta, 1.0 + math.exp(u)),
                          bounds=(-20.0, 30.0), method="bounded",
                          options={"xatol": 1e-10})
    best = min(float(res.fun), _bun_steinke(rho, delta))
    assert ours <= best + 1e-9 * max(1.0, best)
    # dp-accounting's conversion over a dense grid of orders (it can only be larger)
    orders = 1.0 + np.geomspace(1e-4, 1e4, 4000)
    theirs, _ = rdp_privacy_accountant.compute_epsilon(orders, orders * rho, delta)
    assert ours <= float(theirs) + 1e-9 * max(1.0, float(theirs))


def test_known_values() -> None:
    # (1, 1e-6): Bun-Steinke gives rho = 0.017469; the Renyi conversion 0.024356, i.e.
    # Gaussian noise sd smaller by a factor sqrt(0.024356 / 0.017469) = 1.18
    rho = float(rho_for_budget(Fraction(1), Fraction(1e-6)))
    assert rho == pytest.approx(0.0243559703, rel=1e-8)
    L = math.log(1e6)
    closed = 1.0 / (math.sqrt(L + 1.0) + math.sqrt(L)) ** 2
    assert closed == pytest.approx(0.0174689048, rel=1e-8)
    assert Budget(1.0, 1e-6).rho() == rho_for_budget(Fraction(1), Fraction(1e-6))
    assert zcdp_to_epsilon(Fraction(0), Fraction(1e-6)) == 0


@settings(max_examples=200, deadline=None)
@given(eps=EPSILONS, delta=DELTAS)
def test_rho_for_budget_fits_is_maximal_and_never_below_bun_steinke(
    eps: float, delta: float
) -> None:
    e, d = Fraction(eps), Fraction(delta)
    rho = rho_for_budget(e, d)
    assert rho > 0
    assert zcdp_to_epsilon(rho, d) <= e
    # numerically the largest: a little more does not fit
    assert zcdp_to_epsilon(rho * Fraction(1 + 10**-9), d) > e
    L = math.log(1.0 / delta)
    closed = eps * eps / (math.sqrt(L + eps) + math.sqrt(L)) ** 2
    assert float(rho) >= closed * (1.0 - 1e-11)


def _old_rho_for_budget(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The conversion of every ledger written before 2026-11-24 (Bun-Steinke only)."""
    slack = 1e-12
    L = math.log(1.0 / float(delta))
    e = float(epsilon)
    q = Fraction(e * e / (math.sqrt(L + e) + math.sqrt(L)) ** 2 * (1.0 - slack))

    def old_eps(r: Fraction) -> Fraction:
        return Fraction((float(r) + 2.0 * math.sqrt(float(r) * L)) * (1.0 + slack))

    while old_eps(q) > epsilon:
        q *= Fraction(1) - Fraction(slack)
    return q


@settings(max_examples=200, deadline=None)
@given(eps=EPSILONS, delta=DELTAS)
def test_every_old_budget_still_fits(eps: float, delta: float) -> None:
    """A ledger charged up to the old rho budget verifies under the new rule: exact."""
    e, d = Fraction(eps), Fraction(delta)
    old = _old_rho_for_budget(e, d)
    assert old <= rho_for_budget(e, d)
    assert zcdp_to_epsilon(old, d) <= e


def test_conversion_refuses_delta_zero() -> None:
    with pytest.raises(InvalidParameterError):
        zcdp_to_epsilon(Fraction(1, 10), Fraction(0))
    with pytest.raises(InvalidParameterError):
        rho_for_budget(Fraction(1), Fraction(0))
    assert rho_for_budget(Fraction(0), Fraction(1, 10**6)) == 0

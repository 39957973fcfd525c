"""Public planning: plan sizes, subsample rate, amplification inverse, CURATE SLSQP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from dpcg.errors import AlgorithmError
from dpcg.private import planning as pl


def test_default_plan_size_follows_section_7() -> None:
    assert pl.default_plan_size(5) == 4 * 10
    assert pl.default_plan_size(9) == 4 * 36
    assert pl.default_plan_size(10) == 16 * 45
    assert pl.default_plan_size(37) == 16 * 666
    with pytest.raises(AlgorithmError, match="p"):
        pl.default_plan_size(1)


def test_subsample_rate_is_the_numeric_optimum_and_clipped() -> None:
    for eps in (2.0, 3.0, 4.0):
        rate = pl.subsample_rate(eps)
        a = math.expm1(eps / 2)

        def noise(r: float, a: float = a) -> float:
            return math.sqrt(1 / r) / math.log1p(a / r)

        res = minimize_scalar(noise, bounds=(1e-4, 1.0), method="bounded",
                              options={"xatol": 1e-10})
        if 1 / 20 < res.x < 1:
            assert rate == pytest.approx(res.x, rel=1e-3)
    assert pl.subsample_rate(0.01) == 1 / 20
    assert pl.subsample_rate(50.0) == 1.0
    assert pl.subsample_size(100_000, 0.01) == 5000


def test_amplified_base_epsilon_inverts_balle_barthe_gaboardi() -> None:
    n, m = 100_000, 5000
    for target in (0.001, 0.05, 0.5):
        base = pl.amplified_base_epsilon(n, m, target)
        amp = math.log1p((m / n) * math.expm1(base))
        assert amp == pytest.approx(target, rel=1e-12)
        assert base > target


def test_level_weights_sum_to_one() -> None:
    for d in range(6):
        w = pl.level_weights(d)
        assert len(w) == d + 1
        assert sum(w) == pytest.approx(1.0)


def test_curate_plan_is_feasible_and_monotone() -> None:
    rho = 0.0175
    plan = pl.curate_plan(rho_remaining=rho, edges=10, p=5, order=0, max_order=3,
                          threshold=1.96, sensitivity=0.05, beta1=0.1, beta2=0.1)
    eps = np.array(plan.epsilons)
    t = np.array(plan.tests_bound, dtype=float)
    assert plan.tests_bound == (10, 30, 30, 10)
    assert float(np.sum(t * eps ** 2) / 2) <= rho
    assert np.all(eps[:-1] >= eps[1:])
    assert eps[0] > 0
    # Objective no worse than the uniform feasible start.
    uni = np.full(4, math.sqrt(2 * rho / t.sum()))
    f = pl.curate_error_surrogate
    assert f(eps, 1.96, 0.05, 0.1, 0.1, 0.1, 0.1) <= f(uni, 1.96, 0.05, 0.1, 0.1, 0.1, 0.1) + 1e-12


def test_curate_plan_with_no_budget_is_zero() -> None:
    plan = pl.curate_plan(rho_remaining=0.0, edges=3, p=4, order=1, max_order=2,
                          threshold=1.96, sensitivity=0.05, beta1=0.1, beta2=0.1)
    assert plan.epsilons == (0.0, 0.0)

"""Budgets at the edges of the float range: refused with a project error when they are
not finite as floats, converted without overflow when they are (review defects 1-2)."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import pytest

from accounting.costs import Budget, Cost, exact, rho_for_budget, zcdp_to_epsilon
from accounting.errors import InvalidParameterError
from accounting.filter import PrivacyFilter
from accounting.mechanisms import Gaussian

MAX = sys.float_info.max


@pytest.mark.parametrize("value", [10**400, -(10**400), 2**1024, Fraction(10**400, 3),
                                   10**5000], ids=["1e400", "-1e400", "2^1024", "fraction",
                                                   "1e5000"])
def test_budget_refuses_numbers_beyond_the_float_range(value: int | Fraction) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon") as info:
        Budget(value)  # type: ignore[arg-type]
    assert info.value.parameter == "epsilon"
    assert "finite as a float" in str(info.value)
    assert len(str(info.value)) < 200  # the digits are not printed (10**5000 has no repr)
    with pytest.raises(InvalidParameterError, match="delta") as info:
        Budget(1.0, value)  # type: ignore[arg-type]
    assert info.value.parameter == "delta"


def test_largest_representable_numbers_are_still_budgets() -> None:
    assert Budget(2**1023).epsilon == 2**1023
    assert Budget(MAX).epsilon == MAX
    assert exact(Fraction(MAX), "x") == Fraction(MAX)


@pytest.mark.parametrize("value", [10**400, Fraction(10**400)], ids=["int", "fraction"])
def test_costs_refuse_numbers_beyond_the_float_range(value: int | Fraction) -> None:
    with pytest.raises(InvalidParameterError, match="finite as a float"):
        Cost.pure(value)
    with pytest.raises(InvalidParameterError, match="finite as a float"):
        Cost.zcdp(value)


@pytest.mark.parametrize("epsilon", [1e150, 1.3e154, 1.4e154, 1e155, 2e154, 1e200, 1e300,
                                     1e306, 1e308, math.nextafter(MAX, 0), MAX])
@pytest.mark.parametrize("delta", [1e-6, 0.5, 1e-300])
def test_zcdp_budget_of_a_huge_epsilon_converts_without_overflow(epsilon: float,
                                                                 delta: float) -> None:
    """``e * e`` overflows above ~1.3e154: the rho is found anyway, and it fits."""
    rho = Budget(epsilon, delta).rho()
    assert 0 < rho <= Fraction(epsilon)
    assert rho > Fraction(epsilon) * Fraction(999, 1000)
    assert zcdp_to_epsilon(rho, Fraction(delta)) <= Fraction(epsilon)


def test_ordinary_budgets_keep_their_rho() -> None:
    """The closed-form start below the overflow is the one every version used."""
    e, d = 1.0, 1e-6
    L = math.log(1.0 / d)
    start = e * e / (math.sqrt(L + e) + math.sqrt(L)) ** 2 * (1.0 - 1e-12)
    rho = rho_for_budget(Fraction(e), Fraction(d))
    assert rho >= Fraction(start)
    assert zcdp_to_epsilon(rho, Fraction(d)) <= 1


def test_zcdp_filter_and_gaussian_plan_at_a_huge_budget() -> None:
    budget = Budget(1e200, 1e-6)
    f = PrivacyFilter(budget, rule="zcdp")
    mech = Gaussian.for_rho(1.0, budget.rho() / 4)
    for _ in range(4):
        f.admit(mech.cost(mech.relation))
    assert not f.fits(mech.cost(mech.relation))


def test_conversion_beyond_the_float_range_is_a_project_error() -> None:
    with pytest.raises(InvalidParameterError, match="rho"):
        zcdp_to_epsilon(Fraction(MAX), Fraction(1, 10**6))
    with pytest.raises(InvalidParameterError, match="rho"):
        zcdp_to_epsilon(Fraction(10**400), Fraction(1, 2))


def test_summary_of_a_cost_whose_rho_is_beyond_the_float_range() -> None:
    """A pure eps of 1e200 has the zCDP bound 5e399: displayed as None, not a crash."""
    cost = Cost.pure(1e200)
    assert cost.summary() == {"epsilon": 1e200, "delta": 0.0, "rho": None}
    assert cost.rho == Fraction(1e200) ** 2 / 2

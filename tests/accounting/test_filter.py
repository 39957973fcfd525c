"""Filter properties: exact sums, equal splits, halt semantics, adaptive sequences."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting import (
    Budget,
    BudgetExceededError,
    Cost,
    Exponential,
    Gaussian,
    InMemoryRecorder,
    InvalidParameterError,
    Laplace,
    PrivacyFilter,
    Relation,
    ReportNoisyMax,
    Session,
    SessionHaltedError,
    SmoothSensitivityMedian,
    SparseVector,
    SubsampledSparseVector,
    TopK,
    split_epsilon,
)
from accounting.costs import split_rho, zcdp_to_epsilon

AWKWARD = [1.0, 0.1, 0.3, 1 / 3, 2 / 3, 0.7, 1e-3, 7.77, 5e-5, 123.456, 2.0**-30 * 3]


SPLITS = [(t, k) for t in AWKWARD for k in (1, 2, 3, 7, 10, 97, 1000)] + [
    (t, k) for t in (0.1, 1 / 3, 7.77, 5e-5) for k in (9999, 10_000)
]


@pytest.mark.parametrize(("total", "k"), SPLITS)
def test_equal_split_fits_exactly(total: float, k: int) -> None:
    f = PrivacyFilter(Budget(total))
    e = split_epsilon(total, k)
    c = Cost.pure(e)
    k_cost = c.times(k)
    assert k_cost.epsilon is not None
    assert k_cost.epsilon <= Fraction(total)
    for _ in range(k):
        f.admit(c)
    # nearly all of the budget is used (e is the largest float with k e <= total)
    spent_eps = f.spent().epsilon
    assert spent_eps is not None
    assert Fraction(total) - spent_eps < k * Fraction(total) * Fraction(2) ** -52


@pytest.mark.parametrize("total", [0.1, 1.0, 3.3])
@pytest.mark.parametrize("k", [1, 3, 10, 1000, 10_000])
def test_equal_rho_split_fits_exactly(total: float, k: int) -> None:
    budget = Budget(total, 1e-6)
    f = PrivacyFilter(budget, "zcdp")
    assert f.rho_budget is not None
    g = Gaussian.for_rho(0.37, split_rho(f.rho_budget, k))
    c = g.cost(Relation.REPLACE_ONE)
    for _ in range(k):
        f.admit(c)
    spent_rho = f.spent().rho
    assert spent_rho is not None
    assert spent_rho <= f.rho_budget
    # conversion of the budget's rho fits (eps, delta)
    assert zcdp_to_epsilon(f.rho_budget, Fraction(1e-6)) <= Fraction(total)


def test_halt_after_first_refusal() -> None:
    f = PrivacyFilter(Budget(1.0))
    f.admit(Cost.pure(0.6))
    with pytest.raises(BudgetExceededError):
        f.admit(Cost.pure(0.5))
    assert f.halted
    assert f.spent() == Cost.pure(0.6)
    with pytest.raises(SessionHaltedError):
        f.admit(Cost.pure(0.1))
    assert not f.fits(Cost.pure(0.1))


def test_delta_is_a_separate_constraint() -> None:
    f = PrivacyFilter(Budget(10.0, 1e-6))
    f.admit(Cost.approximate(0.1, 6e-7))
    with pytest.raises(BudgetExceededError):
        f.admit(Cost.approximate(0.1, 6e-7))


def test_rule_refuses_unaccountable_mechanisms() -> None:
    basic = PrivacyFilter(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="rule"):
        basic.admit(Cost.zcdp(0.01))
    assert not basic.halted
    z = PrivacyFilter(Budget(1.0, 1e-6), "zcdp")
    with pytest.raises(InvalidParameterError, match="rule"):
        z.admit(Cost.approximate(0.1, 1e-9))
    assert not z.halted
    with pytest.raises(InvalidParameterError, match="delta"):
        PrivacyFilter(Budget(1.0), "zcdp")
    with pytest.raises(InvalidParameterError, match="rule"):
        PrivacyFilter(Budget(1.0), "either")


# -- adaptive sequences -------------------------------------------------------------
def _menu(budget_eps: float) -> list[Any]:
    """Mechanisms with costs on the scale of the budget."""
    e = budget_eps
    return [
        Laplace(1.0, e / 7),
        Laplace(0.3, e / 3, relation=Relation.ADD_REMOVE),
        Gaussian(1.0, 3.0 / e),
        Gaussian(0.2, 1.0 / e),
        ReportNoisyMax(1.0, e / 5, "exponential"),
        ReportNoisyMax(1.0, e / 4, "laplace"),
        Exponential(1.0, e / 6),
        TopK(1.0, e / 9, 2),
        SmoothSensitivityMedian(min(e / 4, 1.0), 1e-8, 0.0, 1.0),
        SparseVector(0.5, 0.1, e / 5, cutoff=2),
        SubsampledSparseVector(1000, 100, 0.5, 0.1, e / 2),
    ]


def _exact_input(mech: Any) -> Any:
    if isinstance(mech, ReportNoisyMax | Exponential | TopK):
        return np.array([0.0, 1.0, 0.5])
    if isinstance(mech, SmoothSensitivityMedian):
        return np.array([0.1, 0.4, 0.9])
    return 0.25


def _const(x: Any) -> Callable[[], Any]:
    return lambda: x


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    eps=st.floats(0.05, 5.0),
    delta=st.sampled_from([1e-9, 1e-6, 1e-3]),
    rule=st.sampled_from(["basic", "zcdp"]),
    seed=st.integers(0, 2**32 - 1),
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=60),
)
def test_adaptive_sequences_never_overspend(
    eps: float, delta: float, rule: str, seed: int, choices: list[int]
) -> None:
    """The next mechanism is chosen from the previous noisy output; whatever the path,
    the admitted total is within the budget under the session's rule, a refusal happens
    only when the request truly does not fit, and nothing is admitted after it."""
    budget = Budget(eps, delta)
    rec = InMemoryRecorder(budget, rule=rule)
    session = Session(budget, rule=rule, recorder=rec, seed=seed)
    menu = _menu(eps)
    last = 0.0
    refused = False
    for c in choices:
        # adaptivity: the choice depends on the last noisy output
        mech = menu[(c + int(abs(last) * 1000)) % len(menu)]
        before = session.spent()
        if refused:
            with pytest.raises(SessionHaltedError):
                session.release(Laplace(1.0, eps), lambda: 0.0, purpose="after")
            break
        try:
            if isinstance(mech, SparseVector | SubsampledSparseVector):
                run = session.start(mech, purpose="svt")
                above = run.test(lambda *_: 0.6)
                last = 1.0 if above else 0.0
            else:
                x = _exact_input(mech)
                last = float(np.sum(session.release(mech, _const(x), purpose="q")))
        except InvalidParameterError:
            # rule cannot account this mechanism: nothing charged, not halted
            assert session.spent() == before
            assert not session.halted
            continue
        except BudgetExceededError:
            cost = mech.cost(Relation.REPLACE_ONE)
            total = before + cost
            if rule == "basic":
                assert total.epsilon is not None
                assert total.epsilon > Fraction(eps) or total.delta > Fraction(delta)
            else:
                assert total.rho is not None
                assert session.rho_budget is not None
                assert total.rho > session.rho_budget
            assert session.spent() == before
            refused = True
            continue
    spent = session.spent()
    # the valid-rule total never exceeds the budget
    if rule == "basic":
        assert spent.epsilon is not None
        assert spent.epsilon <= Fraction(eps)
        assert spent.delta <= Fraction(delta)
    else:
        assert spent.rho is not None
        assert session.rho_budget is not None
        assert spent.rho <= session.rho_budget
        assert zcdp_to_epsilon(spent.rho, Fraction(delta)) <= Fraction(eps) * (
            1 + Fraction(1, 10**9)
        )
    # the ledger holds exactly the admitted entries, and their costs sum to spent()
    total = Cost.zero()
    for entry in rec.entries:
        total = total + entry.cost
    if rule == "basic":
        assert total.epsilon == spent.epsilon
    else:
        assert total.rho == spent.rho


@settings(max_examples=100, deadline=None)
@given(
    costs=st.lists(
        st.tuples(st.floats(0.0, 2.0), st.floats(0.0, 1e-3), st.booleans()),
        min_size=1,
        max_size=20,
    )
)
def test_costs_compose_monotonically(costs: list[tuple[float, float, bool]]) -> None:
    total = Cost.zero()
    for e, d, bounded in costs:
        c = Cost.pure(e, bounded_range=bounded) if d == 0 else Cost.approximate(e, d)
        new = total + c
        # None means "no bound" (infinite): composition never decreases a component
        for part in (total, c):
            assert new.epsilon is not None
            assert part.epsilon is not None
            assert new.epsilon >= part.epsilon
            assert new.delta >= part.delta
            assert new.rho is None or (part.rho is not None and new.rho >= part.rho)
        total = new
    again = Cost.zero()
    for e, d, bounded in reversed(costs):
        c = Cost.pure(e, bounded_range=bounded) if d == 0 else Cost.approximate(e, d)
        again = again + c
    assert again == total  # exact arithmetic: order does not matter


@settings(max_examples=100, deadline=None)
@given(total=st.floats(1e-6, 1e3), k=st.integers(1, 10_000))
def test_split_property(total: float, k: int) -> None:
    e = split_epsilon(total, k)
    assert Fraction(e) * k <= Fraction(total)
    assert Fraction(np.nextafter(e, np.inf)) * k > Fraction(total)

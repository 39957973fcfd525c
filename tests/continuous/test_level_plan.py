"""private-ci-pc's default per-level plan (:class:`LevelPlannedCITest`): each level's
share is split over the tests the level can still ask, never below the pre-flighted
floor, the total never exceeds the budget, and a run that ends early has held no budget
for tests that could not run beyond its level shares."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpcg.citests.gcm import TWICE_RESIDUAL_CLIP, c_lambda_twice, twice_lambda
from dpcg.datasets.sem import random_sem, unit_noise
from dpcg.private.planning import default_plan_size
from dpcg.private.private_ci_pc import level_slots
from tests.engine_room import private_run


def test_level_plan_spends_the_levels_share_over_the_tests_that_run() -> None:
    ds = random_sem(6, kind="nonlinear", seed=3).sample(1000, 4)
    res = private_run(ds, "private-ci-pc", epsilon=20.0, seed=1)
    plan = res.plan
    assert plan["budget_split"] == "levels"
    assert plan["test_epsilon"] == 20.0 / default_plan_size(6)
    levels = plan["used_levels"]
    assert levels[0]["tests_bound"] == 15
    assert levels[0]["tests"] <= 15
    # level 0 holds 1/level_slots(0, 2) = 1/4 of the budget, spread over its 15 tests
    assert levels[0]["share"] == 20.0 / level_slots(0, 2)
    spent = Fraction(res.spent["exact"]["epsilon"])
    assert spent <= 20
    assert float(spent) >= 0.99 * levels[0]["share"] * levels[0]["tests"] / 15


def test_fixed_plan_is_kept_when_asked_for() -> None:
    ds = random_sem(4, kind="linear", seed=2).sample(400, 1)
    res = private_run(ds, "private-ci-pc", epsilon=4.0, seed=1, plan_size=8)
    assert res.plan["budget_split"] == "tests"
    assert res.plan["plan_size"] == 8
    assert "used_levels" not in res.plan


def test_last_level_takes_what_is_left_and_nothing_is_overspent() -> None:
    # X -> Y strongly dependent given Z (beta 2, n 4,000): level 0 keeps X-Y and the
    # Z edges; the budget is never exceeded whatever happens.
    ds = unit_noise(4000, 1, 2.0, 2.0, 5)
    res = private_run(ds, "private-ci-pc", epsilon=8.0, seed=3, max_depth=1)
    spent = Fraction(res.spent["exact"]["epsilon"])
    assert spent <= 8
    for lev in res.plan["used_levels"]:
        assert lev["tests"] <= lev["tests_bound"]
        if lev["level"] == 1:
            assert lev["last"]  # max_depth 1: level 1 may use everything left
    assert np.isfinite(float(spent))


def test_plan_follows_the_twice_fitted_test() -> None:
    """The default privgcm release is the twice-fitted grouped one (issue 60): the plan
    states its fit, clip, lam rule and sensitivity; every admitted release is charged
    with that sensitivity at a per-test epsilon no larger than the level's share over the
    tests it can still ask, and the total stays within the budget."""
    ds = random_sem(5, kind="nonlinear", seed=4).sample(800, 2)
    res = private_run(ds, "private-ci-pc", epsilon=10.0, seed=2)
    plan = res.plan
    lam = twice_lambda(800)
    assert (plan["fit"], plan["residual_clip"], plan["lam"]) == ("twice",
                                                                TWICE_RESIDUAL_CLIP, lam)
    assert plan["sensitivity_c_lambda"] == c_lambda_twice(lam, TWICE_RESIDUAL_CLIP)
    spent = Fraction(res.spent["exact"]["epsilon"])
    assert spent <= 10
    for lev in plan["used_levels"]:
        assert lev["tests"] <= lev["tests_bound"]
    first = plan["used_levels"][0]
    assert float(spent) >= 0.99 * first["share"] * first["tests"] / first["tests_bound"]

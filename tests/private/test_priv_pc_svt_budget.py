"""Per-level plans of Priv-PC and SVT-PC (issue 20, item 3): the public planning rule,
the zCDP/basic choice, and what a run returns when a plan is used up.

* the rule's pieces are exact: ``unit_epsilon`` never exceeds its share, the levels'
  shares never exceed what remains;
* level 0's plan can never run out (one unit per pair); no SVT-PC level runs out;
* a plan that runs out stops the run flagged, with a message that says what the user
  gets, nothing admitted past the plan, and the unspent budget reported.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest

from accounting.costs import Budget
from dpcg.private import planning as pl
from dpcg.private import priv_pc
from tests.engine_room import private_run


@pytest.mark.parametrize("rule", ["basic", "zcdp"])
@pytest.mark.parametrize("parts", [1, 2])
def test_unit_epsilon_is_the_largest_that_fits(rule: str, parts: int) -> None:
    for share in (Fraction(1, 3), Fraction(7, 10**6), Fraction(2, 10**9), Fraction(5)):
        e = pl.unit_epsilon(share, rule, parts)
        q = Fraction(e)
        cost = parts * q if rule == "basic" else parts * q * q / 2
        assert 0 < cost <= share
        up = Fraction(math.nextafter(e, math.inf))
        cost_up = parts * up if rule == "basic" else parts * up * up / 2
        assert cost_up > share or cost_up == cost  # maximal up to a few ulps
        assert e == pytest.approx(float(share) / parts if rule == "basic"
                                  else math.sqrt(2 * float(share) / parts), rel=1e-9)
    assert pl.unit_epsilon(Fraction(0), rule, parts) == 0.0


def test_rule_choice_is_public_and_prefers_zcdp_for_long_plans() -> None:
    assert pl.choose_unit_rule(1.0, 0.0, 10_000) == "basic"  # no delta: pure DP only
    assert pl.choose_unit_rule(1.0, 1e-6, 1) == "basic"
    assert pl.choose_unit_rule(1.0, 1e-6, 190 * 4, parts=2) == "zcdp"
    # zCDP per-unit epsilon sqrt(2 rho / K) beats eps / K once K > eps^2 / (2 rho)
    rho = float(Budget(1.0, 1e-6).rho())
    k = math.ceil(1.0 / (2 * rho)) + 1
    assert pl.choose_unit_rule(1.0, 1e-6, k) == "zcdp"


def test_level_shares_never_exceed_what_remains() -> None:
    total = Fraction(1, 50)
    for depth in (0, 1, 3):
        remaining = total
        open_pairs = 1225
        for level in range(depth + 3):
            units = pl.level_units(open_pairs, level, per_pair=2.0)
            share = pl.level_share(remaining, units, level, depth)
            spend = share * units  # the level spends at most this
            assert spend <= remaining
            if level >= depth:
                assert spend == remaining  # the last provisioned level may use it all
            remaining -= spend
            open_pairs = max(open_pairs // 3, 1)
        assert remaining >= 0


def test_planned_depth_and_units() -> None:
    assert pl.planned_depth(50, None) == pl.DEFAULT_PLANNED_DEPTH
    assert pl.planned_depth(3, None) == 1
    assert pl.planned_depth(50, 0) == 0
    assert pl.level_units(1225, 0, per_pair=2.0) == 1225
    assert pl.level_units(100, 1, per_pair=2.0) == 200
    assert pl.level_units(7, 2, cutoff=2) == 4
    assert pl.level_units(0, 2) == 1


def _levels_within_plan(res: Any, unit: str) -> None:
    for rec in res.plan["used_levels"]:
        assert rec[unit] <= rec[f"{unit}_planned"]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.05, 1.0])
def test_svt_pc_per_level_plan_never_runs_out(asia: Any, seed: int, eps: float) -> None:
    res = private_run(asia, "svt-pc", epsilon=eps, delta=1e-6, seed=seed)
    assert not res.budget_exhausted
    assert res.plan["horizon"] == pl.DEFAULT_PLANNED_DEPTH
    _levels_within_plan(res, "instances")
    assert res.mechanisms.get("sparse-vector", 0) == res.plan["used_instances"]
    spent = Fraction(res.spent["exact"]["rho"])
    assert spent <= Budget(eps, 1e-6).rho()
    unspent = res.plan["used_unspent"]
    assert unspent["rule"] == res.guarantee["rule"] == "zcdp"
    assert unspent["rho"] == pytest.approx(float(Budget(eps, 1e-6).rho() - spent), abs=1e-15)


@pytest.mark.parametrize("seed", [1, 2])
def test_priv_pc_level_zero_is_always_completed(asia: Any, seed: int) -> None:
    res = private_run(asia, "priv-pc", epsilon=0.05, delta=1e-6, seed=seed)
    levels = res.plan["used_levels"]
    assert levels[0]["level"] == 0
    assert levels[0]["rounds_planned"] == 28
    assert res.pc.levels_completed >= 1
    _levels_within_plan(res, "rounds")
    k = res.mechanisms
    assert k.get("subsampled-sparse-vector", 0) == (res.plan["used_rounds"]
                                                    + res.plan["used_unused_sieves"])
    assert k.get("laplace", 0) == res.plan["used_examines"]


def test_priv_pc_used_up_plan_stops_flagged_and_honest(asia: Any,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    # per-test queries with a plan far too small above level 0: level 1 runs out of rounds
    monkeypatch.setattr(priv_pc, "PRIV_PC_ROUNDS_PER_PAIR", 0.05)
    # planned depth 3: level 1 may spend a third of what remains, so budget is left
    res = private_run(asia, "priv-pc", epsilon=0.5, delta=1e-6, seed=5, max_depth=3,
                      release="test")
    assert res.budget_exhausted
    assert res.pc.levels_completed >= 1  # level 0 is never cut short
    last = res.plan["used_levels"][-1]
    assert last["rounds"] == last["rounds_planned"]  # nothing admitted past the plan
    assert res.message is not None
    assert f"levels_completed = {res.pc.levels_completed}" in res.message
    assert "used up" in res.message
    assert "unspent" in res.message
    assert res.plan["used_unspent"]["rho"] > 0  # reported, not silently lost
    assert res.plan["horizon"] == 3
    # the graph is not the complete graph: level 0's removals were applied
    p = len(asia.names)
    j = res.cpdag.to_json()
    edges = len(j["edges"]["undirected"]) + len(j["edges"]["directed"])
    assert edges < p * (p - 1) // 2
    # every released examine and sieve is in the ledger counts, and no more
    k = Counter(res.mechanisms)
    assert k["laplace"] == res.plan["used_examines"]
    assert k["subsampled-sparse-vector"] == (res.plan["used_rounds"]
                                             + res.plan["used_unused_sieves"])


@pytest.mark.parametrize("algorithm", ["priv-pc", "svt-pc"])
def test_a_user_plan_cut_short_at_level_zero_says_so(asia: Any, algorithm: str) -> None:
    res = private_run(asia, algorithm, epsilon=1.0, delta=0.0, seed=6, plan_size=2)
    assert res.budget_exhausted
    assert res.pc.levels_completed == 0
    assert res.message is not None
    assert "NOT a pruned skeleton" in res.message
    assert Fraction(res.spent["exact"]["epsilon"]) <= 1
    assert res.plan["used_unspent"]["rule"] == "basic"


def test_priv_pc_budget_used_up_says_so(asia: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # planned depth 1 and a tiny level plan: level 1 spends all that remains, and the
    # run stops at level 2 because nothing is left (not because of a plan)
    monkeypatch.setattr(priv_pc, "PRIV_PC_ROUNDS_PER_PAIR", 0.05)
    for seed in range(5, 11):
        res = private_run(asia, "priv-pc", epsilon=0.5, delta=1e-6, seed=seed)
        for rec in res.plan["used_levels"]:
            assert rec["rounds"] <= rec["rounds_planned"]
        if res.budget_exhausted:
            assert res.message is not None
            assert "used up" in res.message
            # the level plans keep a round in flight's examine out of the next level's
            # share: the filter itself never has to refuse
            assert "round costs" not in res.message
        assert Fraction(res.spent["exact"]["rho"]) <= Budget(0.5, 1e-6).rho()


def _priv_pc_edge_tester(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make Priv-PC use the plain per-test tester (the engine asks every test)."""
    orig = priv_pc.PrivPC.tester

    def tester(self: Any, plan: Any, source: Any, session: Any) -> Any:
        t = orig(self, plan, source, session)
        if type(t) is priv_pc.TestThenPairTester:
            return priv_pc.SieveExamineTester(plan, source, session)
        return t
    monkeypatch.setattr(priv_pc.PrivPC, "tester", tester)


@pytest.mark.parametrize("net", ["asia", "sachs"])
def test_priv_pc_per_test_levels_never_use_up_their_plan(
        net: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 1.5 rounds per open pair (any plan of at least one per pair), the per-test
    levels hand their undecided pairs to per-pair queries in time: no level uses up its
    plan, where the per-test tester does; every released mechanism is accounted for."""
    from dpcg.datasets import load_network

    monkeypatch.setattr(priv_pc, "PRIV_PC_ROUNDS_PER_PAIR", 1.5)
    data = load_network(net).sample(20_000, 1)
    switched = cut_short = 0
    for seed in range(3):
        res = private_run(data, "priv-pc", epsilon=1.0, delta=1e-6, seed=seed, release="test")
        assert res.plan["select_k"] == 0
        assert res.plan["release"] == "test"
        assert not res.budget_exhausted
        assert res.message is None
        _levels_within_plan(res, "rounds")
        switched += any("per_pair_from" in rec for rec in res.plan["used_levels"])
        k = Counter(res.mechanisms)
        assert k["laplace"] == res.plan["used_examines"]
        assert k["subsampled-sparse-vector"] == (res.plan["used_rounds"]
                                                 + res.plan["used_unused_sieves"])
        assert k.get("exponential", 0) == res.plan["used_sepset_picks"]
        assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    with monkeypatch.context() as m:
        _priv_pc_edge_tester(m)
        for seed in range(3):
            cut_short += private_run(data, "priv-pc", epsilon=1.0, delta=1e-6,
                                     seed=seed, release="test").budget_exhausted
    assert switched > 0
    assert cut_short > 0


@pytest.mark.parametrize("seed", range(4))
def test_priv_pc_per_test_levels_are_the_per_test_tester_until_they_switch(
        asia: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no level comes near the end of its plan, the level strategy asks the
    engine's tests in the engine's order with the same releases: the same graph, the
    same test records and the same spending as the per-test tester."""
    res = private_run(asia, "priv-pc", epsilon=1.0, delta=1e-6, seed=seed, release="test")
    assert not any("per_pair_from" in rec for rec in res.plan["used_levels"])
    with monkeypatch.context() as m:
        _priv_pc_edge_tester(m)
        ref = private_run(asia, "priv-pc", epsilon=1.0, delta=1e-6, seed=seed, release="test")
    assert res.cpdag.to_json() == ref.cpdag.to_json()
    assert res.pc.tests == ref.pc.tests
    assert res.spent == ref.spent
    assert res.mechanisms == ref.mechanisms

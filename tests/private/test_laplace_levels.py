"""Laplace-PC's per-level budget split (issue 20, item 3; ``budget_split='levels'``, the
default without a plan size).

* the level's test bound is exactly what ``candidate_sets`` yields;
* every level's rounds spend at most the level's share, the run at most the budget,
  and each ledger entry's cost is the round's planned release;
* a level with nothing useful left stops the run flagged, with nothing admitted;
* the options: ``run`` keeps the one fixed plan, a plan size selects it, the screen is
  public and only for ``levels``.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from typing import Any

import pytest

from accounting.costs import Budget
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import candidate_sets, pair_test_count
from dpcg.private import laplace_pc
from dpcg.private.laplace_pc import LaplacePCParams, level_slots
from dpcg.private.planning import screen_multiplier
from tests.engine_room import private_run


@pytest.mark.parametrize("seed", range(8))
def test_test_count_is_what_candidate_sets_yields(seed: int) -> None:
    rng = random.Random(seed)
    p = rng.randint(3, 9)
    adj: list[set[int]] = [set() for _ in range(p)]
    for a, b in itertools.combinations(range(p), 2):
        if rng.random() < 0.6:
            adj[a].add(b)
            adj[b].add(a)
    frozen = [frozenset(a) for a in adj]
    pairs = [(x, y) for x in range(p) for y in sorted(frozen[x]) if x < y]
    for level in range(0, 4):
        want = sum(len(list(candidate_sets(x, y, level, frozen))) for x, y in pairs)
        assert sum(pair_test_count(level, frozen, x, y) for x, y in pairs) == want
        for x, y in pairs:
            assert pair_test_count(level, frozen, x, y) == len(
                list(candidate_sets(x, y, level, frozen)))


def test_slots_and_screen_are_public_rules() -> None:
    assert [level_slots(lv, 2) for lv in range(5)] == [4, 3, 2, 2, 2]
    assert screen_multiplier(2) == pytest.approx(0.674, abs=1e-3)  # q = 1/4
    assert screen_multiplier(50) > screen_multiplier(20) > 0


@pytest.fixture(scope="module")
def net50() -> Any:
    return load_network("random:nodes=30,max_parents=3,card=2-4,seed=5,conc=1").sample(
        20_000, 5)


@pytest.mark.parametrize("release", ["test", "pair"])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_levels_spend_within_their_shares(net50: Any, eps: float, release: str) -> None:
    res = private_run(net50, "laplace-pc", epsilon=eps, delta=1e-6, seed=3, release=release)
    plan = res.plan
    assert plan["budget_split"] == "levels"
    assert plan["release"] == release
    levels = plan["used_levels"]
    assert [lv["level"] for lv in levels] == list(range(len(levels)))
    picks = sum(lv.get("sepset_picks", 0) for lv in levels)
    assert sum(lv["tests"] for lv in levels) + picks == plan["used_releases"]
    # the level-0 selection's top-k releases are not tests (screened below 80 nodes)
    assert plan["used_releases"] == (sum(res.mechanisms.values())
                                     - res.mechanisms.get("top-k", 0))
    if release == "test":
        assert picks == 0
        # every test is a release, except level 0's answers for the pairs its
        # selection did not keep (independent given {} without a release of their own)
        unkept = (res.pc.tests_by_level()[0] - levels[0]["selected"]
                  if "selected" in levels[0] else 0)
        assert plan["used_releases"] == res.n_tests - unkept
        assert levels[0]["tests"] == levels[0].get("selected", levels[0]["tests"])
    else:
        assert levels[1]["tests"] == levels[1]["pairs"] > 0  # one release per open pair
        assert picks > 0
    for lv in levels:
        assert lv["tests"] <= lv["tests_bound"]
    spent = Fraction(res.spent["exact"]["rho"])
    assert spent <= Budget(eps, 1e-6).rho()
    # what was not spent is reported, and what was spent is what the ledger holds
    assert Fraction(plan["used_unspent"]["rho"]) == pytest.approx(
        Budget(eps, 1e-6).rho() - spent, rel=1e-9, abs=1e-15)
    assert not res.budget_exhausted


def test_a_level_with_nothing_useful_left_stops_flagged(
    net50: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # level 1 gets a share too small to be useful: it cannot start
    slots = laplace_pc.level_slots
    monkeypatch.setattr(laplace_pc, "level_slots",
                        lambda lv, d: slots(lv, d) if lv == 0 else 10**30)
    # every pair tested at level 0 (no selection), so the engine's tests are the releases
    res = private_run(net50, "laplace-pc", epsilon=1.0, delta=1e-6, seed=3, screen_selection=0)
    assert res.budget_exhausted
    assert res.message is not None
    assert "level 1" in res.message
    assert res.pc.levels_completed == 1
    assert [lv["level"] for lv in res.plan["used_levels"]] == [0, 1]
    assert res.plan["used_levels"][1]["tests"] == 0
    assert res.n_tests == res.plan["used_levels"][0]["tests"]


def test_options() -> None:
    assert LaplacePCParams().split == "levels"
    assert LaplacePCParams(plan_size=100).split == "run"
    assert LaplacePCParams(test_epsilon=0.01).split == "run"
    assert LaplacePCParams(budget_split="run").split == "run"
    with pytest.raises(AlgorithmError, match="budget_split"):
        LaplacePCParams(budget_split="per-test")
    with pytest.raises(AlgorithmError, match="screen"):
        LaplacePCParams(budget_split="run", screen=1.0)
    with pytest.raises(AlgorithmError, match="neither"):
        LaplacePCParams(budget_split="levels", plan_size=10)
    with pytest.raises(AlgorithmError, match="screen"):
        LaplacePCParams(screen=-1.0)
    assert LaplacePCParams(release="test").release == "test"
    with pytest.raises(AlgorithmError, match="release"):
        LaplacePCParams(release="pairs")
    with pytest.raises(AlgorithmError, match="release"):
        LaplacePCParams(budget_split="run", release="pair")


def test_run_split_is_the_fixed_plan(net50: Any) -> None:
    res = private_run(net50, "laplace-pc", epsilon=1.0, delta=1e-6, seed=3,
                      budget_split="run")
    assert "budget_split" not in res.plan
    assert res.plan["plan_size"] == 16 * (30 * 29 // 2)


def test_an_empty_graph_is_never_silent() -> None:
    # a budget far too small for 2,000 rows: every test comes out independent, nothing
    # runs out, and the result says what the empty graph means
    data = load_network("asia").sample(2000, 1)
    res = private_run(data, "svt-pc", epsilon=0.01, seed=1)
    assert res.cpdag.n_edges == 0
    assert not res.budget_exhausted
    assert res.message is not None
    assert "no edge survived" in res.message
    assert "not evidence of independence" in res.message

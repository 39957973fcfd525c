"""The level-0 selection of Laplace-PC, Priv-PC, SVT-PC and CURATE (issue 20): one top-K
release keeps ``K`` pairs, the others count as independent given the empty set, the
kept ones are tested (Laplace-PC, CURATE), sieved (Priv-PC) or streamed through SVT
(SVT-PC); and CURATE's degree-based test bound.

* the plan is a function of public facts only, uses the selection only where it cuts
  level 0's noise at least in half, and falls back to testing every pair as the budget
  grows (so a huge budget still reproduces non-private PC);
* the selection and its tests fit level 0's share exactly;
* a run records one top-k release, keeps at most ``K`` pairs, and removes the others
  with the empty separating set;
* the options are validated.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.mechanisms import TopK
from accounting.relations import Relation
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.private import laplace_pc, planning
from dpcg.private.contract import RunSettings
from dpcg.private.laplace_pc import LaplacePCParams, level_slots, make_plan, noise_sd
from dpcg.private.planning import GUMBEL_SD, n_pairs, select_count, selection_epsilon
from tests.engine_room import private_run


@pytest.fixture(scope="module")
def net100() -> Any:
    return load_network("random:nodes=100,max_parents=3,card=2-4,seed=7,conc=1").sample(
        20_000, 7)


def _plan(data: Any, eps: float, **params: Any) -> laplace_pc.LaplacePlan:
    src = source_for_dataset(data, "kendall-split")
    return make_plan(LaplacePCParams(**params), RunSettings(
        epsilon=eps, delta=1e-6, test="kendall-split"), src)


def test_selection_follows_public_facts(net100: Any) -> None:
    small = load_network("random:nodes=20,max_parents=3,card=2-4,seed=7,conc=1").sample(
        2_000, 7)
    # 190 pairs: too few for the single selection to gain (with screen_selection=0;
    # by default a screened one is used there, test_screened_selection.py)
    assert _plan(small, 1.0, screen_selection=0).selection is None
    plan = _plan(net100, 1.0)
    sel = plan.selection
    assert sel is not None
    assert sel.k == math.ceil(planning.SELECT_PER_NODE * 100)
    assert plan.screen == 0.0  # the kept pairs are tested against T itself
    assert plan.describe()["select_k"] == sel.k
    # a huge budget tests every pair again: the selection would not cut the noise
    assert _plan(net100, 1e6).selection is None
    assert _plan(net100, 1.0, select=0).selection is None
    assert _plan(net100, 1.0, select=2).selection.k == 200  # type: ignore[union-attr]
    assert _plan(net100, 1.0, select_share=1.0).selection.test is None  # type: ignore[union-attr]


@pytest.mark.parametrize("eps", [0.5, 1.0, 5.0])
@pytest.mark.parametrize("rule", ["zcdp", "basic"])
def test_selection_and_its_tests_fit_level_zero(net100: Any, eps: float, rule: str) -> None:
    plan = _plan(net100, eps, rule=rule)
    sel = plan.selection
    assert sel is not None
    budget = Budget(eps, 1e-6)
    total = Fraction(budget.epsilon_exact) if rule == "basic" else Fraction(budget.rho())
    level0 = total / level_slots(0, plan.depth)
    cost = TopK(1.0, sel.epsilon, sel.k).cost(Relation.REPLACE_ONE)
    assert sel.test is not None
    test = sel.test.mechanism(plan.sensitivity).cost(Relation.REPLACE_ONE)
    if rule == "basic":
        assert cost.epsilon is not None
        assert test.epsilon is not None
        used = cost.epsilon + sel.k * test.epsilon
    else:
        assert cost.rho is not None
        assert test.rho is not None
        used = cost.rho + sel.k * test.rho
    assert used <= level0
    # and leaves nothing on the table (the tests' sigma is rounded up to 8 significant
    # bits, so they may use up to 2^-6 less than their share)
    assert used >= level0 * Fraction(98, 100)
    # the selection is used because it cuts level 0's noise at least in half
    every = laplace_pc.level_release(rule, level0 / n_pairs(100))
    assert every is not None
    sel_share = level0 * Fraction(planning.SELECT_SHARE)
    sel_sd = GUMBEL_SD * 2 * plan.sensitivity / selection_epsilon(rule, sel_share, sel.k)
    assert sel_sd <= planning.SELECT_GAIN * noise_sd(every.mechanism(plan.sensitivity))


@pytest.mark.parametrize("rule", ["zcdp", "basic"])
@pytest.mark.parametrize("share", [Fraction(1, 10**6), Fraction(1, 300), Fraction(3, 4)])
def test_select_count_is_the_largest_k_within_the_noise_cap(rule: str,
                                                            share: Fraction) -> None:
    pairs, p, sens = 4950, 100, 0.02
    for sd_max in (0.01, 0.5, 2.0, 1e9):
        k = select_count(rule, share, pairs, p, 4.0, sd_max, sens)
        assert 400 <= k <= pairs

        def sd(j: int) -> float:
            return GUMBEL_SD * 2 * sens / selection_epsilon(rule, share, j)

        if 400 < k < pairs:
            assert sd(k) <= sd_max < sd(k + 1)
        if k == 400 and sd(400) <= sd_max:
            assert sd(401) > sd_max
        if sd(pairs) <= sd_max:
            assert k == pairs
        eps = selection_epsilon(rule, share, k)
        spent = k * Fraction(eps) if rule == "basic" else k * Fraction(eps) ** 2 / 8
        assert spent <= share


def test_a_run_keeps_at_most_k_pairs(net100: Any) -> None:
    res = private_run(net100, "laplace-pc", epsilon=1.0, delta=1e-6, seed=4)
    plan = res.plan
    k = plan["select_k"]
    assert k == 400
    assert res.mechanisms.get("top-k") == 1
    lv0 = plan["used_levels"][0]
    assert lv0["selected"] == k
    assert lv0["tests"] == k  # the kept pairs are tested, nothing else at level 0
    level1_pairs = plan["used_levels"][1]["pairs"]
    assert level1_pairs <= k
    # every pair not kept was removed at level 0 with the empty set
    empty = [pair for pair, sep in res.pc.sepsets.items() if len(sep) == 0]
    assert len(empty) >= n_pairs(100) - k
    spent = Fraction(res.spent["exact"]["rho"])
    assert spent <= Budget(1.0, 1e-6).rho()
    assert not res.budget_exhausted


def test_no_level_zero_test_with_the_whole_share(net100: Any) -> None:
    res = private_run(net100, "laplace-pc", epsilon=1.0, delta=1e-6, seed=4,
                      select_share=1.0)
    lv0 = res.plan["used_levels"][0]
    assert lv0["tests"] == 0
    assert res.plan["used_levels"][1]["pairs"] == res.plan["select_k"]


def test_options() -> None:
    with pytest.raises(AlgorithmError, match="select"):
        LaplacePCParams(select=-1.0)
    with pytest.raises(AlgorithmError, match="select"):
        LaplacePCParams(select=float("nan"))
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(AlgorithmError, match="select_share"):
            LaplacePCParams(select_share=bad)
    with pytest.raises(AlgorithmError, match="select"):
        LaplacePCParams(budget_split="run", select=2.0)
    with pytest.raises(AlgorithmError, match="select_share"):
        LaplacePCParams(plan_size=10, select_share=0.5)


# ------------------------------------------------------------------------- Priv-PC


def test_priv_pc_selects_then_sieves_the_kept_pairs(net100: Any) -> None:
    # the single-release selection (the default screened one: test_screened_selection.py)
    res = private_run(net100, "priv-pc", epsilon=1.0, delta=1e-6, seed=4, screen_selection=0)
    plan = res.plan
    k = plan["select_k"]
    assert k == 400
    assert res.mechanisms.get("top-k") == 1
    lv0 = plan["used_levels"][0]
    assert lv0["selected"] == k
    assert lv0["rounds"] <= lv0["rounds_planned"] == k  # one round per kept pair at most
    assert plan["used_levels"][1]["open_pairs"] <= k
    empty = [pair for pair, sep in res.pc.sepsets.items() if len(sep) == 0]
    assert len(empty) >= n_pairs(100) - k
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert not res.budget_exhausted


def test_priv_pc_level_zero_fits_its_share(net100: Any) -> None:
    from dpcg.private.priv_pc import PrivPCParams
    from dpcg.private.priv_pc import make_plan as priv_plan

    src = source_for_dataset(net100, "kendall-split")
    settings = RunSettings(epsilon=1.0, delta=1e-6, test="kendall-split")
    plan = priv_plan(PrivPCParams(screen_selection=0), settings, src)
    assert plan.select_k == 400
    level0 = Budget(1.0, 1e-6).rho() / (plan.depth + 1)
    sel = TopK(1.0, plan.select_epsilon, plan.select_k).cost(Relation.REPLACE_ONE)
    # a round is two pure halves of at most eps_half each: rho <= 2 eps_half^2 / 2
    per_round = 2 * Fraction(plan.epsilon_half) ** 2 / 2
    assert sel.rho is not None
    assert sel.rho + plan.rounds * per_round <= level0
    assert priv_plan(PrivPCParams(select=0), settings, src).select_k == 0
    assert priv_plan(PrivPCParams(), RunSettings(epsilon=1e6, delta=1e-6,
                                                 test="kendall-split"), src).select_k == 0
    with pytest.raises(AlgorithmError, match="select"):
        PrivPCParams(plan_size=10, select=2.0)
    with pytest.raises(AlgorithmError, match="select"):
        PrivPCParams(select=-1.0)


# ------------------------------------------------------------------------- SVT-PC


def test_svt_pc_selects_then_streams_the_kept_pairs(net100: Any) -> None:
    from dpcg.private.svt_pc import SVTPCParams
    from dpcg.private.svt_pc import make_plan as svt_plan

    res = private_run(net100, "svt-pc", epsilon=1.0, delta=1e-6, seed=4)
    plan = res.plan
    k = plan["select_k"]
    assert k == 400
    assert res.mechanisms.get("top-k") == 1
    lv0 = plan["used_levels"][0]
    assert lv0["selected"] == k
    assert lv0["instances"] <= lv0["instances_planned"] == k
    assert plan["used_levels"][1]["open_pairs"] <= k
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert not res.budget_exhausted
    src = source_for_dataset(net100, "kendall-split")
    settings = RunSettings(epsilon=1.0, delta=1e-6, test="kendall-split")
    sp = svt_plan(SVTPCParams(), settings, src)
    level0 = Budget(1.0, 1e-6).rho() / (sp.depth + 1)
    sel = TopK(1.0, sp.select_epsilon, sp.select_k).cost(Relation.REPLACE_ONE)
    assert sel.rho is not None
    assert sel.rho + sp.instances * Fraction(sp.epsilon_instance) ** 2 / 2 <= level0
    assert svt_plan(SVTPCParams(select=0), settings, src).select_k == 0
    with pytest.raises(AlgorithmError, match="select"):
        SVTPCParams(plan_size=10, select=2.0)


# ------------------------------------------------------------------------- CURATE


def test_curate_selects_then_tests_the_kept_pairs(net100: Any) -> None:
    from dpcg.private.curate import CurateParams

    res = private_run(net100, "curate", epsilon=1.0, delta=1e-6, seed=4)
    plan = res.plan
    assert plan["select_k"] == 400
    assert res.mechanisms.get("top-k") == 1
    orders = plan["orders"]
    assert orders[0]["order"] == 0
    assert orders[0]["edges"] == 400  # order 0 is planned over the kept pairs only
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert private_run(net100, "curate", epsilon=1.0, delta=1e-6, seed=4,
                       select=0).plan["select_k"] == 0
    with pytest.raises(AlgorithmError, match="select"):
        CurateParams(select=-1.0)


@pytest.mark.parametrize("algorithm", ["curate", "priv-pc"])
def test_selection_where_it_is_no_noisier(algorithm: str) -> None:
    """CURATE's and Priv-PC's gain (1.0, above Laplace-PC's): at 30 nodes and eps 1
    their order/level 0 selects (Laplace-PC's rule would test every pair), at eps 1e6 it
    does not; the rule reads public facts only, so two datasets of the same schema and
    ``n`` get the same plan."""
    from dpcg.private import curate, priv_pc

    choices: dict[str, tuple[Any, Any, float]] = {
        "curate": (curate.make_plan, curate.CurateParams, planning.CURATE_SELECT_GAIN),
        "priv-pc": (priv_pc.make_plan, priv_pc.PrivPCParams, planning.PRIV_PC_SELECT_GAIN),
    }
    make, params, gain = choices[algorithm]
    net = load_network("random:nodes=30,max_parents=3,card=2-4,seed=7,conc=1")
    a, b = net.sample(20_000, 7), net.sample(20_000, 8)

    def plan(data: Any, eps: float) -> Any:
        return make(params(), RunSettings(epsilon=eps, delta=1e-6, test="kendall-split"),
                    source_for_dataset(data))

    assert gain > planning.SELECT_GAIN
    got = plan(a, 1.0)
    k = math.ceil(planning.SELECT_PER_NODE * 30)
    if algorithm == "priv-pc":  # screened: 2K by the first release, K/2 by the second
        assert (got.screen_k, got.select_k) == (planning.SCREEN_WIDTH * k, k // 2)
    else:
        assert got.select_k == k
    assert got.describe() == plan(b, 1.0).describe()
    # Laplace-PC's single selection is not used here (its default screens one instead)
    assert _plan(a, 1.0, screen_selection=0).selection is None
    assert plan(a, 1e6).select_k == 0


@pytest.mark.parametrize("seed", range(6))
def test_degree_bound_covers_every_later_order(seed: int) -> None:
    import itertools
    import random

    from dpcg.pc.engine import candidate_sets
    from dpcg.private.planning import curate_tests_bound, degree_tests_bound

    rng = random.Random(seed)
    p = rng.randint(4, 10)
    adj: list[set[int]] = [set() for _ in range(p)]
    for a, b in itertools.combinations(range(p), 2):
        if rng.random() < 0.5:
            adj[a].add(b)
            adj[b].add(a)
    pairs = [(x, y) for x in range(p) for y in sorted(adj[x]) if x < y]
    degrees = [len(a) for a in adj]
    frozen = [frozenset(a) for a in adj]
    for order in range(1, 4):
        bound = degree_tests_bound(degrees, pairs, order)
        asked = sum(len(list(candidate_sets(x, y, order, frozen))) for x, y in pairs)
        assert asked <= bound <= curate_tests_bound(len(pairs), p, order)
        # removing edges (what later orders see) only lowers it
        if pairs:
            x, y = pairs[0]
            fewer = list(degrees)
            fewer[x] -= 1
            fewer[y] -= 1
            assert degree_tests_bound(fewer, pairs[1:], order) <= bound


def test_priv_pc_selection_keeps_its_size_as_the_budget_grows() -> None:
    """Priv-PC's ``K`` stays ``4p`` (``PRIV_PC_SELECT_GROW``): at eps 5 on 40 nodes and
    100,000 rows the growing rule would keep more pairs, fail the gain check and test
    every pair, while Priv-PC still selects ``4p``; a budget large enough for a selection
    of every pair within the noise cap tests every pair, so a huge budget is non-private
    PC."""
    from dpcg.private import priv_pc
    from dpcg.private.common import plan_level0_selection

    net = load_network("random:nodes=40,max_parents=3,card=2-4,seed=7,conc=1")
    src = source_for_dataset(net.sample(100_000, 7), "kendall-split")
    k = math.ceil(planning.SELECT_PER_NODE * 40)
    assert planning.PRIV_PC_SELECT_GROW is False

    def plan(eps: float) -> Any:
        return priv_pc.make_plan(priv_pc.PrivPCParams(), RunSettings(
            epsilon=eps, delta=1e-6, test="kendall-split"), src)

    for eps in (1.0, 2.0, 5.0):
        got = plan(eps)
        assert (got.screen_k, got.select_k) == (planning.SCREEN_WIDTH * k, k // 2)
    # the same level-0 share with a growing K: no selection at eps 5
    depth = planning.planned_depth(40, None)
    units = priv_pc.level_rounds(n_pairs(40), 0) * (depth + 1)
    rule = planning.choose_unit_rule(5.0, 1e-6, units, parts=2)
    assert rule == "zcdp"
    level0 = Fraction(Budget(5.0, 1e-6).rho()) / (depth + 1)
    assert plan_level0_selection(rule, level0, src, None,
                                 gain=planning.PRIV_PC_SELECT_GAIN) is None
    fixed = plan_level0_selection(rule, level0, src, None,
                                  gain=planning.PRIV_PC_SELECT_GAIN, grow=False)
    assert fixed == (k, selection_epsilon(rule, level0 * Fraction(planning.SELECT_SHARE), k))
    for eps in (20.0, 1e3):
        assert plan(eps).select_k == 0

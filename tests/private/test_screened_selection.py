"""Priv-PC's screened level-0 selection (issue 20): a first top-K release keeps ``2K``
pairs by their score given the empty set, a second keeps ``K/2`` of them by their
smallest score over the empty set and single neighbours in the first release's graph.

* the split of the selection's share between the two releases is exact, for both rules;
* the conditioning sets of the second release are a function of the first alone;
* with a huge budget the releases keep exactly the pairs of largest utility, and a pair
  that one neighbour separates is screened out;
* a run records two top-k releases, keeps at most ``K/2`` pairs, spends within budget,
  and the pairs screened out carry no separating set and claim no v-structure.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.mechanisms import TopK
from accounting.memory import InMemoryRecorder
from accounting.relations import Relation
from accounting.session import Session
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import pc_stable, without_sepsets
from dpcg.pc.oracle import DSeparationOracle
from dpcg.private.common import (
    SETS_PER_SIDE,
    neighbour_order,
    screening_sets,
    select_pairs_screened,
)
from dpcg.private.planning import (
    SCREEN_KEEP,
    SCREEN_WIDTH,
    n_pairs,
    screened_selection,
    selection_epsilon,
)
from dpcg.private.priv_pc import PrivPCParams
from tests.engine_room import private_run


@pytest.mark.parametrize("rule", ["zcdp", "basic"])
@pytest.mark.parametrize(("k", "pairs"), [(400, 4950), (80, 190), (80, 150), (1, 3)])
def test_the_two_releases_share_the_selection_exactly(rule: str, k: int, pairs: int) -> None:
    share = Fraction(3, 40)
    sel = screened_selection(rule, share, k, pairs)
    assert sel.k == max(1, math.ceil(k * SCREEN_KEEP))

    def cost(kk: int, eps: float) -> Fraction:
        c = TopK(1.0, eps, kk).cost(Relation.REPLACE_ONE)
        got = c.epsilon if rule == "basic" else c.rho
        assert got is not None
        return Fraction(got)

    if SCREEN_WIDTH * k < pairs:
        assert sel.first_k == SCREEN_WIDTH * k
        assert cost(sel.first_k, sel.first_epsilon) <= share / 2
        assert cost(sel.k, sel.epsilon) <= share / 2
        assert sel.epsilon == selection_epsilon(rule, share / 2, sel.k)
    else:  # every pair goes to the second release, which has the whole share
        assert sel.first_k == 0
        assert cost(sel.k, sel.epsilon) <= share
        assert sel.epsilon == selection_epsilon(rule, share, sel.k)


def test_too_small_a_budget_is_refused() -> None:
    with pytest.raises(AlgorithmError, match="too small"):
        screened_selection("basic", Fraction(0), 10, 100)


def test_screening_sets_come_from_the_first_release_alone() -> None:
    # no first release: the empty set and every other node
    assert screening_sets((1, 3), 5, None) == [(), (0,), (2,), (4,)]
    # a star around 0 ranked 1, 2, ..., 40, then the pair (1, 2)
    ranked = [(0, v) for v in range(1, 41)] + [(1, 2)]
    order = neighbour_order(ranked)
    assert order[0][:3] == [1, 2, 3]
    assert order[1] == [0, 2]
    sets = screening_sets((0, 1), 41, order)
    # endpoint 0: its SETS_PER_SIDE strongest neighbours other than 1; endpoint 1: {0, 2}
    assert sets == [(), *((z,) for z in range(2, 2 + SETS_PER_SIDE))]
    assert screening_sets((5, 7), 41, order) == [(), (0,)]


class _Scores:
    """Stand-in source: public scores per ``(x, y, S)``, threshold 0, bound 1."""

    relation = Relation.REPLACE_ONE

    def __init__(self, p: int, scores: dict[tuple[int, int, tuple[int, ...]], float]) -> None:
        self.p, self.scores = p, scores
        self.asked: list[tuple[int, int, tuple[int, ...]]] = []

    def prefetch(self, queries: Any) -> None:
        self.asked.extend((x, y, tuple(S)) for x, y, S in queries)

    def score(self, x: int, y: int, S: tuple[int, ...]) -> float:
        return self.scores.get((x, y, tuple(S)), 0.0)

    def threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        return 0.0

    def sensitivity(self, m: int | None = None, pair: tuple[int, int] | None = None,
                    S: tuple[int, ...] | None = None) -> float:
        return 1.0


def test_a_huge_budget_keeps_the_pairs_no_single_neighbour_separates() -> None:
    """Chain 0 - 1 - 2 plus 3 - 4: every pair of the chain is marginally dependent, but
    (0, 2) is separated by 1; the second release keeps the three true edges."""
    p = 6
    scores: dict[tuple[int, int, tuple[int, ...]], float] = {}
    for x, y in combinations(range(p), 2):
        scores[(x, y, ())] = -100.0                     # independent
    for x, y, s in ((0, 1, 90.0), (1, 2, 80.0), (0, 2, 95.0), (3, 4, 70.0)):
        scores[(x, y, ())] = s
        for z in range(p):
            scores[(x, y, (z,))] = s                    # stays dependent ...
    scores[(0, 2, (1,))] = -50.0                        # ... except (0, 2) given 1
    src = _Scores(p, scores)
    recorder = InMemoryRecorder(Budget(1e6, 0.0))
    session = Session(Budget(1e6, 0.0), rule="basic", recorder=recorder, seed=3)
    kept, screened = select_pairs_screened(src, session, 4, 1e5, 3,  # type: ignore[arg-type]
                                           1e5, "test")
    assert kept == {(0, 1), (1, 2), (3, 4)}
    assert screened == {(0, 2)}
    assert [e.mechanism for e in recorder.entries] == ["top-k", "top-k"]
    assert [e.params["k"] for e in recorder.entries] == [4, 3]
    # the second release read only the first release's pairs, with sets from its graph
    second = {(x, y) for x, y, S in src.asked if S}
    assert second <= {(0, 1), (1, 2), (0, 2), (3, 4)}
    assert (0, 2, (1,)) in src.asked
    assert (3, 4, (0,)) not in src.asked
    spent = session.spent().epsilon
    assert spent is not None
    assert spent <= Fraction(4 * 10**5 + 3 * 10**5)


def test_dropping_a_sepset_removes_its_v_structures() -> None:
    """Collider 0 -> 2 <- 1: PC orients it from sepset(0, 1) = {}; without that sepset
    the pair claims nothing and the edges stay undirected; the skeleton is unchanged."""
    names = ("A", "B", "C")
    res = pc_stable(DSeparationOracle(names, [("A", "C"), ("B", "C")]), names)
    assert res.v_structures
    out = without_sepsets(res, frozenset({(0, 1)}))
    assert out.v_structures == ()
    assert (0, 1) not in out.sepsets
    assert out.adjacency == res.adjacency
    assert out.cpdag.n_edges == res.cpdag.n_edges
    assert out.info["sepsets_unreleased"] == 1
    assert out.to_json()["sepsets_unreleased"] == 1
    assert without_sepsets(res, frozenset()) is res


def _count_orientations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the engine's calls of ``orient`` (one entry per call)."""
    import dpcg.pc.engine as engine
    from dpcg.pc.orientation import orient

    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return orient(*args, **kwargs)

    monkeypatch.setattr(engine, "orient", counted)
    return calls


class _Unreleased(DSeparationOracle):
    """The oracle, as a tester that removed ``(0, 1)`` by a release naming no set."""

    @property
    def unreleased_sepsets(self) -> frozenset[tuple[int, int]]:
        return frozenset({(0, 1), (1, 2)})  # (1, 2) stays adjacent: nothing to drop


def test_engine_drops_unreleased_sepsets_and_orients_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A tester naming pairs without a released set (``NamesNoSepsets``): the engine drops
    their recorded sets before its one orientation, as ``without_sepsets`` would after."""
    names = ("A", "B", "C")
    dag = [("A", "C"), ("B", "C")]
    calls = _count_orientations(monkeypatch)
    out = pc_stable(_Unreleased(names, dag), names)
    assert len(calls) == 1
    plain = pc_stable(DSeparationOracle(names, dag), names)
    again = without_sepsets(plain, frozenset({(0, 1)}))
    assert out.v_structures == again.v_structures == ()
    assert out.sepsets == again.sepsets
    assert (0, 1) not in out.sepsets
    assert out.adjacency == plain.adjacency
    assert out.cpdag == again.cpdag
    assert out.info == again.info == {"sepsets_unreleased": 1}
    assert plain.info == {}  # a tester that names none: nothing dropped, nothing counted


@pytest.fixture(scope="module")
def net100() -> Any:
    from dpcg.datasets import load_network

    return load_network("random:nodes=100,max_parents=3,card=2-4,seed=7,conc=1").sample(
        20_000, 7)


def test_priv_pc_run_screens_then_sieves_the_kept_pairs(
        net100: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_orientations(monkeypatch)
    res = private_run(net100, "priv-pc", epsilon=1.0, delta=1e-6, seed=4)
    assert len(calls) == 1  # the screened-out pairs' sets are dropped before orienting
    plan = res.plan
    assert plan["screened"] is True
    assert plan["screen_k"] == 800
    assert plan["select_k"] == 200
    assert res.mechanisms.get("top-k") == 2
    lv0 = plan["used_levels"][0]
    assert lv0["selected"] == 200
    assert lv0["screened_out"] == 600
    assert lv0["rounds"] <= lv0["rounds_planned"] == 200
    assert plan["used_levels"][1]["open_pairs"] <= 200
    # the 600 pairs screened out are removed without a released separating set
    assert res.pc.info["sepsets_unreleased"] == 600
    removed = n_pairs(100) - sum(len(a) for a in res.pc.adjacency) // 2
    assert len(res.pc.sepsets) == removed - 600
    for x, _z, y in res.pc.v_structures:
        assert (x, y) in res.pc.sepsets
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert not res.budget_exhausted


def test_priv_pc_screened_level_zero_fits_its_share(net100: Any) -> None:
    from dpcg.citests.private import source_for_dataset
    from dpcg.private.contract import RunSettings
    from dpcg.private.priv_pc import make_plan

    src = source_for_dataset(net100, "kendall-split")
    settings = RunSettings(epsilon=1.0, delta=1e-6, test="kendall-split")
    plan = make_plan(PrivPCParams(), settings, src)
    assert plan.screened
    assert plan.screen_k == 800
    assert plan.select_k == plan.rounds == 200
    level0 = Budget(1.0, 1e-6).rho() / (plan.depth + 1)
    first = TopK(1.0, plan.screen_epsilon, plan.screen_k).cost(Relation.REPLACE_ONE)
    second = TopK(1.0, plan.select_epsilon, plan.select_k).cost(Relation.REPLACE_ONE)
    per_round = 2 * Fraction(plan.epsilon_half) ** 2 / 2
    assert first.rho is not None
    assert second.rho is not None
    assert first.rho + second.rho + plan.rounds * per_round <= level0
    off = make_plan(PrivPCParams(screen_selection=0), settings, src)
    assert not off.screened
    assert off.select_k == 400
    assert off.screen_k == 0
    # the screened plan's rounds have the budget of the unscreened plan's
    assert plan.epsilon_half == off.epsilon_half
    with pytest.raises(AlgorithmError, match="screen_selection"):
        PrivPCParams(screen_selection=2)


class _FixedSession:
    """Returns a fixed output for each release (the first ``k`` indices), recording the
    exact utilities: the screened utilities of two neighbouring datasets compared for
    the same first-release output, as the adaptive-composition argument conditions."""

    def __init__(self) -> None:
        self.utilities: list[Any] = []

    def release(self, mech: TopK, compute: Any, *, purpose: str = "") -> Any:
        import numpy as np

        u = np.asarray(compute(), dtype=float)
        self.utilities.append(u)
        return np.arange(min(mech.k, u.shape[0]))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["kendall-split", "cmi", "g2-distance"]),
       st.booleans(), st.booleans())
def test_screened_utilities_change_by_at_most_one_between_neighbours(
        seed: int, score: str, first: bool, empty_set_bound: bool) -> None:
    """Replace one row of a random 5-variable dataset: with the first release's output
    fixed, every utility of both releases moves by at most 1 (their sensitivity), with
    the term given the empty set divided by the pair's bound or by that test's own
    (``empty_set_bound``, half for ``kendall-split``)."""
    import numpy as np

    from dpcg.citests.private import StatisticSource

    rng = np.random.default_rng(seed)
    cards = rng.integers(2, 4, size=5)
    n = int(rng.integers(30, 120))
    codes = np.stack([rng.integers(0, c, size=n) for c in cards]).astype(np.int64)
    codes[1] = (codes[0] + (rng.random(n) < 0.3)) % cards[1]   # some dependence
    other = codes.copy()
    other[:, int(rng.integers(n))] = [int(rng.integers(c)) for c in cards]
    got = []
    for data in (codes, other):
        src = StatisticSource(data, tuple(int(c) for c in cards), score)
        session = _FixedSession()
        select_pairs_screened(src, session, 6 if first else 0, 1.0, 3,  # type: ignore[arg-type]
                              1.0, "test", empty_set_bound=empty_set_bound)
        got.append(session.utilities)
    assert len(got[0]) == len(got[1]) == (2 if first else 1)
    for a, b in zip(got[0], got[1], strict=True):
        assert a.shape == b.shape
        assert float(np.max(np.abs(a - b))) <= 1.0 + 1e-9


# ---------------------------------------------------------------------- Laplace-PC


@pytest.fixture(scope="module")
def net30() -> Any:
    from dpcg.datasets import load_network

    return load_network("random:nodes=30,max_parents=3,card=2-4,seed=7,conc=1").sample(
        20_000, 7)


def _laplace_plan(data: Any, eps: float, **params: Any) -> Any:
    from dpcg.citests.private import source_for_dataset
    from dpcg.private.contract import RunSettings
    from dpcg.private.laplace_pc import LaplacePCParams, make_plan

    return make_plan(LaplacePCParams(**params), RunSettings(
        epsilon=eps, delta=1e-6, test="kendall-split"), source_for_dataset(data))


@pytest.mark.parametrize("rule", ["zcdp", "basic"])
def test_laplace_pc_screens_below_its_single_selection(net30: Any, net100: Any,
                                                       rule: str) -> None:
    """30 nodes: the single selection's rule does not select, the screened one does
    (gain LAPLACE_SCREEN_GAIN), and its releases plus the kept pairs' tests fit level
    0's share; 100 nodes: the single selection, screened only on request."""
    from dpcg.private import planning
    from dpcg.private.laplace_pc import level_slots

    plan = _laplace_plan(net30, 1.0, rule=rule)
    sel = plan.selection
    assert sel is not None
    assert sel.screened
    k = math.ceil(planning.SELECT_PER_NODE * 30)
    assert (sel.screen_k, sel.k) == (planning.SCREEN_WIDTH * k, k // 2)
    assert plan.describe()["screened"] is True
    budget = Budget(1.0, 1e-6)
    total = Fraction(budget.epsilon_exact) if rule == "basic" else Fraction(budget.rho())
    level0 = total / level_slots(0, plan.depth)

    def used(c: Any) -> Fraction:
        v = c.epsilon if rule == "basic" else c.rho
        assert v is not None
        return Fraction(v)

    rel = Relation.REPLACE_ONE
    assert sel.test is not None
    spend = (used(TopK(1.0, sel.screen_epsilon, sel.screen_k).cost(rel))
             + used(TopK(1.0, sel.epsilon, sel.k).cost(rel))
             + sel.k * used(sel.test.mechanism(plan.sensitivity).cost(rel)))
    assert spend <= level0
    assert _laplace_plan(net30, 1.0, rule=rule, screen_selection=0).selection is None
    big = _laplace_plan(net100, 1.0, rule=rule)
    assert big.selection is not None
    assert not big.selection.screened
    forced = _laplace_plan(net100, 1.0, rule=rule, screen_selection=1).selection
    assert forced is not None
    assert forced.screened
    assert forced.k == big.selection.k // 2


def test_laplace_pc_run_screens_then_tests_the_kept_pairs(net30: Any) -> None:
    res = private_run(net30, "laplace-pc", epsilon=1.0, delta=1e-6, seed=4)
    plan = res.plan
    assert plan["screened"] is True
    assert res.mechanisms.get("top-k") == 2
    lv0 = plan["used_levels"][0]
    assert lv0["selected"] == plan["select_k"]
    assert lv0["screened_out"] == plan["screen_k"] - plan["select_k"]
    assert lv0["tests"] <= plan["select_k"]
    assert res.pc.info["sepsets_unreleased"] == lv0["screened_out"]
    for x, _z, y in res.pc.v_structures:
        assert (x, y) in res.pc.sepsets
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert not res.budget_exhausted


def test_laplace_pc_screen_option_is_validated() -> None:
    from dpcg.private.laplace_pc import LaplacePCParams

    with pytest.raises(AlgorithmError, match="screen_selection"):
        LaplacePCParams(screen_selection=3)
    with pytest.raises(AlgorithmError, match="screen_selection"):
        LaplacePCParams(screen_selection=1, budget_split="run")


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc"])
def test_screened_pairs_stay_level_one_candidates(net30: Any, algorithm: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The pairs the second release removed stay in the adjacency level 1's conditioning
    sets are drawn from (PC-stable freezes the adjacency before level 1's removals, and
    the second release asked a level-1 question), are not tested again, and are gone
    from level 2 on; without them a hub's children that only the hub separates stay
    adjacent (hailfinder: ``docs/benchmarks/utility-f1-analysis.md``)."""
    import dpcg.pc.engine as engine

    seen: dict[int, tuple[Any, Any, frozenset[tuple[int, int]]]] = {}
    real = engine._with_carried

    def spy(adjacency: Any, tester: Any, level: int) -> Any:
        out = real(adjacency, tester, level)
        seen[level] = (adjacency, out, tester.unreleased_sepsets)
        return out
    monkeypatch.setattr(engine, "_with_carried", spy)
    res = private_run(net30, algorithm, epsilon=1.0, delta=1e-6, seed=4)
    assert res.plan["screened"] is True
    base, ext, screened = seen[1]
    assert screened
    assert res.pc.info["sepsets_unreleased"] == len(screened)
    added = {(x, y) for x in range(len(ext)) for y in ext[x] - base[x] if x < y}
    assert added == set(screened)
    level1 = {(r.x, r.y) for r in res.pc.tests if r.level == 1}
    assert not level1 & set(screened)
    for level, (b, e, _) in seen.items():
        if level != 1:
            assert e == b

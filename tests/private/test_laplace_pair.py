"""Laplace-PC's per-pair releases (``release='pair'``, the default of the per-level plan).

* a level >= 1 releases one noisy ``min_S (s - T)`` per open pair, with the pair's own
  sensitivity, in one batch; then one exponential-mechanism pick per removed pair with
  several candidate sets; together they stay within the level's share;
* the released minimum is the minimum of the exact margins (checked with a vanishing
  noise), and the pick is the set that separates best;
* a pair with many candidate sets runs over the ranked subsets of its strongest
  neighbours (public: released level-0 scores), each one of the engine's candidates.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import BudgetExceededError
from accounting.session import Session
from dpcg.citests.base import CIResult
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.pc.engine import LevelCandidates, candidate_sets
from dpcg.private import laplace_pc
from dpcg.private.common import SETS_PER_SIDE, ranked_sets
from dpcg.private.contract import RunSettings
from dpcg.private.laplace_pc import LaplacePCParams, PairMinTest, make_plan
from tests.engine_room import private_run


@pytest.fixture(scope="module")
def net30() -> Any:
    return load_network("random:nodes=30,max_parents=3,card=2-4,seed=5,conc=1").sample(
        20_000, 5)


def _entries(path: Path, run_id: str) -> list[dict[str, Any]]:
    from accounting.ledger import Ledger

    led = Ledger.open(path)
    assert led.verify().ok
    return [e for e in led.entries() if e.get("run_id") == run_id and e["kind"] == "mechanism"]


def test_one_release_per_open_pair_then_one_pick_per_removal(net30: Any,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    # without a level-0 selection: every ledger entry is a test or a pick of one pair
    res = private_run(net30, "laplace-pc", epsilon=2.0, delta=1e-6, seed=4, ledger=path,
                      dataset_id="net30", screen_selection=0)
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    src = source_for_dataset(net30)
    levels = res.plan["used_levels"]
    per_level: Counter[int] = Counter()
    picks: Counter[int] = Counter()
    for e in entries:
        pm = re.search(r"(\d+) _\|\|_ (\d+)", e["purpose"])
        assert pm, e["purpose"]
        x, y = int(pm.group(1)), int(pm.group(2))
        assert e["sensitivity"] == pytest.approx(src.sensitivity(pair=(x, y)), rel=1e-12)
        m = re.match(r"min over (\d+) level-(\d+) sets", e["purpose"])
        if m:
            per_level[int(m.group(2))] += 1
            assert e["mechanism"] == "gaussian"
        elif (m := re.match(r"level-(\d+) separating set", e["purpose"])):
            picks[int(m.group(1))] += 1
            assert e["mechanism"] == "exponential"
    for lv in levels[1:]:
        assert per_level[lv["level"]] == lv["pairs"] == lv["tests"]
        assert picks[lv["level"]] == lv["sepset_picks"]
    assert sum(picks.values()) > 0
    # a removed pair's record carries its noisy minimum (<= 0) and a candidate set
    later = [t for t in res.pc.tests if t.level >= 1]
    assert later
    assert all(t.independent and t.statistic is not None and t.statistic <= 0
               for t in later)
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(2.0, 1e-6).rho()


def test_each_level_stays_within_its_share(net30: Any, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    res = private_run(net30, "laplace-pc", epsilon=1.0, delta=1e-6, seed=2, ledger=path,
                      dataset_id="net30")
    assert res.ledger is not None
    cost: dict[int, float] = {}
    for e in _entries(path, res.ledger["run_id"]):
        m = re.search(r"level-(\d+)", e["purpose"])
        level = int(m.group(1)) if m else 0
        cost[level] = cost.get(level, 0.0) + float(Fraction(e["cost"]["rho"]))
    for lv in res.plan["used_levels"]:
        used = cost.get(lv["level"], 0.0)
        assert used <= lv["share"] * (1 + 1e-9)
        if lv["level"] >= 1 and lv["sepset_picks"]:  # the picks use what the level had left
            assert used >= lv["share"] * 0.98


def test_vanishing_noise_releases_the_exact_minimum(net30: Any) -> None:
    """With a huge budget the released minimum of a removed pair equals the smallest
    exact margin over its candidate sets, and the pick is that set."""
    res = private_run(net30, "laplace-pc", epsilon=1e7, delta=1e-6, seed=1, max_depth=2)
    src = source_for_dataset(net30)
    adj = [set(range(src.p)) - {v} for v in range(src.p)]
    by_level: dict[int, list[Any]] = {}
    for t in res.pc.tests:
        by_level.setdefault(t.level, []).append(t)
    checked = 0
    for level in sorted(by_level):
        frozen = [frozenset(a) for a in adj]
        for t in by_level[level]:
            if not t.independent:
                continue
            if level >= 1:
                sets = list(candidate_sets(t.x, t.y, level, frozen))
                margins = [src.score(t.x, t.y, S) - src.threshold(t.x, t.y, S) for S in sets]
                assert t.statistic == pytest.approx(min(margins), abs=1e-3)
                assert tuple(t.S) == sets[margins.index(min(margins))]
                checked += 1
        for t in by_level[level]:
            if t.independent:
                adj[t.x].discard(t.y)
                adj[t.y].discard(t.x)
    assert checked > 0


def _tester(net30: Any, eps: float = 1.0) -> PairMinTest:
    src = source_for_dataset(net30)
    settings = RunSettings(epsilon=eps, delta=1e-6, test="kendall-split")
    plan = make_plan(LaplacePCParams(), settings, src)
    session = Session(settings.budget(), rule=plan.rule, seed=0)
    tester = laplace_pc.LaplacePC().tester(plan, src, session)
    assert isinstance(tester, PairMinTest)
    return tester


@pytest.mark.parametrize("seed", range(6))
def test_ranked_sets_are_candidates_from_the_strongest_neighbours(net30: Any, seed: int
                                                                   ) -> None:
    rng = random.Random(seed)
    tester = _tester(net30)
    p = 24
    adj: list[set[int]] = [set() for _ in range(p)]
    for a, b in combinations(range(p), 2):
        if rng.random() < 0.7:
            adj[a].add(b)
            adj[b].add(a)
    frozen = [frozenset(a) for a in adj]
    tester._strength = {(a, b): rng.uniform(0, 10) for a in range(p) for b in adj[a] if a < b}
    for level in (1, 2, 3):
        pairs = [(x, y) for x in range(p) for y in sorted(frozen[x]) if x < y]
        cands = LevelCandidates(level, {pr: tuple(candidate_sets(*pr, level, frozen))
                                        for pr in pairs}, frozen)
        for pr in pairs[:20]:
            got = ranked_sets(level, pr, cands, tester._strength)
            if len(cands[pr]) <= 2 * SETS_PER_SIDE:
                assert got == cands[pr]
                continue
            assert set(got) <= set(cands[pr])
            assert len(got) == len(set(got)) <= 2 * SETS_PER_SIDE
            for a, b in (pr, pr[::-1]):
                strength = {v: tester._strength[(min(a, v), max(a, v))]
                            for v in frozen[a] - {b}}
                nbrs = sorted(strength, key=lambda v: (-strength[v], v))
                m = max(k for k in range(level, len(nbrs) + 1)
                        if k == level or math.comb(k, level) <= SETS_PER_SIDE)
                for S in combinations(sorted(nbrs[:m]), level):
                    assert S in got


def test_the_release_option_keeps_per_test_rounds(net30: Any) -> None:
    res = private_run(net30, "laplace-pc", epsilon=1.0, delta=1e-6, seed=3, release="test",
                      screen_selection=0)
    assert res.plan["release"] == "test"
    assert "sepset_share" not in res.plan
    assert res.mechanisms.get("exponential", 0) == 0
    assert res.plan["used_releases"] == res.n_tests


def test_a_short_level_zero_hands_over_its_removals(net30: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """If level 0's round is cut short, the answered removals go to the engine with the
    stop (``partial``), never an unpruned graph in their place."""
    tester = _tester(net30)
    p = 5
    frozen = [frozenset(set(range(p)) - {v}) for v in range(p)]
    pairs = [(x, y) for x in range(p) for y in range(x + 1, p)]
    cands = LevelCandidates(0, {pr: ((),) for pr in pairs}, frozen)
    monkeypatch.setattr(tester, "test_many", lambda q: [CIResult(True, 0.0, None)] * 3)
    with pytest.raises(BudgetExceededError) as info:
        tester.decide_level(0, cands)
    assert getattr(info.value, "partial", None) == {pr: () for pr in pairs[:3]}
    assert tester.exhaustion_note is not None

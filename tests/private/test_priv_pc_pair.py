"""Priv-PC's per-pair queries (``release='pair'``; the default after a level-0 selection).

* a level >= 1 asks one sieve query per open pair (again after a dependent answer, up
  to ``sieve_asks`` times), examines the pair's smallest
  ``s - T`` on the full data at its own bound, and picks a removed pair's separating
  set with the exponential mechanism; examine + pick cost at most a round's examine;
* with a vanishing noise the skeleton is non-private PC-stable's;
* the default: per-pair queries exactly when level 0 makes a selection;
* a level strategy stopped by its budget hands over what it decided.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcg
from accounting.costs import Budget
from accounting.errors import BudgetExceededError
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import LevelCandidates, pc_stable
from dpcg.private.priv_pc import PrivPCParams, split_examine
from tests.engine_room import private_run


@pytest.fixture(scope="module")
def net30() -> Any:
    return load_network("random:nodes=30,max_parents=3,card=2-4,seed=5,conc=1").sample(
        20_000, 5)


@pytest.mark.parametrize("half", [1e-6, 0.003, 0.1, 0.37, 1.0, 2.5])
def test_examine_and_pick_fit_in_one_examine(half: float) -> None:
    e = Fraction(half)
    ex, pick = split_examine(half, "basic")
    assert Fraction(ex) + Fraction(pick) <= e
    assert ex == pytest.approx(0.75 * half)
    ex, pick = split_examine(half, "zcdp")
    # a pure examine costs e^2/2, the bounded-range pick e^2/8
    assert Fraction(ex) ** 2 / 2 + Fraction(pick) ** 2 / 8 <= e * e / 2
    assert ex == pytest.approx(half * 3 ** 0.5 / 2, rel=1e-12)
    assert pick == half


def test_pair_levels_release_one_examine_per_sieve_positive(net30: Any, tmp_path: Path
                                                             ) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "l.db"
    res = private_run(net30, "priv-pc", epsilon=2.0, delta=1e-6, seed=4, ledger=path,
                      dataset_id="net30", release="pair", select=4)
    assert res.plan["release"] == "pair"
    assert res.ledger is not None
    led = Ledger.open(path)
    assert led.verify().ok
    entries = [e for e in led.entries()
               if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"]
    src = source_for_dataset(net30)
    examines = picks = 0
    for e in entries:
        if e["purpose"].startswith("priv-pc examine: min over"):
            examines += 1
        elif "separating set" in e["purpose"]:
            picks += 1
            assert e["mechanism"] == "exponential"
        else:
            continue
        m = re.search(r"(\d+) _\|\|_ (\d+)$", e["purpose"])
        assert m, e["purpose"]
        x, y = int(m.group(1)), int(m.group(2))
        assert e["sensitivity"] == pytest.approx(src.sensitivity(pair=(x, y)), rel=1e-12)
    assert examines > 0
    assert picks == res.plan["used_sepset_picks"] > 0
    later = [t for t in res.pc.tests if t.level >= 1]
    assert later
    assert all(t.independent and t.statistic is not None and t.statistic <= 0 for t in later)
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(2.0, 1e-6).rho()


@pytest.mark.parametrize("asks", [1, 3])
def test_a_pair_is_asked_again_only_after_a_dependent_answer(
        net30: Any, asks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sieve answers of every per-pair query: at most ``sieve_asks`` of them, a
    positive only as the last one, all ``sieve_asks`` asked when none was positive; one
    examine per positive (the round ends there) and the spend within the budget."""
    import dpcg.private.priv_pc as pp
    from accounting.mechanisms import SparseVectorRun

    answers: list[bool] = []
    per_pair: list[list[bool]] = []
    run_test = SparseVectorRun.test
    pair = pp.PairSieveTester._pair

    def recording_test(self: SparseVectorRun, compute: Any) -> bool:
        answers.append(run_test(self, compute))
        return answers[-1]

    def recording_pair(self: Any, x: int, y: int, sets: Any) -> Any:
        answers.clear()
        out = pair(self, x, y, sets)
        per_pair.append(list(answers))
        return out

    monkeypatch.setattr(SparseVectorRun, "test", recording_test)
    monkeypatch.setattr(pp.PairSieveTester, "_pair", recording_pair)
    res = private_run(net30, "priv-pc", epsilon=2.0, delta=1e-6, seed=4, select=4,
                      sieve_asks=asks)
    assert res.plan["sieve_asks"] == asks
    assert per_pair
    for got in per_pair:
        assert 1 <= len(got) <= asks
        assert not any(got[:-1])
        assert got[-1] or len(got) == asks
    level0 = sum(1 for t in res.pc.tests if t.level == 0 and t.statistic is not None)
    assert sum(got[-1] for got in per_pair) == res.plan["used_examines"] - level0
    if asks > 1:
        assert any(len(got) > 1 for got in per_pair)
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(2.0, 1e-6).rho()


def test_sieve_asks_is_checked() -> None:
    assert PrivPCParams().sieve_asks is None
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(AlgorithmError, match="sieve_asks"):
            PrivPCParams(sieve_asks=bad)  # type: ignore[arg-type]
    with pytest.raises(AlgorithmError, match="sieve_asks"):
        PrivPCParams(sieve_asks=2, plan_size=10)


def test_vanishing_noise_gives_pc_stables_skeleton(net30: Any) -> None:
    res = private_run(net30, "priv-pc", epsilon=1e7, delta=1e-6, seed=1, max_depth=2,
                      release="pair", select=0)
    ref = dpcg.discover(net30, test="kendall-split", max_depth=2).pc
    assert not res.budget_exhausted
    assert res.cpdag.skeleton() == ref.cpdag.skeleton()


def test_default_is_per_pair_with_or_without_a_selection() -> None:
    small = load_network("random:nodes=20,max_parents=3,card=2-4,seed=5,conc=1").sample(
        20_000, 5)
    res = private_run(small, "priv-pc", epsilon=1.0, delta=1e-6, seed=2, max_depth=1,
                      select=0)
    assert res.plan["select_k"] == 0
    assert res.plan["release"] == "pair"
    res = private_run(small, "priv-pc", epsilon=1e6, delta=1e-6, seed=2, max_depth=1)
    assert res.plan["select_k"] == 0  # no selection by default at a huge budget
    assert res.plan["release"] == "pair"
    res = private_run(small, "priv-pc", epsilon=1.0, delta=1e-6, seed=2, max_depth=1,
                      select=0, release="test")
    assert res.plan["release"] == "test"
    res = private_run(small, "priv-pc", epsilon=1.0, delta=1e-6, seed=2, max_depth=1,
                      select=3)
    # screened: the first release keeps 2K = 120, the second K/2 = 30
    assert (res.plan["screen_k"], res.plan["select_k"]) == (120, 30)
    assert res.plan["release"] == "pair"
    res = private_run(small, "priv-pc", epsilon=1.0, delta=1e-6, seed=2, max_depth=1,
                      select=3, screen_selection=0)
    assert res.plan["select_k"] == 60
    assert res.plan["release"] == "pair"
    res = private_run(small, "priv-pc", epsilon=1.0, delta=1e-6, seed=2, max_depth=1)
    # the default selection (PRIV_PC_SELECT_GAIN): K = 80, screened to 40 of 160
    assert (res.plan["screen_k"], res.plan["select_k"]) == (160, 40)
    assert res.plan["release"] == "pair"
    with pytest.raises(AlgorithmError, match="release"):
        PrivPCParams(release="both")
    with pytest.raises(AlgorithmError, match="release"):
        PrivPCParams(release="pair", plan_size=10)


class _StopsAfterOne:
    """A level strategy that removes one pair at level 1, then runs out of budget."""

    def decide_level(self, level: int, candidates: LevelCandidates) -> dict[Any, Any]:
        if level == 0:
            return {}
        pair = next(iter(candidates))
        exc = BudgetExceededError("out of budget")
        exc.partial = {pair: candidates[pair][0]}  # type: ignore[attr-defined]
        raise exc


def test_a_stopped_level_strategy_keeps_what_it_decided() -> None:
    res = pc_stable(_StopsAfterOne(), ("a", "b", "c", "d"))
    assert res.budget_exhausted
    assert res.levels_completed == 1
    assert len(res.sepsets) == 1
    (x, y), S = next(iter(res.sepsets.items()))
    assert y not in res.adjacency[x]
    assert len(S) == 1

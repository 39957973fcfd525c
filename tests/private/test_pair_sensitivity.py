"""Per-pair (cardinality-aware) sensitivities of the Kendall scores and how the private
algorithms use them (docs/privacy/per-pair-sensitivity.md)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.relations import Relation
from dpcg.citests.private import P_LIPSCHITZ, StatisticSource, source_for_dataset
from dpcg.stats.registry import conditional_kendall_sensitivity
from tests.engine_room import private_run

N = 400
CARDS = (2, 3, 4, 6, 1)


def _source(score: str = "kendall-z", relation: str = "replace-one") -> StatisticSource:
    codes = (np.arange(len(CARDS) * N).reshape(len(CARDS), N) % np.array(CARDS)[:, None])
    return StatisticSource(codes.astype(np.uint8), CARDS, score, relation=relation)


@pytest.mark.parametrize(("pair", "c"), [((0, 1), 2), ((1, 0), 2), ((1, 2), 3), ((2, 3), 4),
                                          ((3, 2), 4), ((4, 3), 2), ((0, 4), 2)])
def test_pair_bound_is_the_registered_categorical_bound(pair: tuple[int, int], c: int) -> None:
    src = _source()
    want = conditional_kendall_sensitivity(N, 9 * N / 4, cx=c, cy=c)
    assert src.sensitivity(pair=pair) == pytest.approx(want, rel=1e-15)
    # c_U(2) = 4.5, c_U(3) = 5.625, c_U(4) = 6: 6, 7.5, 8 over sqrt(n)
    assert src.sensitivity(pair=pair) * math.sqrt(N) == pytest.approx(
        {2: 6.0, 3: 7.5, 4: 8.0}[c])


def test_source_bound_is_the_largest_pair_bound_and_below_the_general_one() -> None:
    src = _source()
    pairs = [(x, y) for x in range(len(CARDS)) for y in range(len(CARDS)) if x != y]
    assert src.sensitivity() == max(src.sensitivity(pair=p) for p in pairs)
    assert src.sensitivity() <= conditional_kendall_sensitivity(N, 9 * N / 4)  # 9/sqrt(n)
    for p in pairs:
        assert src.scale(*p) == pytest.approx(src.sensitivity() / src.sensitivity(pair=p))
        assert src.scale(*p) >= 1.0
    # on m rows too (Priv-PC's sieve), and a subset shares the bounds
    m = 100
    sub = src.subset(np.arange(m))
    assert sub.sensitivity(pair=(0, 1)) == src.sensitivity(m, pair=(0, 1))
    assert src.sensitivity(m, pair=(0, 1)) == pytest.approx(6.0 / math.sqrt(m))


def test_split_score_has_the_binary_bound_for_every_pair() -> None:
    """kendall-split (the default): every member is binary, so every pair, and the
    source, get 6/sqrt(n) (add/remove: 5.625/sqrt(w0)); every scale factor is 1."""
    src = _source("kendall-split")
    pairs = [(x, y) for x in range(len(CARDS)) for y in range(len(CARDS)) if x != y]
    for p in pairs:
        assert src.sensitivity(pair=p) == pytest.approx(6.0 / math.sqrt(N), rel=1e-15)
        assert src.scale(*p) == 1.0
    assert src.sensitivity() == src.sensitivity(pair=(2, 3))
    assert src.sensitivity(100) == pytest.approx(6.0 / math.sqrt(100))
    ar = _source("kendall-split", relation="add-remove")
    assert ar.sensitivity(pair=(2, 3)) == pytest.approx(5.625 / math.sqrt(9 * N / 4))
    # the default score of a source is the split statistic
    codes = np.zeros((2, 10), dtype=np.uint8)
    assert StatisticSource(codes, (2, 3)).score_name == "kendall-split"


def test_pvalue_score_and_add_remove_use_the_same_pair_rule() -> None:
    p = _source("kendall-p")
    assert p.sensitivity(pair=(0, 1)) == pytest.approx(P_LIPSCHITZ * 6.0 / math.sqrt(N))
    ar = _source(relation="add-remove")
    want = conditional_kendall_sensitivity(None, 9 * N / 4, Relation.ADD_REMOVE, cx=3, cy=3)
    assert ar.sensitivity(pair=(1, 2)) == pytest.approx(want)
    assert want == pytest.approx((5.625 + 1.125) / math.sqrt(9 * N / 4))


def test_cmi_has_one_bound_for_all_pairs() -> None:
    src = _source("cmi")
    assert src.sensitivity(pair=(0, 1)) == src.sensitivity(pair=(2, 3)) == src.sensitivity()


def test_laplace_pc_ledger_entries_carry_each_pairs_bound(survey: Any, tmp_path: Path) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "runs.db"
    res = private_run(survey, "laplace-pc", epsilon=2.0, delta=1e-6, ledger=path,
                      dataset_id="survey-4k", seed=5)
    led = Ledger.open(path)
    assert led.verify().ok
    assert res.ledger is not None
    src = source_for_dataset(survey)
    cards = src.cardinalities
    assert len(set(cards)) > 1  # binary and three-category columns
    entries = [e for e in led.entries()
               if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"]
    # level 0's tests, one release per open pair at later levels, separating-set picks
    assert len(entries) == sum(res.mechanisms.values()) > 0
    seen = set()
    for e in entries:
        m = re.search(r"(\d+) _\|\|_ (\d+)", e["purpose"])
        assert m, e["purpose"]
        x, y = int(m.group(1)), int(m.group(2))
        assert e["sensitivity"] == pytest.approx(src.sensitivity(pair=(x, y)), rel=1e-12)
        seen.add(min(cards[x], cards[y]))
    assert seen == {2, 3}  # both bounds were used


class _Run:
    """Stands in for an SVT instance: answers with the query's sign, keeps the values."""

    def __init__(self, log: list[float], subsample: bool) -> None:
        self.log = log
        self.subsample = subsample
        self.halted = False

    def test(self, query: Any) -> bool:
        v = float(query(np.arange(50)) if self.subsample else query())
        self.log.append(v)
        return v > 0


class _Session:
    relation = Relation.REPLACE_ONE

    def __init__(self, subsample: bool = False) -> None:
        self.log: list[float] = []
        self.subsample = subsample
        self.released: list[Any] = []

    def start(self, mechanism: Any, purpose: str = "") -> _Run:
        self.mechanism = mechanism
        return _Run(self.log, self.subsample)

    def release(self, mechanism: Any, compute: Any, purpose: str = "") -> float:
        self.released.append(mechanism)
        return float(compute())

    def release_many(self, requests: list[tuple[Any, Any, str]]) -> list[Any]:
        return [self.start(m, p) if c is None else self.release(m, c, p)
                for m, c, p in requests]

    def remaining(self) -> Any:
        from accounting.costs import Cost

        return Cost.pure(10**9)


def test_svt_pc_queries_are_rescaled_to_the_instance_sensitivity() -> None:
    from dpcg.private.contract import RunSettings
    from dpcg.private.svt_pc import SVTPCParams, SVTTester, make_plan

    src = _source()
    plan = make_plan(SVTPCParams(), RunSettings(epsilon=1.0, delta=0.0, test="kendall-z"), src)
    assert plan.sensitivity == src.sensitivity()
    session = _Session()
    tester = SVTTester(plan, src, session)  # type: ignore[arg-type]  # a recording fake
    for x, y, S in [(0, 1, ()), (1, 2, (0,)), (2, 3, ()), (0, 3, (1, 2))]:
        tester.test(x, y, S)
        want = src.scale(x, y) * (src.threshold(x, y, S) - src.score(x, y, S))
        assert session.log[-1] == pytest.approx(want, rel=1e-12)
    assert session.mechanism.sensitivity == src.sensitivity()


def test_priv_pc_sieve_rescaled_and_examine_uses_the_pair_bound() -> None:
    from dpcg.private.contract import RunSettings
    from dpcg.private.priv_pc import PrivPCParams, SieveExamineTester, make_plan

    src = _source()
    plan = make_plan(PrivPCParams(m=50), RunSettings(epsilon=1.0, delta=0.0, test="kendall-z"),
                     src)
    session = _Session(subsample=True)
    tester = SieveExamineTester(plan, src, session)  # type: ignore[arg-type]  # a fake
    sub = src.subset(np.arange(50))
    for x, y, S in [(0, 1, ()), (1, 2, ()), (2, 3, (0,))]:
        tester.test(x, y, S)
        k = plan.sensitivity_sub / src.sensitivity(50, pair=(x, y))
        want = k * (src.threshold(x, y, S) + plan.tweak - sub.score(x, y, S))
        assert session.log[-1] == pytest.approx(want, rel=1e-12)
        if session.log[-1] > 0:  # a sieve positive: the examine used the pair's bound
            assert session.released[-1].sensitivity == src.sensitivity(pair=(x, y))
    assert session.released  # at least one examine ran (the columns are independent)


def test_a_test_given_the_empty_set_has_half_the_split_bound() -> None:
    """``kendall-split`` under replace-one: ``3/sqrt(n)`` given the empty set (one
    stratum; statistics-split-kendall-z.md, claim 5), for every pair and on a subset's
    rows; any other set, another score or add/remove keeps the pair's bound."""
    src = _source("kendall-split")
    for p in ((0, 1), (2, 3), (3, 4)):
        assert src.sensitivity(pair=p, S=()) == pytest.approx(3.0 / math.sqrt(N), rel=1e-15)
        assert src.sensitivity(pair=p, S=(4,)) == src.sensitivity(pair=p)
        assert src.scale(*p, ()) == pytest.approx(2.0)
    assert src.sensitivity(S=()) == pytest.approx(src.sensitivity() / 2)
    assert src.sensitivity(100, pair=(0, 1), S=()) == pytest.approx(3.0 / math.sqrt(100))
    for other in (_source("kendall-z"), _source("cmi"), _source("g2-distance"),
                  _source("kendall-split", "add-remove")):
        assert other.sensitivity(pair=(0, 1), S=()) == other.sensitivity(pair=(0, 1))


@pytest.mark.parametrize("switch", [False, True])
def test_level0_releases_follow_the_empty_set_switch(survey: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     switch: bool) -> None:
    """Off (the default) every Laplace-PC release carries the pair's bound; on, the
    level-0 tests carry the bound of a test given the empty set (half), the later
    releases the pair's."""
    from accounting.ledger import Ledger
    from dpcg.private import planning

    monkeypatch.setattr(planning, "LEVEL0_EMPTY_SET_BOUND", switch)
    path = tmp_path / "runs.db"
    res = private_run(survey, "laplace-pc", epsilon=2.0, delta=1e-6, ledger=path,
                      dataset_id="survey-4k", seed=5)
    assert res.ledger is not None
    src = source_for_dataset(survey)
    entries = [e for e in Ledger.open(path).entries()
               if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"]
    levels = set()
    for e in entries:
        m = re.search(r"(\d+) _\|\|_ (\d+) \| \[([\d, ]*)\]", e["purpose"])
        if m is None:  # a level >= 1 release over several sets, or a pick
            assert e["sensitivity"] == pytest.approx(src.sensitivity(), rel=1e-12)
            continue
        S = tuple(int(v) for v in m.group(3).split(",") if v.strip())
        levels.add(len(S))
        want = src.sensitivity(pair=(int(m.group(1)), int(m.group(2))),
                               S=S if switch else None)
        assert e["sensitivity"] == pytest.approx(want, rel=1e-12)
    assert 0 in levels


@pytest.mark.parametrize("algorithm", ["priv-pc", "svt-pc", "em-pc", "curate"])
def test_every_algorithm_runs_with_the_empty_set_switch(survey: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        algorithm: str) -> None:
    """With the switch on the runs complete and verify; Priv-PC's examines and EM-PC's
    level 0 carry the halved bound, CURATE keeps the pair's (its planner models one
    sensitivity for every order), SVT-PC rescales its queries (not in the ledger)."""
    from accounting.ledger import Ledger
    from dpcg.private import planning

    monkeypatch.setattr(planning, "LEVEL0_EMPTY_SET_BOUND", True)
    path = tmp_path / "runs.db"
    res = private_run(survey, algorithm, epsilon=4.0, delta=1e-6, ledger=path,
                      dataset_id="survey-4k", seed=5)
    led = Ledger.open(path)
    assert led.verify().ok
    assert res.ledger is not None
    full = source_for_dataset(survey).sensitivity()
    sens = {round(e["sensitivity"] / full, 9) for e in led.entries()
            if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"
            and e.get("sensitivity")}
    if algorithm in ("priv-pc", "em-pc"):
        assert 0.5 in sens
    if algorithm == "curate":
        assert 0.5 not in sens


def test_selection_utilities_use_the_bound_they_are_given() -> None:
    """A selection's marginal utility is ``(s - T) / Delta``: the pair's bound by default,
    the bound of a test given the empty set (half, for ``kendall-split``) when the
    caller asks for it; a score without a smaller bound is unchanged."""
    from dpcg.private.common import marginal_utilities

    pairs = [(0, 1), (1, 2), (0, 4), (3, 4)]
    for score, ratio in (("kendall-split", 2.0), ("cmi", 1.0), ("g2-distance", 1.0)):
        src = _source(score)
        raw = np.array([src.score(x, y, ()) - src.threshold(x, y, ()) for x, y in pairs])
        pair = np.array([src.sensitivity(pair=p) for p in pairs])
        np.testing.assert_allclose(marginal_utilities(src, pairs), raw / pair, rtol=1e-12)
        np.testing.assert_allclose(marginal_utilities(src, pairs, empty_set_bound=True),
                                   ratio * raw / pair, rtol=1e-12)


@pytest.mark.parametrize(("algorithm", "params", "wanted"), [
    ("laplace-pc", {}, True), ("laplace-pc", {"screen_selection": 1}, True),
    ("priv-pc", {}, True), ("priv-pc", {"screen_selection": 0}, True),
    ("svt-pc", {}, True), ("curate", {}, False)])
def test_which_selections_use_the_empty_set_bound(
        monkeypatch: pytest.MonkeyPatch, algorithm: str, params: dict[str, Any],
        wanted: bool) -> None:
    """Laplace-PC, Priv-PC and SVT-PC rank their level-0 selections with the empty set's
    bound (``planning.SELECTION_EMPTY_SET_BOUND``, on), both releases of a screened one
    included; CURATE keeps the pair's; with the switch off nobody uses it."""
    from dpcg.datasets import load_network
    from dpcg.private import common, planning

    data = load_network("random:nodes=100,max_parents=2,card=2-3,seed=5,conc=1").sample(
        5_000, 5)
    real = common.selection_bound
    seen: list[bool] = []

    def spy(S: tuple[int, ...], empty_set_bound: bool) -> Any:
        seen.append(empty_set_bound)
        return real(S, empty_set_bound)

    monkeypatch.setattr(common, "selection_bound", spy)
    for switch in (True, False):
        monkeypatch.setattr(planning, "SELECTION_EMPTY_SET_BOUND", switch)
        seen.clear()
        res = private_run(data, algorithm, epsilon=1.0, delta=1e-6, seed=2, max_depth=1,
                          **params)
        assert res.mechanisms.get("top-k", 0) >= 1, "no selection was made"
        assert seen
        assert set(seen) == {wanted and switch}
        if res.plan.get("screened"):  # the second release's terms asked too
            assert len(seen) > 1


@pytest.mark.parametrize("empty_set_bound", [False, True])
def test_selection_utility_moves_by_at_most_one_and_nearly_one(empty_set_bound: bool) -> None:
    """The worst case of claim 5 (every row at ``(0, 0)``, one replaced by ``(1, 1)``)
    moves ``kendall-split``'s marginal utility by just under 1 with the empty set's
    bound and just under 1/2 with the pair's: the utility's sensitivity is 1 and the
    selection uses the whole of it (a utility divided by half the bound would move by
    about 2 here)."""
    from dpcg.private.common import marginal_utilities

    n = 400
    codes = np.zeros((3, n), dtype=np.int64)
    other = codes.copy()
    other[:2, 0] = 1
    got = [marginal_utilities(StatisticSource(c, (2, 2, 2), "kendall-split"), [(0, 1)],
                              empty_set_bound=empty_set_bound)[0] for c in (codes, other)]
    moved = abs(got[1] - got[0])
    want = 1.0 if empty_set_bound else 0.5
    assert 0.98 * want < moved <= want + 1e-12

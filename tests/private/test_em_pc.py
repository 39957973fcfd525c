"""EM-PC's count utility and the private scores' public parameters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.private import P_LIPSCHITZ, StatisticSource
from dpcg.private.em_pc import count_utilities

floats = st.floats(min_value=-50, max_value=50, allow_nan=False)


@given(st.lists(floats, min_size=1, max_size=30))
def test_count_utility_is_zero_exactly_at_the_number_of_negative_margins(
    scores: list[float],
) -> None:
    u = count_utilities(np.array(scores))
    assert u.shape == (len(scores) + 1,)
    assert np.all(u <= 0)
    k_neg = sum(1 for s in scores if s < 0)
    k_nonpos = sum(1 for s in scores if s <= 0)
    zeros = set(np.flatnonzero(u == 0).tolist())
    assert zeros  # some k has utility 0
    assert zeros <= set(range(k_neg, k_nonpos + 1))


@settings(max_examples=100, deadline=None)
@given(st.lists(floats, min_size=1, max_size=30), st.data())
def test_count_utility_sensitivity_is_at_most_delta(scores: list[float],
                                                     data: st.DataObject) -> None:
    delta = 0.7
    a = np.array(scores)
    shift = np.array(data.draw(st.lists(st.floats(-delta, delta), min_size=len(scores),
                                        max_size=len(scores))))
    ua = count_utilities(a)
    ub = count_utilities(a + shift)
    assert float(np.max(np.abs(ua - ub))) <= delta + 1e-9


def _source(n: int = 400) -> StatisticSource:
    codes = (np.arange(3 * n).reshape(3, n) % np.array([[2], [3], [2]])).astype(np.uint8)
    return StatisticSource(codes, (2, 3, 2), "kendall-z")


def test_subsample_sensitivity_scales_as_sqrt_n_over_m() -> None:
    src = _source(400)
    for m in (4, 25, 100, 399):
        assert src.sensitivity(m) == pytest.approx(src.sensitivity() * math.sqrt(400 / m))
    sub = src.subset(np.arange(0, 400, 4))
    assert sub.n == 100
    assert sub.sensitivity() == pytest.approx(src.sensitivity(100))


def test_pvalue_score_is_lipschitz_in_abs_z() -> None:
    from scipy.special import erf

    z = np.linspace(0, 6, 20001)
    slope = np.max(np.abs(np.diff(erf(z / math.sqrt(2))) / np.diff(z)))
    assert slope <= P_LIPSCHITZ + 1e-9
    src = StatisticSource(_source().codes, (2, 3, 2), "kendall-p")
    assert src.sensitivity() == pytest.approx(P_LIPSCHITZ * _source().sensitivity())
    assert src.threshold(0, 1, ()) == pytest.approx(0.95)


def test_cmi_threshold_uses_declared_cardinalities() -> None:
    from scipy.stats import chi2

    src = StatisticSource(_source().codes, (2, 3, 2), "cmi")
    assert src.threshold(0, 1, (2,)) == pytest.approx(chi2.isf(0.05, 1 * 2 * 2) / 2)


@pytest.mark.parametrize(
    ("codes", "cards", "match"),
    [
        (np.zeros((2, 10), dtype=np.float64), (2, 2), "integer"),
        (np.full((2, 10), 3, dtype=np.uint8), (2, 2), "outside"),
        (np.zeros((2, 10), dtype=np.uint8), (2, None), "cardinalities"),
        (np.zeros((2, 10), dtype=np.uint8), (2,), "cardinalities"),
    ],
)
def test_source_rejects_bad_input(codes: np.ndarray, cards: tuple[int | None, ...],
                                  match: str) -> None:
    from dpcg.errors import CITestError

    with pytest.raises(CITestError, match=match):
        StatisticSource(codes, cards)


Margins = dict[tuple[int, int, tuple[int, ...]], float]
Sets = dict[tuple[int, int], tuple[tuple[int, ...], ...]]


class _Scores:
    """A stand-in for the statistic source: public margins per ``(x, y, S)``."""

    def __init__(self, margins: Margins) -> None:
        self.margins = margins

    def score(self, x: int, y: int, S: tuple[int, ...]) -> float:
        return self.margins[(x, y, tuple(S))]

    def threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        return 0.0

    def sensitivity(self, S: tuple[int, ...] | None = None) -> float:
        return 1.0

    def prefetch(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]) -> None:
        assert all((x, y, tuple(S)) in self.margins for x, y, S in queries)


def _strategy(margins: Margins, eps: float) -> tuple[Any, Session, InMemoryRecorder]:
    from dpcg.private.em_pc import EMPCStrategy, EMPlan

    plan = EMPlan("basic", 1, (eps, eps), 1.0)
    recorder = InMemoryRecorder(Budget(2 * eps, 0.0))
    session = Session(Budget(2 * eps, 0.0), rule="basic", recorder=recorder, seed=3)
    strategy = EMPCStrategy(plan, _Scores(margins), session)  # type: ignore[arg-type]
    return strategy, session, recorder


@pytest.mark.parametrize("n_dependent", [0, 1, 3, 7])
def test_level_with_one_set_per_pair_picks_the_pairs_to_keep(n_dependent: int) -> None:
    """When more than half of the pairs are deleted and each has one candidate set, the
    picks are the pairs to keep (one top-k release of ``N - k`` draws); with a huge
    budget they are exactly the pairs of positive margin, the others are deleted with
    their one set, and the level spends at most its budget."""
    from dpcg.pc.engine import LevelCandidates

    pairs = list(combinations(range(6), 2))            # N = 15
    margins: Margins = {(x, y, ()): (50.0 + i if i < n_dependent else -50.0 - i)
                        for i, (x, y) in enumerate(pairs)}
    strategy, session, recorder = _strategy(margins, 1e6)
    level0: Sets = {pr: ((),) for pr in pairs}
    cands = LevelCandidates(0, level0)
    removed = strategy.decide_level(0, cands)
    assert set(removed) == set(pairs[n_dependent:])
    assert all(S == () for S in removed.values())
    kinds = [e.mechanism for e in recorder.entries]
    assert kinds == (["exponential", "top-k"] if n_dependent else ["exponential"])
    if n_dependent:
        assert recorder.entries[1].params["k"] == n_dependent
    spent = session.spent().epsilon
    assert spent is not None
    assert spent <= Fraction(1e6)
    assert {(r.x, r.y) for r in cands.records} == set(pairs[n_dependent:])


def test_level_with_several_sets_or_few_deletions_picks_the_pairs_to_delete() -> None:
    """Fewer deletions than keeps, or a pair with two candidate sets: the deletions are
    drawn (one group-top-k release), each with the set of least margin."""
    from dpcg.pc.engine import LevelCandidates

    pairs = list(combinations(range(5), 2))            # N = 10
    few: Margins = {(x, y, ()): (-50.0 if i < 3 else 50.0) for i, (x, y) in enumerate(pairs)}
    strategy, _, recorder = _strategy(few, 1e6)
    level0: Sets = {pr: ((),) for pr in pairs}
    removed = strategy.decide_level(0, LevelCandidates(0, level0))
    assert set(removed) == set(pairs[:3])
    assert [e.mechanism for e in recorder.entries] == ["exponential", "group-top-k"]

    frozen: Sets = {pr: tuple((z,) for z in range(5) if z not in pr) for pr in pairs}
    many: Margins = {(x, y, S): (-50.0 - S[0] if i < 8 else 50.0)
                     for i, (x, y) in enumerate(pairs) for S in frozen[(x, y)]}
    strategy, _, recorder = _strategy(many, 1e6)
    removed = strategy.decide_level(1, LevelCandidates(1, frozen))
    assert set(removed) == set(pairs[:8])
    least = {pr: (max(z for z in range(5) if z not in pr),) for pr in removed}
    assert removed == least
    assert [e.mechanism for e in recorder.entries] == ["exponential", "group-top-k"]

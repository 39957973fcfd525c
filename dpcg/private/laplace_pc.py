"""Laplace-PC: CI decisions from noisy releases of the score, every release charged.

Default plan (``budget_split='levels'``, issue 20): each PC level gets a share of what
the filter has left when it starts (:func:`level_slots`). Level 0 (one test per pair)
screens with the threshold ``T + C sd`` (:func:`screen_multiplier`), or, on networks
large enough for it to halve level 0's noise, first keeps the top ``K`` pairs by one
:class:`~accounting.mechanisms.TopK` release and tests only those (:class:`Selection`).
Every later level releases, per open pair, one noisy minimum of ``score - T`` over its
conditioning sets and picks each removed pair's separating set with the exponential
mechanism (``release='pair'``, :class:`PairMinTest`); with ``release='test'`` each round
of the level shares what the level has left over the most tests the level can still ask
(from the released graph; :class:`LevelPlannedTest`).
With ``plan_size``/``test_epsilon`` or ``budget_split='run'`` the plan is fixed before
the run:

Fixed plan (public): ``K`` tests (default
:func:`dpcg.private.planning.default_plan_size`), and a composition rule chosen from
public information only (:func:`choose_rule`):

* ``basic``: each test is ``Laplace(Delta, eps/K)``; ``K`` tests fit exactly in ``eps``
  (:func:`accounting.costs.split_epsilon`).
* ``zcdp``: each test is ``Gaussian(Delta, sigma)`` with ``rho_test = rho(eps, delta)/K``
  and ``sigma = Delta / sqrt(2 rho_test)`` (rounded up so that ``K`` tests fit).

The decision: noisy score ``<= T`` means independent. The tester answers the engine's
rounds (:class:`~dpcg.pc.engine.BatchEdgeTester`: every open pair's next candidate set)
with one ``Session.release_many`` each, so the ledger writes a round in one transaction
before any of its scores is computed. The filter enforces the budget under full
adaptivity (the engine decides which tests come next from earlier noisy answers); when
it refuses, the engine returns the graph so far, flagged. Proof note:
``docs/privacy/algorithm-laplace-pc.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from accounting.costs import Budget, round_down, split_epsilon
from accounting.errors import BudgetExceededError, SessionHaltedError
from accounting.mechanisms import Exponential, Gaussian, Laplace
from accounting.planning import choose_rule as acc_choose_rule
from accounting.session import Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import PrivateCITest, ReleasePlan, StatisticSource
from dpcg.citests.registry import option
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import LevelCandidates, Pair, Sepset, hand_over, pair_test_count
from dpcg.private import planning
from dpcg.private.common import (
    DiscreteAlgorithm,
    PlanSizeParams,
    ScreenedPairs,
    check_number_field,
    check_screen_selection,
    exhaustion_note,
    plan_count,
    plan_level0_selection,
    ranked_sets,
    screen_selection_option,
    select_pairs,
    select_pairs_screened,
    unspent,
)
from dpcg.private.contract import RunSettings
from dpcg.private.planning import (
    LAPLACE_SCREEN_GAIN,
    SELECT_SHARE,
    default_plan_size,
    laplace_sd,
    n_pairs,
    planned_depth,
    screen_multiplier,
    screened_selection,
    unit_epsilon,
)
from dpcg.private.registry import register_algorithm


@dataclass(frozen=True)
class LaplacePCParams(PlanSizeParams):
    """Laplace-PC's options: the plan (``plan_size`` tests or ``test_epsilon`` per test)
    and the composition ``rule`` (default: chosen from public information)."""

    rule: str | None = option(
        None, type=str, help="composition rule: basic (Laplace) or zcdp (Gaussian); "
                             "default: chosen from public information")
    budget_split: str | None = option(
        None, type=str, metavar="HOW",
        help="'levels' (default without --plan-size/--test-epsilon): each PC level's "
             "share is fixed when it starts and shared by its rounds over the tests it "
             "can still ask (counted from the released graph), and level 0 screens with "
             "a raised threshold; 'run': one plan of K equal tests for the whole run")
    screen: float | None = option(
        None, type=float, metavar="C",
        help="with budget split 'levels': level 0 says independent when the noisy score "
             "is at most T + C noise sds (default: the public rule screen_multiplier(p))")

    select: float | None = option(
        None, type=float, metavar="KAPPA",
        help="with budget split 'levels': level 0 first keeps the top K = KAPPA p pairs "
             "by one top-K release (more while its noise stays small) and tests only "
             "those; 0: test every pair with the screen instead (default: 4, used where "
             "it cuts level 0's noise at least in half)")
    select_share: float | None = option(
        None, type=float, metavar="F",
        help="with a level-0 selection: the share of level 0's budget it gets; the rest "
             "tests the selected pairs (1: no level-0 test; default SELECT_SHARE)")
    screen_selection: int | None = screen_selection_option()
    release: str | None = option(
        None, type=str, metavar="WHAT",
        help="with budget split 'levels', what a level >= 1 releases: 'pair' (default): "
             "one noisy minimum over the pair's conditioning sets of score - T per open "
             "pair, then one selection of the separating set per removed pair; 'test': "
             "one noisy score per test, round by round")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rule is not None and self.rule not in ("basic", "zcdp"):
            raise AlgorithmError(f"rule: expected 'basic', 'zcdp' or None, got {self.rule!r}")
        if self.budget_split not in (None, "run", "levels"):
            raise AlgorithmError(f"budget_split: expected 'run' or 'levels', got "
                                 f"{self.budget_split!r}")
        if self.screen is not None:
            check_number_field("screen", self.screen, nonnegative=True)
            if self.split != "levels":
                raise AlgorithmError("screen: applies only with budget split 'levels'")
        if self.select is not None:
            check_number_field("select", self.select, nonnegative=True)
            if self.split != "levels":
                raise AlgorithmError("select: applies only with budget split 'levels'")
        check_screen_selection(self.screen_selection)
        if self.screen_selection is not None and self.split != "levels":
            raise AlgorithmError("screen_selection: applies only with budget split 'levels'")
        if self.select_share is not None:
            check_number_field("select_share", self.select_share, nonnegative=False)
            if not 0.0 < self.select_share <= 1.0:
                raise AlgorithmError("select_share: expected a number in (0, 1]")
            if self.split != "levels":
                raise AlgorithmError("select_share: applies only with budget split "
                                     "'levels'")
        if self.release is not None:
            if self.release not in ("pair", "test"):
                raise AlgorithmError(f"release: expected 'pair' or 'test', got "
                                     f"{self.release!r}")
            if self.split != "levels":
                raise AlgorithmError("release: applies only with budget split 'levels'")
        if self.budget_split == "levels" and (self.plan_size is not None
                                              or self.test_epsilon is not None):
            raise AlgorithmError("budget split 'levels' plans each level itself: give "
                                 "neither plan_size nor test_epsilon")

    @property
    def split(self) -> str:
        """The budget split used: as given, else ``run`` when a plan size or per-test
        epsilon is given and ``levels`` otherwise."""
        if self.budget_split is not None:
            return self.budget_split
        fixed = self.plan_size is not None or self.test_epsilon is not None
        return "run" if fixed else "levels"


@dataclass(frozen=True)
class LaplacePlan:
    """The public plan. ``per_level``: ``release`` is level 0's (``tests`` = its pairs),
    and each later level's is fixed when it starts (:class:`LevelPlannedTest`);
    ``depth`` is the deepest level provisioned for and ``screen`` level 0's threshold
    shift in noise sds."""

    rule: str
    tests: int
    release: ReleasePlan
    sensitivity: float
    max_depth: int | None
    per_level: bool = False
    depth: int = 0
    screen: float = 0.0
    selection: Selection | None = None
    pair_release: bool = False

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "plan_size": self.tests,
                               "sensitivity": self.sensitivity, **self.release.describe(),
                               "max_depth": self.max_depth}
        if self.per_level:
            out.update(budget_split="levels", horizon=self.depth, screen=self.screen,
                       release="pair" if self.pair_release else "test")
            if self.pair_release:
                out["sepset_share"] = float(SEPSET_SHARE)
            sel = self.selection
            out["select_k"] = 0 if sel is None else sel.k
            if sel is not None:
                out["select_epsilon"] = sel.epsilon
                out["select_test"] = None if sel.test is None else sel.test.describe()
                out.update(screened=sel.screened, screen_k=sel.screen_k,
                           screen_epsilon=sel.screen_epsilon)
        return out


@dataclass(frozen=True)
class Selection:
    """Level 0's public selection: one :class:`~accounting.mechanisms.TopK` release keeps
    ``k`` pairs (``epsilon`` per peeling step, on the utilities ``(s - T)/Delta_pair``,
    sensitivity 1), then each kept pair is tested with ``test`` (``None``: kept pairs are
    not tested at level 0). Pairs not kept count as independent given the empty set.

    ``screened``: a screened selection (``docs/privacy/algorithm-laplace-pc.md``): a
    first release keeps ``screen_k`` pairs at ``screen_epsilon`` per step (``0``: none),
    and ``k``/``epsilon`` are the second release's."""

    k: int
    epsilon: float
    test: ReleasePlan | None
    screened: bool = False
    screen_k: int = 0
    screen_epsilon: float = 0.0


#: With per-pair releases: the share of a level (>= 1) that selects the separating sets
#: of the pairs it removed (one exponential-mechanism selection each); the rest releases
#: one noisy minimum margin per open pair (public).
SEPSET_SHARE = Fraction(1, 4)

#: Levels the per-level plan provisions for when ``max_depth`` is not given (public):
#: see :func:`level_slots`.
LEVELS_PLANNED_DEPTH = 2


def noise_sd(mech: Laplace | Gaussian) -> float:
    """Standard deviation of a release's noise (``sqrt 2 Delta/eps`` or ``sigma``)."""
    if isinstance(mech, Laplace):
        return math.sqrt(2.0) * mech.scale
    return float(mech.sigma)


#: The smallest per-test share a level uses: noise sd up to about ``2^20`` sensitivities
#: (``eps >= 2^-20`` under ``basic``, ``rho >= 2^-41`` under ``zcdp``). A smaller share
#: cannot tell any score from its threshold, so the level counts as having nothing left.
MIN_LEVEL_EPSILON = 2.0 ** -20
MIN_LEVEL_RHO = 2.0 ** -41


def level_release(rule: str, share: Fraction) -> ReleasePlan | None:
    """The release of one test from a per-test ``share`` (``eps`` under ``basic``,
    ``rho`` under ``zcdp``), rounded down; ``None`` when nothing useful is left."""
    value = round_down(share) if share > 0 else 0.0
    if rule == "basic":
        return ReleasePlan("laplace", epsilon=value) if value >= MIN_LEVEL_EPSILON else None
    return ReleasePlan("gaussian", rho=value) if value >= MIN_LEVEL_RHO else None


def choose_rule(budget: Budget, tests: int, sensitivity: float) -> str:
    """Basic composition with Laplace, or zCDP with Gaussian: whichever gives the smaller
    per-test noise standard deviation for ``tests`` planned tests
    (:func:`accounting.planning.choose_rule`). Public information only (budget, plan
    size, sensitivity); decided before the run.
    """
    return str(acc_choose_rule(budget, max(int(tests), 1), sensitivity))


def gaussian_release(budget: Budget, tests: int) -> ReleasePlan:
    """Per-test rho ``rho(eps, delta)/K`` rounded down (``K`` of them fit exactly)."""
    rho = Fraction(budget.rho()) / tests
    return ReleasePlan("gaussian", rho=round_down(rho))


def make_plan(params: LaplacePCParams, settings: RunSettings,
              source: StatisticSource) -> LaplacePlan:
    budget = settings.budget()
    if params.rule == "zcdp" and budget.delta <= 0:
        raise AlgorithmError("rule: 'zcdp' needs delta > 0 to convert to (epsilon, delta)")
    if params.split == "levels":
        return _level_plan(params, settings, source)
    k = plan_count(params, settings, default_plan_size(source.p))
    sens = source.sensitivity()
    units = max(k, 1)
    rule = params.rule or choose_rule(budget, units, sens)
    if rule == "zcdp":
        if params.test_epsilon is not None:
            # one test's share given as epsilon: spend rho = test_epsilon^2 / 2 per test.
            release = ReleasePlan("gaussian", rho=params.test_epsilon ** 2 / 2.0)
        else:
            release = gaussian_release(budget, units)
    else:
        eps = params.test_epsilon if params.test_epsilon is not None else split_epsilon(
            budget.epsilon, units)
        release = ReleasePlan("laplace", epsilon=float(eps))
    return LaplacePlan(rule, k, release, sens, settings.max_depth)


def _level_plan(params: LaplacePCParams, settings: RunSettings,
                source: StatisticSource) -> LaplacePlan:
    """Level 0's release from public facts alone: ``pairs`` tests share ``1/(D+2)`` of
    the budget (:func:`level_slots`), the rule chosen for ``(D+1) pairs`` equal tests."""
    budget = settings.budget()
    pairs = n_pairs(source.p)
    depth = planned_depth(source.p, settings.max_depth, LEVELS_PLANNED_DEPTH)
    sens = source.sensitivity()
    rule = params.rule or choose_rule(budget, pairs * (depth + 1), sens)
    total = Fraction(budget.epsilon_exact) if rule == "basic" else Fraction(budget.rho())
    release = level_release(rule, total / (pairs * level_slots(0, depth)))
    if release is None:  # nothing is admitted: an error before the run
        raise AlgorithmError(
            "epsilon: too small for laplace-pc's level 0 (one test per pair with noise sd "
            "below 2^20 sensitivities); give a larger budget or --budget-split run")
    screen = screen_multiplier(source.p) if params.screen is None else float(params.screen)
    selection = _selection(params, rule, total / level_slots(0, depth), pairs, source)
    if selection is not None:
        screen = 0.0
    return LaplacePlan(rule, pairs, release, sens, settings.max_depth, per_level=True,
                       depth=depth, screen=screen, selection=selection,
                       pair_release=params.release != "test")


def _selection(params: LaplacePCParams, rule: str, level0: Fraction, pairs: int,
               source: StatisticSource) -> Selection | None:
    """Level 0's selection (:func:`dpcg.private.planning.level0_selection`) with the
    kept pairs' test release, or ``None`` (then every pair is tested with the screen)."""
    share = Fraction(SELECT_SHARE if params.select_share is None else params.select_share)
    got = plan_level0_selection(rule, level0, source, params.select, share)
    screened = params.screen_selection == 1
    if got is None and params.select is None and params.screen_selection != 0:
        # below the single selection's size: a screened one where a selection is no
        # noisier than testing every pair (LAPLACE_SCREEN_GAIN)
        got = plan_level0_selection(rule, level0, source, None, share,
                                    gain=LAPLACE_SCREEN_GAIN)
        screened = got is not None
    if got is None:
        return None
    k, eps = got
    # the kept pairs' tests have the budget of a plan of k tests (a screened selection
    # keeps fewer; what they do not use carries over)
    test = None if share >= 1 else level_release(rule, level0 * (1 - share) / k)
    if share < 1 and test is None:
        raise AlgorithmError(
            "epsilon: too small for laplace-pc's level-0 selection; give a larger budget "
            "or --select 0")
    if screened:
        sel = screened_selection(rule, level0 * share, k, pairs)
        return Selection(sel.k, sel.epsilon, test, screened=True, screen_k=sel.first_k,
                         screen_epsilon=sel.first_epsilon)
    return Selection(k, eps, test)


def level_slots(level: int, depth: int) -> int:
    """Level ``l`` gets ``1/level_slots`` of what is left: ``D - l + 2`` up to the
    planned depth ``D`` (the levels still to come plus one reserve), 2 past it, so
    every level has something and deeper levels get geometrically less (public)."""
    return depth - level + 2 if level <= depth else 2


class LevelPlannedTest(PrivateCITest, ScreenedPairs):
    """Laplace-PC's tester with ``budget_split='levels'``.

    When a level starts it gets ``1/level_slots(l, D)`` of what the filter has left
    (:func:`level_slots`). Each round of the level (one candidate set per open pair, chosen
    together) shares what the level has left over the most tests the level can still
    ask: for every open pair, its candidate sets not yet asked (counted from the frozen
    adjacency, :func:`dpcg.pc.engine.pair_test_count`). A pair found independent asks no
    more, so later rounds get more per test, and a level can never run out. All of it
    is computed from public facts and released answers. At level 0 the threshold is
    ``T + C sd`` (the screen)."""

    def __init__(self, plan: LaplacePlan, source: StatisticSource, session: Session) -> None:
        super().__init__(source, session, plan.release)
        self.lplan = plan
        self.level = 0
        self.levels: list[dict[str, Any]] = []
        self.exhaustion_note: str | None = None
        self._left: dict[tuple[int, int], int] = {}  # open pair -> candidate sets not asked
        self._level_left = Fraction(0)  # the level's budget not yet given to a round
        self._screened = set()  # ScreenedPairs

    def _remaining(self) -> Fraction:
        rem = self.session.remaining()
        total = rem.epsilon if self.lplan.rule == "basic" else rem.rho
        assert total is not None
        return Fraction(total)

    def level_slots(self, level: int) -> int:
        """Level ``level`` gets ``1/level_slots`` of what is left when it starts
        (:func:`level_slots` with the plan's horizon; a subclass may plan otherwise, from
        public facts only)."""
        return level_slots(level, self.lplan.depth)

    def _stop(self, why: str) -> BudgetExceededError:
        self.exhaustion_note = exhaustion_note(self.level, why)
        return BudgetExceededError(f"laplace-pc: {why}")

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[tuple[int, int]]) -> None:
        self.level = level
        self._left = {(x, y): pair_test_count(level, adjacency, x, y) for x, y in pairs}
        tests = sum(self._left.values())
        self._level_left = self._remaining() / self.level_slots(level)
        self.levels.append({"level": level, "pairs": len(pairs), "tests_bound": tests,
                            "share": float(self._level_left), "tests": 0, "rounds": 0})

    def test_many(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]
                  ) -> list[CIResult]:
        if self.level == 0 and self.lplan.selection is not None:
            return self._select(queries, self.lplan.selection)
        bound = max(sum(self._left.values()), len(queries), 1)
        if self.level == 0:
            release: ReleasePlan | None = self.lplan.release
        else:
            release = level_release(self.lplan.rule,
                                    min(self._level_left, self._remaining()) / bound)
        if release is None:
            raise self._stop(f"the budget is used up: nothing useful is left for level "
                             f"{self.level}")
        if release != self.plan:
            self.plan = release
            self._mechs.clear()
        out = super().test_many(queries)
        value = release.epsilon if release.kind == "laplace" else release.rho
        assert value is not None
        unit = Fraction(value)
        self._level_left = max(self._level_left - unit * len(out), Fraction(0))
        for (x, y, _), res in zip(queries, out, strict=False):
            key = (min(x, y), max(x, y))
            n = self._left.get(key, 0) - 1
            if res.independent or n <= 0:
                self._left.pop(key, None)
            else:
                self._left[key] = n
        rec = self.levels[-1]
        rec["tests"] += len(out)
        rec["rounds"] += 1
        return out

    def _select(self, queries: Sequence[tuple[int, int, tuple[int, ...]]],
                sel: Selection) -> list[CIResult]:
        """Level 0 with a selection: one top-K release over the round's pairs, then (with
        a test share) one test of each kept pair; the others count as independent."""
        src = self.source
        valid = [validate_query(x, y, S, src.p) for x, y, S in queries]
        pairs = [(x, y) for x, y, _ in valid]
        if sel.screened:
            chosen, self._screened = select_pairs_screened(
                src, self.session, sel.screen_k, sel.screen_epsilon, sel.k, sel.epsilon,
                "laplace-pc", pairs=pairs)
        else:
            chosen = select_pairs(src, self.session, sel.k, sel.epsilon, "laplace-pc",
                                  pairs=pairs)
        kept = [i for i, (x, y, _) in enumerate(valid) if (x, y) in chosen]
        out = [CIResult(True, None, None) for _ in valid]
        rec = self.levels[-1]
        rec.update(selected=len(kept), rounds=1)
        if sel.screened:
            rec["screened_out"] = len(self._screened)
        if sel.test is None:
            for i in kept:
                out[i] = CIResult(False, None, None)
        else:
            if sel.test != self.plan:
                self.plan = sel.test
                self._mechs.clear()
            tested = super().test_many([valid[i] for i in kept])
            if len(tested) < len(kept):
                raise self._stop("the budget is used up in level 0's tests")
            for i, res in zip(kept, tested, strict=False):
                out[i] = res
            rec["tests"] = len(tested)
        self._left.clear()
        return out

    def decision_threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        t = self.source.threshold(x, y, S)
        if self.level == 0 and self.lplan.screen > 0.0:
            t += self.lplan.screen * noise_sd(self.mechanism(x, y, S))
        return t


class PairMinTest(LevelPlannedTest):
    """Laplace-PC's tester with per-pair releases (``release='pair'``, the default of the
    per-level plan): a level strategy (:class:`dpcg.pc.engine.LevelStrategy`).

    Level 0 is :class:`LevelPlannedTest`'s (one test per pair, or the selection). At a
    level ``l >= 1`` with ``L`` the level's share (:func:`level_slots`) and ``P`` open pairs
    that have a candidate set: every pair releases, in one batch,
    ``min_S (s(x, y | S) - T(x, y, S)) + noise`` over its candidate sets (frozen
    adjacency, public) with ``(1 - SEPSET_SHARE) L / P`` each; its sensitivity is the
    pair's bound (a minimum of functions each within ``Delta(x, y)`` moves by at most
    ``Delta(x, y)``). A pair whose noisy minimum is ``<= 0`` is removed. Then each removed
    pair with more than one candidate set picks its separating set by one
    exponential-mechanism release on the utilities ``T - s`` (sensitivity
    ``Delta(x, y)``: the set that separates best, like PC-Max's largest p-value), sharing
    what the level has left. One noisy answer per pair replaces
    one per candidate set: the noise is that of ``P`` releases instead of every test the
    level asks, and a dependent pair is no longer removed by the one noisy test of many
    that falls below ``T``. Proof note: ``docs/privacy/algorithm-laplace-pc.md``."""

    def __init__(self, plan: LaplacePlan, source: StatisticSource, session: Session) -> None:
        super().__init__(plan, source, session)
        self._strength: dict[Pair, float] = {}  # released level-0 scores

    def decide_level(self, level: int, candidates: LevelCandidates) -> dict[Pair, Sepset]:
        pairs = [pair for pair in candidates if candidates[pair]]
        self.level = level
        self._left = {pair: len(candidates[pair]) for pair in pairs}
        self._level_left = self._remaining() / self.level_slots(level)
        rec: dict[str, Any] = {
            "level": level, "pairs": len(pairs), "tests_bound": sum(self._left.values()),
            "share": float(self._level_left), "tests": 0, "rounds": 0}
        self.levels.append(rec)
        if not pairs:
            return {}
        if level == 0:
            return self._level_zero(pairs, candidates)
        sets = {pair: ranked_sets(level, pair, candidates, self._strength) for pair in pairs}
        rec["sets"] = sum(len(v) for v in sets.values())
        unit = min(self._level_left, self._remaining()) * (1 - SEPSET_SHARE) / len(pairs)
        release = level_release(self.lplan.rule, unit)
        if release is None:
            raise self._stop(f"the budget is used up: nothing useful is left for level "
                             f"{level}")
        if release != self.plan:
            self.plan = release
            self._mechs.clear()
        src = self.source
        queries = [(x, y, S) for x, y in pairs for S in sets[(x, y)]]
        pending = [True]

        def margin(x: int, y: int) -> float:
            if pending[0]:  # after the whole batch was admitted and recorded
                src.prefetch(queries)
                pending[0] = False
            return min(src.score(x, y, S) - src.threshold(x, y, S) for S in sets[(x, y)])

        outputs = self.session.release_many([
            (self.mechanism(x, y), partial(margin, x, y),
             f"min over {len(sets[(x, y)])} level-{level} sets of score - T, {x} _||_ {y}")
            for x, y in pairs])
        self.releases += len(outputs)
        value = release.epsilon if release.kind == "laplace" else release.rho
        assert value is not None
        self._level_left = max(self._level_left - Fraction(value) * len(outputs), Fraction(0))
        rec.update(tests=len(outputs), rounds=1)
        if len(outputs) < len(pairs):
            raise self._stop(f"the budget is used up in level {level}'s releases")
        removed = [(pair, float(np.asarray(out))) for pair, out in zip(pairs, outputs,
                                                                        strict=True)
                   if float(np.asarray(out)) <= self.removal_cut(*pair)]
        return self._sepsets(level, removed, sets, candidates, rec)

    def removal_cut(self, x: int, y: int) -> float:
        """A pair is removed when its noisy minimum is at most this (public): 0, the
        threshold itself (Hub-PC may ask for a margin in units of the release's noise)."""
        return 0.0

    def _level_zero(self, pairs: list[Pair], candidates: LevelCandidates
                    ) -> dict[Pair, Sepset]:
        """Level 0: :class:`LevelPlannedTest`'s one round (every pair's test given the
        empty set, or the selection and the kept pairs' tests); the released scores
        become the neighbours' strengths of :func:`ranked_sets`."""
        queries = [(x, y, ()) for x, y in pairs]
        out = self.test_many(queries)
        removals: dict[Pair, Sepset] = {}
        for (x, y, S), res in zip(queries, out, strict=False):
            candidates.record(x, y, S, res)
            if res.statistic is not None:
                self._strength[(x, y)] = float(res.statistic)
            if res.independent:
                removals[(x, y)] = S
        if len(out) < len(queries):
            raise hand_over(self._stop("the budget is used up in level 0's tests"), removals)
        return removals

    def _sepsets(self, level: int, removed: list[tuple[Pair, float]],
                 sets_of: dict[Pair, tuple[Sepset, ...]], candidates: LevelCandidates,
                 rec: dict[str, Any]) -> dict[Pair, Sepset]:
        """One exponential-mechanism pick of the separating set per removed pair with
        several candidate sets (utilities ``T - s``, sensitivity the pair's bound: the
        set that separates best, as PC-Max picks the largest p-value), sharing what the
        level has left equally (the pairs are known from the released minima)."""
        src = self.source
        many = [pair for pair, _ in removed if len(sets_of[pair]) > 1]
        share = min(self._level_left, self._remaining())
        each = share / len(many) if many else Fraction(0)
        # pure eps costs eps (basic) or eps^2/8 (zcdp, bounded range): unit_epsilon gives
        # e with e^2/2 <= 4 * each, i.e. e^2/8 <= each
        eps = unit_epsilon(each if self.lplan.rule == "basic" else 4 * each, self.lplan.rule)
        if many and eps <= 0.0:
            raise self._stop(f"the budget is used up before level {level}'s separating sets")
        removals: dict[Pair, Sepset] = {}
        picks = 0
        for (x, y), noisy in removed:
            sets = sets_of[(x, y)]
            if len(sets) == 1:
                S = sets[0]
            else:
                def utilities(x: int = x, y: int = y, sets: tuple[Sepset, ...] = sets
                              ) -> np.ndarray:
                    return np.array([src.threshold(x, y, S) - src.score(x, y, S)
                                     for S in sets], dtype=np.float64)
                try:
                    idx = int(self.session.release(
                        Exponential(src.sensitivity(pair=(x, y)), eps), utilities,
                        purpose=f"level-{level} separating set of {x} _||_ {y}"))
                except (BudgetExceededError, SessionHaltedError) as exc:
                    hand_over(exc, removals)
                    raise
                S = sets[idx]
                picks += 1
            removals[(x, y)] = S
            candidates.record(x, y, S, CIResult(True, noisy, None))
        self.releases += picks
        rec["sepset_picks"] = picks
        return removals


class LaplacePC(DiscreteAlgorithm[LaplacePCParams, LaplacePlan, PrivateCITest]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``laplace-pc``."""

    name = "laplace-pc"
    description = ("PC with every test a Laplace (basic) or Gaussian (zCDP) release of the "
                   "score; budget shared per level and round over the tests each can ask "
                   "(or over a fixed public plan of K tests)")
    params = LaplacePCParams
    proof_note = "docs/privacy/algorithm-laplace-pc.md"
    reproduces_pc = True  # per pair, the smallest score - T decides (as PC-Max)

    def plan(self, params: LaplacePCParams, settings: RunSettings,
             source: StatisticSource) -> LaplacePlan:
        return make_plan(params, settings, source)

    def tester(self, plan: LaplacePlan, source: StatisticSource,
               session: Session) -> PrivateCITest:
        tester: PrivateCITest
        if plan.per_level:
            tester = (PairMinTest(plan, source, session) if plan.pair_release
                      else LevelPlannedTest(plan, source, session))
        else:
            tester = PrivateCITest(source, session, plan.release)
        # level 0's tests may use the bound of a test given the empty set (public switch)
        tester.empty_set_bound = planning.LEVEL0_EMPTY_SET_BOUND
        return tester

    def usage(self, tester: PrivateCITest) -> dict[str, object]:
        if isinstance(tester, LevelPlannedTest):
            return {"used_releases": tester.releases, "used_levels": tester.levels,
                    "used_unspent": unspent(tester.session)}
        return {"used_releases": tester.releases}


def expected_noise_sd(plan: LaplacePlan) -> float:
    """Standard deviation of one test's noise (for docs and benchmarks)."""
    r = plan.release
    if r.kind == "laplace":
        assert r.epsilon is not None
        return laplace_sd(plan.sensitivity, r.epsilon)
    assert r.rho is not None
    return plan.sensitivity / math.sqrt(2.0 * r.rho)


ALGORITHM = register_algorithm(LaplacePC())

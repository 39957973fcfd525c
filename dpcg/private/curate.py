"""CURATE (Bhattacharjee & Tandon): adaptive per-order budgets, corrected.

At the first test of order ``i`` the strategy re-plans with SLSQP
(:func:`dpcg.private.planning.curate_plan`) from public quantities only: the remaining
zCDP budget, the current edge count ``e_i`` (a post-processed output of the earlier
noisy tests) and public test bounds ``t_j`` from the released graph's degrees
(:func:`dpcg.private.planning.degree_tests_bound`, never above the published
``e_i C(p-2, j)``). Orders beyond a public horizon (``i + 3``) are re-planned when they
are reached. From about 20 nodes (:data:`~dpcg.private.planning.CURATE_SELECT_GAIN`)
order 0 first keeps the top ``K`` pairs by one
:class:`~accounting.mechanisms.TopK` release (the rule shared with Laplace-PC,
:func:`dpcg.private.planning.level0_selection`) and tests only those.

Each test of order ``i`` releases the score with ``Laplace(Delta, eps_i)``; EVERY test is
charged (``rho = eps_i^2 / 2`` under the zCDP filter, which enforces the adaptively
chosen budgets under full adaptivity). Decision on the ``|z|`` scale (CURATE's rule
mirrored, since here a large score means dependence):

* noisy score ``< T (1 - beta1)``: independent (edge deleted);
* noisy score ``> T (1 + beta2)``: dependent (edge kept);
* in between: a fair coin, drawn by accounting as ``Exponential`` over two options with
  equal utility (no data touched; its tiny declared cost is charged and planned for).
  The coin is never reseeded: it comes from the session's generator.

Each test's Laplace uses the pair's registered bound ``Delta(x, y)`` (cardinality-aware
for the Kendall scores; the cost ``eps`` does not depend on it); the planner uses the
source-level bound, which is at least every pair's. Proof note:
``docs/privacy/algorithm-curate.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import comb

from accounting.costs import Budget
from accounting.errors import BudgetExceededError, InvalidParameterError, NoiseRangeError
from accounting.mechanisms import Exponential, Laplace
from accounting.session import Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.errors import AlgorithmError
from dpcg.private.common import (
    AnnouncesLevels,
    DiscreteAlgorithm,
    check_number_field,
    exhaustion_note,
    plan_level0_selection,
    select_pairs,
)
from dpcg.private.contract import RunSettings
from dpcg.private.planning import (
    CURATE_SELECT_GAIN,
    SELECT_SHARE,
    CuratePlan,
    check_positive,
    curate_plan,
    curate_tests_bound,
    degree_tests_bound,
)
from dpcg.private.registry import register_algorithm

DEFAULT_BETA1 = 0.1
DEFAULT_BETA2 = 0.1


@dataclass(frozen=True)
class CurateParams:
    """CURATE's options: the widths of the coin band around the threshold (public)."""

    beta1: float = option(DEFAULT_BETA1, type=float, metavar="B",
                          help="independent when the noisy score < T (1 - beta1); "
                               f"0 <= beta1 < 1 (default {DEFAULT_BETA1})")
    beta2: float = option(DEFAULT_BETA2, type=float, metavar="B",
                          help="dependent when the noisy score > T (1 + beta2); "
                               f"beta2 >= 0 (default {DEFAULT_BETA2})")

    select: float | None = option(
        None, type=float, metavar="KAPPA",
        help="order 0 first keeps the top K = KAPPA p pairs by one top-K release and "
             "tests only those; 0: every pair (default: 4, used where it is no noisier "
             "than testing every pair)")

    def __post_init__(self) -> None:
        check_number_field("beta1", self.beta1, nonnegative=True)
        if self.select is not None:
            check_number_field("select", self.select, nonnegative=True)
        check_number_field("beta2", self.beta2, nonnegative=True)
        if self.beta1 >= 1:
            raise AlgorithmError(f"beta1: must be < 1, got {self.beta1}")
#: Orders planned ahead at each re-plan (public).
HORIZON = 3
#: Budget of one coin (pure eps; zCDP ``eps^2/8``): negligible and reserved in the plan.
COIN_EPSILON = 1e-9
#: Share of rho kept back for coins (coins are cheaper than 1e-17 rho each).
COIN_RESERVE = 1e-6
#: Order 0's share of rho when it starts with a selection (public; Laplace-PC's level-0
#: share with its planned depth 2): the selection gets ``SELECT_SHARE`` of it.
SELECT_LEVEL0 = Fraction(1, 4)


@dataclass(frozen=True)
class CurateSettings:
    rule: str
    p: int
    beta1: float
    beta2: float
    sensitivity: float
    rho_total: float
    max_depth: int | None
    select_k: int = 0
    select_epsilon: float = 0.0

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "beta1": self.beta1, "beta2": self.beta2,
                "sensitivity": self.sensitivity, "rho_total": self.rho_total,
                "horizon": HORIZON, "coin_epsilon": COIN_EPSILON,
                "max_depth": self.max_depth, "select_k": self.select_k,
                "select_epsilon": self.select_epsilon}


def make_plan(params: CurateParams, settings: RunSettings,
              source: StatisticSource) -> CurateSettings:
    budget: Budget = settings.budget()
    if budget.delta <= 0:
        raise AlgorithmError("delta: CURATE runs under the zCDP filter and needs delta > 0")
    b1 = float(params.beta1)
    b2 = float(params.beta2)
    level0 = Fraction(budget.rho()) * SELECT_LEVEL0
    got = plan_level0_selection("zcdp", level0, source, params.select,
                                gain=CURATE_SELECT_GAIN)
    k, eps = (0, 0.0) if got is None else got
    rho_total = float(budget.rho())
    preflight_order0(rho_total, float(level0 * Fraction(SELECT_SHARE)) if k else 0.0,
                     k, source.p, settings.max_depth, budget.epsilon)
    return CurateSettings("zcdp", source.p, b1, b2, source.sensitivity(),
                          rho_total, settings.max_depth, k, eps)


def preflight_order0(rho_total: float, rho_selection: float, k: int, p: int,
                     max_depth: int | None, epsilon: float) -> None:
    """Refuse, before the run is reserved, a budget whose order-0 tests could not be
    drawn (public facts only). Order 0's plan spends at least ``rho_total -
    rho_selection`` (the selection's share; less the coin reserve) over at most ``t =
    sum_j e C(p - 2, j)`` planned tests (``e``: ``k`` kept pairs, or every pair), and
    :func:`~dpcg.private.planning.curate_plan` spends it all with a non-increasing
    allocation, so its per-test epsilon is at least ``sqrt(2 rho / t)`` (less a relative
    ``1e-6`` for rounding). A later order whose epsilon cannot be drawn stops the run as
    an exhausted plan does (:meth:`CurateTester._stop`)."""
    pairs = p * (p - 1) // 2
    if pairs == 0:
        return
    rho0 = (rho_total - rho_selection) * (1.0 - COIN_RESERVE)
    last = p - 2 if max_depth is None else min(p - 2, max_depth)
    last = max(0, min(last, HORIZON))
    edges = k if k > 0 else pairs
    t = sum(max(1, curate_tests_bound(edges, p, j)) for j in range(last + 1))
    eps0 = math.sqrt(2.0 * max(rho0, 0.0) / t) * (1.0 - 1e-6)
    if not eps0 > 0:
        raise InvalidParameterError("epsilon", epsilon,
                                    "too small for CURATE: its zCDP budget rounds to 0")
    try:
        Laplace(1.0, eps0)  # the sampler's limit depends on epsilon only
    except NoiseRangeError:
        raise InvalidParameterError(
            "epsilon", epsilon, f"too small for CURATE: order 0's per-test epsilon "
            f"(at least {eps0:.3g}) is below what the Laplace sampler can draw") from None


class CurateTester(AnnouncesLevels):
    """Edge tester with per-order budgets re-planned at the start of every order (it
    announces an order's tests to its source when it enters the order:
    :class:`AnnouncesLevels`)."""

    def __init__(self, plan: CurateSettings, source: StatisticSource,
                 session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.order = -1
        self.current: CuratePlan | None = None
        self.removed: set[tuple[int, int]] = set()
        self.history: list[dict[str, Any]] = []
        self.coins = 0
        #: order 0's kept pairs (``None``: no selection, or not made yet)
        self._kept: set[tuple[int, int]] | None = None
        #: what a run stopped by its plan returns, in words (the result's message)
        self.exhaustion_note: str | None = None

    def _stop(self, why: str) -> BudgetExceededError:
        self.exhaustion_note = exhaustion_note(self.order, why)
        return BudgetExceededError(f"curate: {why}")

    def _remaining_rho(self) -> float:
        rem = self.session.remaining()
        rho = rem.rho if rem.rho is not None else Fraction(0)
        return float(rho) * (1.0 - COIN_RESERVE)

    def _replan(self, order: int) -> None:
        p = self.plan.p
        if order == 0 and self.plan.select_k > 0 and self._kept is None:
            self._kept = select_pairs(self.source, self.session, self.plan.select_k,
                                      self.plan.select_epsilon, "curate",
                                      empty_set_bound=False)  # the pair's bound (planning)
            self.removed |= {(x, y) for x in range(p) for y in range(x + 1, p)
                             if (x, y) not in self._kept}
        open_pairs = [(x, y) for x in range(p) for y in range(x + 1, p)
                      if (x, y) not in self.removed]
        edges = len(open_pairs)
        degrees = [0] * p
        for x, y in open_pairs:
            degrees[x] += 1
            degrees[y] += 1
        last = p - 2 if self.plan.max_depth is None else min(p - 2, self.plan.max_depth)
        last = max(order, min(last, order + HORIZON))
        bounds = [edges if j == 0 else degree_tests_bound(degrees, open_pairs, j)
                  for j in range(order, last + 1)]
        T = self.source.threshold(0, 1, ()) if p >= 2 else 1.0
        self.current = curate_plan(
            rho_remaining=self._remaining_rho(), edges=edges, p=p, order=order,
            max_order=last, threshold=T, sensitivity=self.plan.sensitivity,
            beta1=self.plan.beta1, beta2=self.plan.beta2, bounds=bounds,
        )
        self.order = order
        self.history.append({"order": order, "edges": edges,
                             "epsilons": list(self.current.epsilons)})

    def _coin(self) -> bool:
        self.coins += 1
        idx = int(self.session.release(
            Exponential(1.0, COIN_EPSILON), lambda: np.zeros(2),
            purpose="curate coin (equal utilities; data not used)",
        ))
        return idx == 1

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:

        x, y, S = validate_query(x, y, S, self.source.p)
        if len(S) != self.order or self.current is None:
            self._replan(len(S))
            self._announce(len(S), self._kept)
        if not S and self._kept is not None and (min(x, y), max(x, y)) not in self._kept:
            return CIResult(True, None, None)  # not kept by order 0's selection
        assert self.current is not None
        eps = self.current.epsilon
        if not (eps > 0 and math.isfinite(eps)):
            # The plan has nothing left for this order: stop (graph so far), charge nothing.
            raise self._stop(f"no budget left for order {len(S)}")
        src = self.source
        try:
            mech = Laplace(src.sensitivity(pair=(x, y)), eps)
        except NoiseRangeError:
            # the order's per-test epsilon is below what the sampler can draw: stop as
            # when the plan is used up (nothing of this test is admitted or charged)
            raise self._stop(f"order {len(S)}'s per-test epsilon is too small for the "
                             f"Laplace sampler") from None
        T = src.threshold(x, y, S)
        noisy = float(np.asarray(self.session.release(
            mech, lambda: src.score(x, y, S),
            purpose=f"curate order {len(S)}: {x} _||_ {y} | {list(S)}",
        )))
        lo = T * (1.0 - self.plan.beta1)
        hi = T * (1.0 + self.plan.beta2)
        if noisy < lo:
            indep = True
        elif noisy > hi:
            indep = False
        else:
            indep = self._coin()
        if indep:
            self.removed.add((min(x, y), max(x, y)))
        return CIResult(indep, noisy, None)


class Curate(DiscreteAlgorithm[CurateParams, CurateSettings, CurateTester]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``curate``."""

    name = "curate"
    description = "CURATE: adaptive per-order budgets (SLSQP) under the zCDP filter"
    params = CurateParams
    proof_note = "docs/privacy/algorithm-curate.md"

    def plan(self, params: CurateParams, settings: RunSettings,
             source: StatisticSource) -> CurateSettings:
        return make_plan(params, settings, source)

    def tester(self, plan: CurateSettings, source: StatisticSource,
               session: Session) -> CurateTester:
        return CurateTester(plan, source, session)

    def usage(self, tester: CurateTester) -> dict[str, object]:
        out: dict[str, object] = {"used_coins": tester.coins}
        if tester.history:
            out["orders"] = tester.history
        return out


def tests_bound(p: int, edges: int, order: int) -> int:
    return int(edges) * int(comb(p - 2, order, exact=True))


__all__ = ["ALGORITHM", "Curate", "CurateParams", "CurateSettings", "CurateTester",
           "check_positive", "make_plan", "tests_bound"]

ALGORITHM = register_algorithm(Curate())

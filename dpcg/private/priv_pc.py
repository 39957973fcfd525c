"""Priv-PC (Wang, Pang, Song 2020): sieve-and-examine over the PC engine.

A *round* is one sieve followed by one examine:

* **sieve**: ``SubsampledSparseVector(n, m, threshold=0, Delta_m, eps_base)`` (cutoff 1).
  The primitive draws a fresh subsample of ``m`` rows without replacement and a fresh
  noisy threshold when the round starts. Each test asks the query
  ``q = (T + t) - s_m(x, y | S)`` on the subsample: positive = noisy subsample score
  below the loosened threshold ``T + t`` (an independence candidate; see
  :mod:`dpcg.private.svt_pc` for why independence is the positive). ``Delta_m`` is the
  score's registered sensitivity at ``m`` rows; for the floored conditional Kendall z
  (normaliser ``sqrt(9m/4)``) it equals ``Delta_n sqrt(n/m)``.
* **examine**: on a sieve positive, ``Laplace(Delta_n(x, y), eps/2)`` on the full data
  against the untweaked ``T``: noisy score ``<= T`` means independent (edge removed).

Per-pair bounds: ``Delta_m`` and ``Delta_n`` are the source-level bounds (valid for every
pair); the pair's own bound ``Delta_m(x, y) <= Delta_m`` depends only on the declared
cardinalities. The sieve query is multiplied by ``Delta_m / Delta_m(x, y)`` (public), so
its sensitivity is ``Delta_m``; the examine uses ``Delta_n(x, y)`` directly (same cost).

After EVERY sieve positive the round ends; the next test starts a new round (fresh
subsample and threshold). The next round's sieve is admitted and started in the same
``Session.release_many`` batch as the examine (one ledger transaction) when a whole
further round fits after it; it stays charged, unused, if no test follows.

Costs: the sieve's ``eps_base`` is chosen so that its amplified cost
``ln(1 + (m/n)(e^{eps_base} - 1))`` is at most ``eps/2`` (Balle-Barthe-Gaboardi 2018,
sampling without replacement, replace-one); the examine costs ``eps/2``. A round is
admitted only if both halves fit; the plan has ``R`` rounds of ``eps = eps_total / R``.
Subsample rate ``m/n = (e^{eps/2} - 1)/3.9216`` clipped to ``[1/20, 1]``.
Proof note: ``docs/privacy/algorithm-priv-pc.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from accounting.costs import Cost, split_epsilon
from accounting.errors import BudgetExceededError
from accounting.mechanisms import Laplace, SparseVectorRun, SubsampledSparseVector
from accounting.relations import Relation
from accounting.session import ReleaseRequest, Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.private.common import (
    DiscreteAlgorithm,
    PlanSizeParams,
    check_count_field,
    check_number_field,
    plan_count,
)
from dpcg.private.contract import RunSettings
from dpcg.private.planning import (
    SIEVE_EPSILON_CAP,
    amplified_base_epsilon,
    default_rounds,
    subsample_size,
)
from dpcg.private.registry import register_algorithm

#: Default threshold tweak ``t`` of the sieve (score scale), fixed before any benchmark.
DEFAULT_TWEAK = 0.5


@dataclass(frozen=True)
class PrivPCParams(PlanSizeParams):
    """Priv-PC's options: the plan (``plan_size`` rounds or ``test_epsilon`` per round),
    the sieve's threshold ``tweak`` and its subsample size ``m``."""

    tweak: float = option(DEFAULT_TWEAK, type=float, metavar="T",
                          help=f"threshold tweak t of the sieve on the score scale "
                               f"(default {DEFAULT_TWEAK})")
    m: int | None = option(None, type=int, flag="--subsample-rows", metavar="M",
                           help="rows m of the sieve's subsample (default from the "
                                "round's epsilon)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number_field("tweak", self.tweak, nonnegative=True)
        if self.m is not None:
            check_count_field("m", self.m)


@dataclass(frozen=True)
class PrivPCPlan:
    rule: str
    rounds: int
    epsilon_round: float
    epsilon_half: float
    epsilon_base: float
    n: int
    m: int
    tweak: float
    sensitivity_full: float
    sensitivity_sub: float
    max_depth: int | None

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "plan_size": self.rounds,
                "epsilon_per_round": self.epsilon_round,
                "epsilon_sieve_amplified": self.epsilon_half,
                "epsilon_examine": self.epsilon_half,
                "epsilon_sieve_base": self.epsilon_base, "n": self.n, "m": self.m,
                "subsample_rate": self.m / self.n, "tweak": self.tweak,
                "sensitivity_full": self.sensitivity_full,
                "sensitivity_subsample": self.sensitivity_sub, "positive": "independent",
                "max_depth": self.max_depth}


def _sieve(n: int, m: int, eps_base: float, sens_m: float) -> SubsampledSparseVector:
    return SubsampledSparseVector(n=n, m=m, threshold=0.0, sensitivity=sens_m,
                                  epsilon=eps_base)


def fit_base_epsilon(n: int, m: int, eps_half: float, sens_m: float) -> float:
    """The largest ``eps_base`` (found by stepping down from the closed form) whose
    declared amplified cost, as the primitive computes it, is at most ``eps_half``."""
    eps = amplified_base_epsilon(n, m, eps_half)
    target = Fraction(eps_half)
    for _ in range(64):
        cost = _sieve(n, m, eps, sens_m).cost(_relation())
        if cost.epsilon is not None and cost.epsilon <= target:
            return eps
        eps *= 1.0 - 1e-12
    raise BudgetExceededError(  # pragma: no cover - would mean a broken cost function
        f"no sieve budget fits in eps/2 = {eps_half}"
    )


def _relation() -> Relation:
    return Relation.REPLACE_ONE


def make_plan(params: PrivPCParams, settings: RunSettings,
              source: StatisticSource) -> PrivPCPlan:
    budget = settings.budget()
    r = plan_count(params, settings, default_rounds(source.p))
    tweak = float(params.tweak)
    if params.test_epsilon is not None:
        eps_round = float(params.test_epsilon)
        eps_half = eps_round / 2.0
    else:
        eps_half = split_epsilon(budget.epsilon, 2 * max(r, 1))
        eps_round = 2.0 * eps_half
    n = source.n
    m = int(params.m or subsample_size(n, eps_round))
    sens_n = source.sensitivity()
    sens_m = source.sensitivity(m)
    # The sieve never needs more than SIEVE_EPSILON_CAP (spending less is always allowed).
    eps_base = fit_base_epsilon(n, m, min(eps_half, SIEVE_EPSILON_CAP), sens_m)
    return PrivPCPlan("basic", r, eps_round, eps_half, eps_base, n, m, tweak, sens_n, sens_m,
                      settings.max_depth)


class SieveExamineTester:
    """Edge tester running sieve-and-examine rounds."""

    def __init__(self, plan: PrivPCPlan, source: StatisticSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.sieve: SparseVectorRun | None = None
        self.sub: StatisticSource | None = None
        self.rounds = 0
        self.examines = 0
        self._need: Cost | None = None  # a round's cost (public, the same every round)
        #: the next round's sieve, started with the last examine
        self._next: SparseVectorRun | None = None
        self._examine_cost: Cost | None = None
        self._need_next: Cost | None = None  # an examine plus a whole round (public, fixed)

    def _examine_mech(self, sensitivity: float | None = None) -> Laplace:
        """``Laplace(Delta, eps/2)``; the pair's own bound when given (same cost)."""
        sens = self.plan.sensitivity_full if sensitivity is None else sensitivity
        return Laplace(sens, self.plan.epsilon_half)

    @property
    def unused_sieves(self) -> int:
        """1 if the last sieve, started together with the last examine, was never used
        (no test came after it); it is charged all the same."""
        return int(self._next is not None)

    def _round_cost(self) -> Cost:
        """The declared cost of one round, sieve plus examine (public, fixed)."""
        if self._need is None:
            rel = self.session.relation
            self._examine_cost = self._examine_mech().cost(rel)  # any pair: same eps/2
            self._need = self._new_sieve().cost(rel) + self._examine_cost
        return self._need

    def _round_and_examine(self) -> Cost:
        """The declared cost of one examine plus a whole round (public, fixed)."""
        if self._need_next is None:
            round_cost = self._round_cost()
            assert self._examine_cost is not None  # set by _round_cost
            self._need_next = round_cost + self._examine_cost
        return self._need_next

    def _new_sieve(self) -> SubsampledSparseVector:
        return _sieve(self.plan.n, self.plan.m, self.plan.epsilon_base,
                      self.plan.sensitivity_sub)

    def _sieve_purpose(self) -> str:
        return f"priv-pc sieve {self.rounds + 1}"

    def _fits(self, need: Cost) -> tuple[bool, Cost]:
        """Whether the declared cost ``need`` fits what the session has left (and that)."""
        remaining = self.session.remaining()
        return not (remaining.epsilon is not None and need.epsilon is not None
                    and need.epsilon > remaining.epsilon), remaining

    def _start_round(self) -> None:
        need = self._round_cost()
        fits, remaining = self._fits(need)
        if not fits:
            # The round would not fit: admit nothing more (halt, nothing charged).
            raise BudgetExceededError(
                f"a sieve-and-examine round costs {float(need.epsilon or 0):.6g} but only "
                f"{float(remaining.epsilon or 0):.6g} remains"
            )
        self._begin(self.session.start(self._new_sieve(), purpose=self._sieve_purpose()))

    def _begin(self, run: SparseVectorRun) -> None:
        self.sieve = run
        self.sub = None
        self.rounds += 1

    def _sub_score(self, rows: np.ndarray, x: int, y: int, S: tuple[int, ...]) -> float:
        if self.sub is None:
            self.sub = self.source.subset(rows)
        return self.sub.score(x, y, S)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        if self.sieve is None or self.sieve.halted:
            if self._next is not None:  # started together with the last examine
                self._begin(self._next)
                self._next = None
            else:
                self._start_round()
        src = self.source
        T = src.threshold(x, y, S)
        bar = T + self.plan.tweak
        # public: the sieve's Delta_m over the pair's own bound at m rows (>= 1)
        k = self.plan.sensitivity_sub / src.sensitivity(self.plan.m, pair=(x, y))
        assert self.sieve is not None  # started above
        positive = bool(self.sieve.test(
            lambda rows: k * (bar - self._sub_score(rows, x, y, S))))
        if not positive:
            return CIResult(False, None, None)
        # The round ends here. The next round's sieve does not depend on this examine's
        # output (its parameters are the plan's), so when a whole further round fits
        # after this examine, it is admitted and started in the same batch: one ledger
        # transaction instead of two. If no further test comes, it stays charged unused.
        examine = self._examine_mech(src.sensitivity(pair=(x, y)))
        requests: list[ReleaseRequest] = [(
            examine, lambda: src.score(x, y, S),
            f"priv-pc examine {x} _||_ {y} | {list(S)}")]
        # this examine, then a whole round
        if self._fits(self._round_and_examine())[0]:
            requests.append((self._new_sieve(), None, self._sieve_purpose()))
        out = self.session.release_many(requests)
        noisy = float(np.asarray(out[0]))
        if len(out) > 1:
            self._next = cast(SparseVectorRun, out[1])  # a started stateful mechanism
        self.examines += 1
        return CIResult(noisy <= T, noisy, None)


class PrivPC(DiscreteAlgorithm[PrivPCParams, PrivPCPlan, SieveExamineTester]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``priv-pc``."""

    name = "priv-pc"
    description = "Priv-PC sieve-and-examine: subsampled SVT sieve + Laplace examine per round"
    params = PrivPCParams
    proof_note = "docs/privacy/algorithm-priv-pc.md"

    def plan(self, params: PrivPCParams, settings: RunSettings,
             source: StatisticSource) -> PrivPCPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: PrivPCPlan, source: StatisticSource,
               session: Session) -> SieveExamineTester:
        return SieveExamineTester(plan, source, session)

    def usage(self, tester: SieveExamineTester) -> dict[str, object]:
        return {"used_rounds": tester.rounds, "used_unused_sieves": tester.unused_sieves,
                "used_examines": tester.examines}


def optimal_rate_check(eps_round: float) -> float:
    """``(e^{eps/2} - 1)/3.9216`` before clipping (for docs/tests)."""
    return math.expm1(eps_round / 2.0) / 3.9216


ALGORITHM = register_algorithm(PrivPC())

"""Laplace-PC: every CI test is one noisy release of the score, and every test is
charged.

Plan (public, fixed before the run): ``K`` tests (default
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
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from accounting.costs import Budget, round_down, split_epsilon
from accounting.planning import choose_rule as acc_choose_rule
from accounting.session import Session
from dpcg.citests.private import PrivateCITest, ReleasePlan, StatisticSource
from dpcg.citests.registry import option
from dpcg.errors import AlgorithmError
from dpcg.private.common import DiscreteAlgorithm, PlanSizeParams, plan_count
from dpcg.private.contract import RunSettings
from dpcg.private.planning import default_plan_size, laplace_sd
from dpcg.private.registry import register_algorithm


@dataclass(frozen=True)
class LaplacePCParams(PlanSizeParams):
    """Laplace-PC's options: the plan (``plan_size`` tests or ``test_epsilon`` per test)
    and the composition ``rule`` (default: chosen from public information)."""

    rule: str | None = option(
        None, type=str, help="composition rule: basic (Laplace) or zcdp (Gaussian); "
                             "default: chosen from public information")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rule is not None and self.rule not in ("basic", "zcdp"):
            raise AlgorithmError(f"rule: expected 'basic', 'zcdp' or None, got {self.rule!r}")


@dataclass(frozen=True)
class LaplacePlan:
    rule: str
    tests: int
    release: ReleasePlan
    sensitivity: float
    max_depth: int | None

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "plan_size": self.tests, "sensitivity": self.sensitivity,
                **self.release.describe(), "max_depth": self.max_depth}


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


class LaplacePC(DiscreteAlgorithm[LaplacePCParams, LaplacePlan, PrivateCITest]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``laplace-pc``."""

    name = "laplace-pc"
    description = ("PC with every test a Laplace (basic) or Gaussian (zCDP) release of the "
                   "score; budget split over a public plan of K tests")
    params = LaplacePCParams
    proof_note = "docs/privacy/algorithm-laplace-pc.md"

    def plan(self, params: LaplacePCParams, settings: RunSettings,
             source: StatisticSource) -> LaplacePlan:
        return make_plan(params, settings, source)

    def tester(self, plan: LaplacePlan, source: StatisticSource,
               session: Session) -> PrivateCITest:
        return PrivateCITest(source, session, plan.release)

    def usage(self, tester: PrivateCITest) -> dict[str, object]:
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

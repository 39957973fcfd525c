"""A toy seventh private algorithm, registered only by the tests that use it.

It is the whole of what adding a private algorithm takes (``docs/internals.md`` shows
it as a diff): a frozen ``Params`` dataclass whose fields become ``dpcg discover`` flags,
a public plan, and ``plan``/``tester``/``usage`` over the
:class:`~dpcg.private.contract.PrivateAlgorithm` contract. Kept in ``dpcg/private/`` with
``register_algorithm(ToyLaplacePC())`` at the bottom, it would be found by the registry's
package scan; here the tests call :func:`registered` instead. Privacy: every test is one
``Laplace(Delta, epsilon / tests)`` release of the score, charged by the session; the
proof note is ``tests/testing/toy_algorithm.md`` (a toy is not shipped, so its note is
not in ``docs/privacy/``). ``tests/testing/test_checks.py`` runs
:func:`dpcg.testing.check_algorithm` on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from accounting.costs import split_epsilon
from accounting.session import Session
from dpcg.citests.private import PrivateCITest, ReleasePlan, StatisticSource
from dpcg.citests.registry import option
from dpcg.private.common import DiscreteAlgorithm, check_count_field
from dpcg.private.contract import RunSettings
from dpcg.private.registry import register_algorithm, unregister_algorithm


@dataclass(frozen=True)
class ToyParams:
    """The toy's one option: how many tests the budget is split over."""

    tests: int = option(40, type=int, flag="--toy-tests", metavar="K",
                        help="tests the budget is split over (toy-laplace-pc; default 40)")

    def __post_init__(self) -> None:
        check_count_field("tests", self.tests)


@dataclass(frozen=True)
class ToyPlan:
    rule: str
    max_depth: int | None
    tests: int
    release: ReleasePlan

    def describe(self) -> dict[str, object]:
        return {"rule": self.rule, "plan_size": self.tests, **self.release.describe()}


class ToyLaplacePC(DiscreteAlgorithm[ToyParams, ToyPlan, PrivateCITest]):
    name = "toy-laplace-pc"
    description = "toy: Laplace-PC with a fixed plan of --toy-tests tests (tests only)"
    params = ToyParams
    proof_note = "tests/testing/toy_algorithm.md"
    reproduces_pc = True  # one noisy score per test against the public T

    def plan(self, params: ToyParams, settings: RunSettings,
             source: StatisticSource) -> ToyPlan:
        eps = split_epsilon(settings.epsilon, params.tests)
        return ToyPlan("basic", settings.max_depth, params.tests,
                       ReleasePlan("laplace", epsilon=float(eps)))

    def tester(self, plan: ToyPlan, source: StatisticSource,
               session: Session) -> PrivateCITest:
        return PrivateCITest(source, session, plan.release)

    def usage(self, tester: PrivateCITest) -> dict[str, object]:
        return {"used_releases": tester.releases}


TOY = ToyLaplacePC()


@contextmanager
def registered() -> Iterator[ToyLaplacePC]:
    """The toy in the registry for the duration of a test."""
    register_algorithm(TOY)
    try:
        yield TOY
    finally:
        unregister_algorithm(TOY.name)

"""private-CI PC: PC-stable where every CI test is a private continuous test (PrivGCM or
PrivCRT).

Python API (the one public function, :func:`dpcg.discover`)::

    import dpcg
    res = dpcg.discover(dataset, algorithm="private-ci-pc", test="privgcm", epsilon=10.0,
                        dataset_id="sem")
    res.cpdag, res.guarantee, res.to_json()["plan"]

CLI::

    dpcg discover --data t.csv --schema s.json --dataset-id ID --algorithm private-ci-pc \\
        --test privgcm --epsilon 10 [--plan-size K | --test-epsilon E] [--bandwidth 0.5]
    dpcg discover ... --algorithm private-ci-pc --test privcrt --model-x law.json
    dpcg discover ... --algorithm private-ci-pc --test privcrt --model-x private \\
        [--model-x-share 0.25] [--regression rff]

Every CI test is one self-contained private release (PrivGCM: a vector Laplace release of
the residual products' group sums; PrivCRT: one Report-Noisy-Max release of a rank),
charged by the session before the data is touched. By default (``budget_split`` "levels")
each level of PC gets a share of what is left and splits it over the tests that level can
still ask (:class:`LevelPlannedCITest`; never below the per-test floor ``epsilon / K``, ``K``
the former default plan size), so no budget is held for tests that cannot run; with
``plan_size`` or ``test_epsilon`` the total is split over a **public** plan of ``K`` tests
(``split_epsilon``). The basic filter enforces the total under fully adaptive composition, and
when it refuses, PC stops and returns the graph so far (``budget_exhausted``). Pure
epsilon-DP: ``delta`` is 0. Like every private algorithm it is recorded in the durable
ledger by default (:mod:`dpcg.private.ledger`). Proof notes:
``docs/privacy/privgcm.md``, ``docs/privacy/privcrt.md`` (one test) and basic
composition under the filter (``docs/privacy/costs-and-filter.md``).

PrivCRT with ``--model-x private`` (:class:`~dpcg.citests.crt.PrivateModelX`): before
its first test the run releases the bounded moment vector with a public share of epsilon
(one ``Laplace`` release, :mod:`dpcg.citests.crt_law`), derives a Gaussian model-X law
from it (post-processing) and runs the tests with the rest; the plan shows both parts
(``docs/privacy/privcrt-released-law.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from accounting.costs import split_epsilon
from accounting.errors import BudgetExceededError
from accounting.session import Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.continuous_pc import TESTS, KernelOptions, private_test_for
from dpcg.citests.crt import PrivateModelX, PrivCRTTest
from dpcg.citests.crt_law import law_mechanism, release_model_x, split_law_budget
from dpcg.citests.gcm import PrivGCMTest, check_epsilon
from dpcg.data.dataset import Dataset
from dpcg.errors import AlgorithmError, CITestError
from dpcg.pc.engine import pair_test_count
from dpcg.private.common import PlanSizeParams
from dpcg.private.contract import RunSettings, ScoreCache
from dpcg.private.planning import default_plan_size, planned_depth
from dpcg.private.registry import register_algorithm

__all__ = ["ALGORITHM", "LEVELS_PLANNED_DEPTH", "ContinuousSource", "LevelPlannedCITest",
           "PrivateCIPC", "PrivateCIPCParams", "PrivateCIPlan"]

#: Levels the default per-level plan provisions for when ``max_depth`` is not given
#: (public; :func:`dpcg.private.laplace_pc.level_slots`).
LEVELS_PLANNED_DEPTH = 2


def level_slots(level: int, depth: int) -> int:
    """Level ``l`` gets ``1/level_slots`` of what is left: ``D - l + 2`` up to the planned
    depth ``D``, 2 past it (Laplace-PC's rule, :func:`dpcg.private.laplace_pc.level_slots`,
    restated here so that loading this plugin loads no other)."""
    return depth - level + 2 if level <= depth else 2


@dataclass(frozen=True)
class PrivateCIPCParams(PlanSizeParams):
    """private-CI PC's options: the public plan (``plan_size`` tests or ``test_epsilon``
    per test). The test's own options (bandwidth, ...) belong to ``--test``."""


@dataclass(frozen=True)
class ContinuousSource:
    """The run's continuous data, test and the test's typed options (nothing computed)."""

    dataset: Dataset
    test: str
    options: KernelOptions
    alpha: float


@dataclass(frozen=True)
class PrivateCIPlan:
    """The public plan and the tester validated before charging.

    ``budget_split="tests"`` (``plan_size`` or ``test_epsilon`` given): ``K`` tests of
    ``test_epsilon`` each. ``budget_split="levels"`` (the default): each level of PC
    gets a share of what is left and splits it over the tests that level can still ask
    (:class:`LevelPlannedCITest`); ``test_epsilon`` is then the smallest per-test epsilon
    the run may use (``total / default_plan_size(p)``, checked by the pre-flight), and
    ``plan_size`` the number of tests that floor would allow."""

    rule: str
    plan_size: int
    test_epsilon: float
    max_depth: int | None
    probe: PrivGCMTest | PrivCRTTest
    budget_split: str = "tests"
    depth: int = 0
    levels: list[dict[str, Any]] = field(default_factory=list)
    #: ``--model-x private``: the law's release (its mechanism, epsilon and share)
    law: Any = None
    law_epsilon: float | None = None
    law_share: float | None = None
    #: epsilon left for the tests (the whole budget unless the law is released)
    total_tests_epsilon: float | None = None

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {
            "rule": self.rule, "test": self.probe_name, "plan_size": self.plan_size,
            "test_epsilon": self.test_epsilon, "bandwidth": self.probe.krr.bandwidth,
            "lam": self.probe.krr.lam, "alpha": self.probe.alpha,
            "max_depth": self.max_depth, "budget_split": self.budget_split}
        if self.budget_split == "levels":
            out["horizon"] = self.depth
        if isinstance(self.probe, PrivCRTTest):
            out.update({"m": self.probe.m, "residual_bound": self.probe.residual_bound})
            if self.law is not None:
                out.update({"model_x": "private", "model_x_share": self.law_share,
                            "model_x_epsilon": self.law_epsilon,
                            "model_x_sensitivity_l1": self.law.sensitivity,
                            "tests_epsilon": self.total_tests_epsilon,
                            "y_fit": self.probe.y_fit})
        else:
            out["sensitivity_c_lambda"] = self.probe.sensitivity
            out["groups"] = self.probe.groups
            out["fit"] = self.probe.fit  # "twice" (grouped default) or "single"
            out["residual_clip"] = self.probe.residual_clip  # None for the single fit
        return out

    @property
    def probe_name(self) -> str:
        return "privcrt" if isinstance(self.probe, PrivCRTTest) else "privgcm"


class PrivateCIPC:
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``private-ci-pc``."""

    name = "private-ci-pc"
    description = ("PC-stable where every test is a private continuous CI test (privgcm, "
                   "privcrt); total --epsilon split per level over the tests each level can "
                   "ask, or over a public plan of K tests")
    params = PrivateCIPCParams
    tests: tuple[str, ...] = TESTS
    default_test = "privgcm"
    default_delta = 0.0
    proof_note = "docs/privacy/privgcm.md"
    #: privgcm's decision is the non-private gcm's on the noisy residual products
    reproduces_pc = True

    def resolve_test(self, test: str) -> str:
        if test not in TESTS:
            raise AlgorithmError(
                f"--algorithm private-ci-pc runs one of {TESTS}, not --test {test}")
        return test

    def source(self, dataset: Dataset, settings: RunSettings, test_options: object,
               cache: ScoreCache | None = None) -> ContinuousSource:
        if cache is not None:
            raise AlgorithmError("cache: private-ci-pc has no score cache")
        if not isinstance(test_options, KernelOptions):
            raise CITestError(f"test_options: expected KernelOptions, got "
                              f"{type(test_options).__name__}")
        return ContinuousSource(dataset, self.resolve_test(settings.test), test_options,
                                settings.alpha)

    def plan(self, params: PrivateCIPCParams, settings: RunSettings,
             source: ContinuousSource) -> PrivateCIPlan:
        if settings.delta != 0:
            raise AlgorithmError(f"delta: private-ci-pc is pure epsilon-DP (basic "
                                 f"composition of Laplace / Report-Noisy-Max tests); got "
                                 f"delta={settings.delta!r}, leave it 0")
        total = check_epsilon(settings.epsilon)
        p = len(source.dataset.names)
        # --model-x private: a public share of epsilon goes to the law's release first
        law_source = source.options.law() if source.test == "privcrt" and hasattr(
            source.options, "law") else None
        law = None
        law_eps: float | None = None
        share: float | None = None
        eps = total
        if isinstance(law_source, PrivateModelX):
            share = law_source.share
            law_eps, eps = split_law_budget(total, share)
            law = law_mechanism(source.dataset.n, p, law_eps)
        levels = params.test_epsilon is None and params.plan_size is None
        if levels:
            # the floor: the per-test epsilon of the former default plan (public)
            k = default_plan_size(p)
            per_test = float(split_epsilon(eps, k))
        elif params.test_epsilon is not None:
            per_test = check_epsilon(params.test_epsilon)
            if per_test > eps:
                raise AlgorithmError(f"test_epsilon={per_test} exceeds the "
                                     + ("tests' share of epsilon" if law is not None
                                        else "total epsilon") + f"={eps}")
            k = math.floor(eps / per_test)
        else:
            k = params.plan_size if params.plan_size is not None else default_plan_size(p)
            per_test = float(split_epsilon(eps, k))
        # Validate the tester (bounds, values, bandwidth, lam, m, ...) before charging.
        probe = private_test_for(source.dataset, source.test, source.options, None,
                                 per_test, source.alpha)
        probe.preflight()  # a per-test epsilon its sampler cannot represent fails here
        extra: dict[str, Any] = {"law": law, "law_epsilon": law_eps,
                                 "law_share": share,
                                 "total_tests_epsilon": eps}
        if not levels:
            return PrivateCIPlan("basic", k, per_test, settings.max_depth, probe, **extra)
        depth = planned_depth(p, settings.max_depth, LEVELS_PLANNED_DEPTH)
        return PrivateCIPlan("basic", k, per_test, settings.max_depth, probe,
                             budget_split="levels", depth=depth, **extra)

    def tester(self, plan: PrivateCIPlan, source: ContinuousSource,
               session: Session) -> PrivGCMTest | PrivCRTTest | LevelPlannedCITest:
        plan.probe.session = session
        if plan.law is not None:
            # the law's release comes first (charged, in the ledger); the tests use the
            # released law as a public input and the filter's remainder
            assert isinstance(plan.probe, PrivCRTTest)
            plan.probe.model = release_model_x(session, plan.probe.data, plan.law)
        if plan.budget_split == "levels":
            return LevelPlannedCITest(plan, session)
        return plan.probe

    def usage(self, tester: PrivGCMTest | PrivCRTTest | LevelPlannedCITest
              ) -> Mapping[str, object]:
        session = tester.session
        out: dict[str, object] = {"releases": 0 if session is None else session.releases}
        if isinstance(tester, LevelPlannedCITest):
            out["used_levels"] = list(tester.levels)
        return out


class LevelPlannedCITest:
    """private-ci-pc's default tester: PrivGCM / PrivCRT with a per-level budget.

    When PC starts level ``l`` (:class:`dpcg.pc.engine.LevelListener`) the level gets
    ``1/level_slots(l, D)`` of what the filter has left, or all of it when no later level
    can ask a test (no pair of the frozen adjacency has ``l + 1`` other neighbours on
    either side, or ``l`` is ``max_depth``). Each test of the level gets what the level has
    left divided by the most tests the level can still ask (every open pair's candidate
    sets not yet asked, :func:`dpcg.pc.engine.pair_test_count`), never less than the
    plan's floor ``test_epsilon`` (pre-flighted); when even the floor is not left, PC
    stops (``BudgetExceededError``, the graph so far is returned). A level therefore
    never holds more budget than the tests it can run. Everything here is a function of
    public facts and of released answers (the adjacency, which pairs were found
    independent), so choosing each test's epsilon this way is adaptive composition,
    which the basic filter bounds (docs/privacy/costs-and-filter.md)."""

    def __init__(self, plan: PrivateCIPlan, session: Session) -> None:
        self.plan = plan
        self.inner = plan.probe
        self.inner.session = session
        self.levels: list[dict[str, Any]] = []
        self.exhaustion_note: str | None = None
        self._left: dict[tuple[int, int], int] = {}
        self._level_left = Fraction(0)
        self._level = 0

    @property
    def session(self) -> Session | None:
        return self.inner.session

    def _remaining(self) -> Fraction:
        session = self.inner.session
        assert session is not None
        rem = session.remaining().epsilon
        assert rem is not None
        return Fraction(rem)

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[tuple[int, int]]) -> None:
        self._level = level
        self._left = {(min(x, y), max(x, y)): pair_test_count(level, adjacency, x, y)
                      for x, y in pairs}
        tests = sum(self._left.values())
        deeper = any(len(adjacency[x] - {y}) > level or len(adjacency[y] - {x}) > level
                     for x, y in pairs)
        last = not deeper or (self.plan.max_depth is not None
                              and level >= self.plan.max_depth)
        rem = self._remaining()
        self._level_left = rem if last else rem / level_slots(level, self.plan.depth)
        self.levels.append({"level": level, "pairs": len(pairs), "tests_bound": tests,
                            "share": float(self._level_left), "last": last, "tests": 0})

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, self.inner.data.p)
        key = (min(xi, yi), max(xi, yi))
        bound = max(sum(self._left.values()), 1)
        floor = Fraction(self.plan.test_epsilon)
        share = min(self._level_left, self._remaining()) / bound
        eps = max(share, floor)
        if eps > self._remaining():
            self.exhaustion_note = (f"the budget is used up at level {self._level}: less "
                                    f"than the per-test floor {self.plan.test_epsilon:g} "
                                    "is left")
            raise BudgetExceededError(f"private-ci-pc: {self.exhaustion_note}")
        value = float(eps)
        if Fraction(value) > eps:  # round down: never ask for more than the share
            value = math.nextafter(value, 0.0)
        self.inner.epsilon = value
        out = self.inner.test(xi, yi, Si)
        self._level_left = max(self._level_left - Fraction(value), Fraction(0))
        left = self._left.get(key, 0) - 1
        if out.independent or left <= 0:
            self._left.pop(key, None)
        else:
            self._left[key] = left
        if self.levels:
            self.levels[-1]["tests"] += 1
        return out


ALGORITHM = register_algorithm(PrivateCIPC())

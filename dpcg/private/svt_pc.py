"""SVT-PC: the CI tests stream through the sparse vector technique.

Which answer is the positive? **Independence** (the edge is removed). PC asks about a pair
until the first "independent" answer, so a pair yields at most one independence answer
per run, while an adjacent pair is asked "dependent?" for every candidate set at every
level: independence is the rarer event, and SVT pays only per positive. The query is
``q = k_xy (T(x, y, S) - s(x, y | S))`` against the SVT threshold 0, where
``k_xy = Delta / Delta_xy >= 1`` rescales the pair's score by the ratio of the
source-level sensitivity to the pair's own (cardinality-aware) bound; ``T`` and
``k_xy`` are public, so every query has sensitivity ``Delta``: *above threshold* means
noisy score below ``T``, i.e. independent.

Each instance is ``SparseVector(threshold=0, Delta, eps_inst, cutoff=c)`` (Lyu et al.
Alg. 1; charged in full when it starts, including the last one that never fires). When
an instance halts (after ``c`` positives; default ``c = 1``, i.e. after every positive)
the next test starts a NEW instance with a fresh Laplace threshold drawn inside the
primitive (never Gaussian). Rule (public): ``basic`` or ``zcdp`` (an ``eps_i``-DP
instance is ``eps_i^2/2``-zCDP), whichever gives the instances the larger epsilon.
Default plan: one per PC level, ``ceil(open pairs / c)`` instances (the most the level can
start, so no level runs out), each level's share from what the filter has left
(:func:`dpcg.private.planning.level_share`); with ``plan_size`` ``R`` instances over the
run. The filter enforces the budget. Proof note: ``docs/privacy/algorithm-svt-pc.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from accounting.errors import BudgetExceededError
from accounting.mechanisms import SparseVector, SparseVectorRun
from accounting.session import Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.errors import AlgorithmError
from dpcg.private.common import (
    AnnouncesLevels,
    DiscreteAlgorithm,
    PlanSizeParams,
    bound_given,
    check_count_field,
    check_number_field,
    exhaustion_note,
    fits,
    plan_count,
    plan_level0_selection,
    select_pairs,
    unspent,
)
from dpcg.private.contract import RunSettings
from dpcg.private.planning import (
    SELECT_SHARE,
    choose_unit_rule,
    default_rounds,
    level_share,
    level_units,
    n_pairs,
    planned_depth,
    unit_epsilon,
)
from dpcg.private.registry import register_algorithm


@dataclass(frozen=True)
class SVTPCParams(PlanSizeParams):
    """SVT-PC's options: the plan (``plan_size`` instances or ``test_epsilon`` per
    instance) and the ``cutoff`` of positives per instance."""

    cutoff: int = option(1, type=int, metavar="C",
                         help="positives (independence answers) per SVT instance "
                              "(default 1)")

    select: float | None = option(
        None, type=float, metavar="KAPPA",
        help="per-level plans: level 0 first keeps the top K = KAPPA p pairs by one top-K "
             "release and streams only those; 0: every pair (default: 4, used where it "
             "cuts level 0's noise at least in half)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count_field("cutoff", self.cutoff)
        if self.select is not None:
            check_number_field("select", self.select, nonnegative=True)
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("select: applies only to the per-level plans (give "
                                     "neither plan_size nor test_epsilon)")


@dataclass(frozen=True)
class SVTPlan:
    """The public plan. ``per_level``: each level gets its own plan of instances when it
    starts (one per open pair and cutoff: the level can never start more); the fields
    describe level 0's, fixed from public facts alone. Otherwise (``plan_size`` /
    ``test_epsilon`` given) ``instances`` instances of ``epsilon_instance``."""

    rule: str
    instances: int
    epsilon_instance: float
    cutoff: int
    sensitivity: float
    max_depth: int | None
    per_level: bool = False
    depth: int = 0
    pairs: int = 0
    select_k: int = 0
    select_epsilon: float = 0.0

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "plan_size": self.instances,
                "epsilon_per_instance": self.epsilon_instance, "cutoff": self.cutoff,
                "sensitivity": self.sensitivity, "positive": "independent",
                "max_depth": self.max_depth,
                "horizon": self.depth if self.per_level else None,
                "select_k": self.select_k, "select_epsilon": self.select_epsilon}


def level_instances(open_pairs: int, level: int, cutoff: int) -> int:
    """Instances a level's plan provides: ``ceil(open_pairs / cutoff)``, an upper bound
    on the instances the level can start (every positive removes a distinct pair, and
    an instance is started only while a pair is open)."""
    return level_units(open_pairs, level, cutoff=cutoff)


def make_plan(params: SVTPCParams, settings: RunSettings, source: StatisticSource) -> SVTPlan:
    budget = settings.budget()
    cutoff = params.cutoff
    pairs = n_pairs(source.p)
    if params.plan_size is None and params.test_epsilon is None:
        depth = planned_depth(source.p, settings.max_depth)
        r = level_instances(pairs, 0, cutoff)
        rule = choose_unit_rule(budget.epsilon, budget.delta, r * (depth + 1))
        total = budget.epsilon_exact if rule == "basic" else budget.rho()
        level0 = Fraction(total) / max(depth + 1, 1)  # what level_share gives r instances
        got = plan_level0_selection(rule, level0, source, params.select)
        k, eps_sel = (0, 0.0) if got is None else got
        if got is None:
            eps = unit_epsilon(level_share(total, r, 0, depth), rule)
        else:  # the kept pairs' instances share the rest of level 0's share
            r = level_instances(k, 0, cutoff)
            eps = unit_epsilon(level0 * (1 - Fraction(SELECT_SHARE)) / r, rule)
        return checked(SVTPlan(rule, r, eps, cutoff, source.sensitivity(),
                               settings.max_depth, per_level=True, depth=depth,
                               pairs=pairs, select_k=k, select_epsilon=eps_sel))
    r = plan_count(params, settings, default_rounds(source.p))
    if params.test_epsilon is not None:
        rule, eps = "basic", float(params.test_epsilon)
    else:
        rule = choose_unit_rule(budget.epsilon, budget.delta, max(r, 1))
        total = budget.epsilon_exact if rule == "basic" else budget.rho()
        eps = unit_epsilon(total / max(r, 1), rule)
    return checked(SVTPlan(rule, r, eps, cutoff, source.sensitivity(), settings.max_depth,
                           pairs=pairs))


def checked(plan: SVTPlan) -> SVTPlan:
    """``plan`` after building its first instance's noise once: an instance budget its
    sampler cannot represent (a vanishing budget) fails here, before the run is
    reserved."""
    SparseVector(threshold=0.0, sensitivity=plan.sensitivity, epsilon=plan.epsilon_instance,
                 cutoff=plan.cutoff).noise_plan()
    return plan


class SVTTester(AnnouncesLevels):
    """Edge tester streaming every test through the current SVT instance (it announces a
    level's tests to its source when it enters the level: :class:`AnnouncesLevels`)."""

    def __init__(self, plan: SVTPlan, source: StatisticSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.run: SparseVectorRun | None = None
        self.instances = 0
        self._eps = plan.epsilon_instance  # the current level's instance budget
        self._left = plan.instances
        self._level = -1
        self._removed = 0
        self.levels: list[dict[str, Any]] = []
        self.exhaustion_note: str | None = None
        #: level 0's kept pairs (``None``: no selection, or not made yet)
        self._kept: set[tuple[int, int]] | None = None

    def _mechanism(self) -> SparseVector:
        return SparseVector(threshold=0.0, sensitivity=self.plan.sensitivity,
                            epsilon=self._eps, cutoff=self.plan.cutoff)

    def _enter_level(self, level: int) -> None:
        """Fix the level's plan when its first test comes (public facts and the count of
        released removals only). A running instance carries on into the level."""
        self._level = level
        if not self.plan.per_level:
            return
        if level == 0 and self.plan.select_k > 0 and self._kept is None:
            self._kept = select_pairs(self.source, self.session, self.plan.select_k,
                                      self.plan.select_epsilon, "svt-pc")
            self._eps = self.plan.epsilon_instance
            self._left = self.plan.instances
            self.levels.append({"level": 0, "open_pairs": self.plan.pairs,
                                "selected": len(self._kept),
                                "instances_planned": self.plan.instances, "instances": 0,
                                "epsilon_per_instance": self._eps})
            return
        open_pairs = max(self.plan.pairs - self._removed, 0)
        units = level_instances(open_pairs, level, self.plan.cutoff)
        rem = self.session.remaining()
        total = rem.epsilon if self.plan.rule == "basic" else rem.rho
        assert total is not None
        self._eps = unit_epsilon(level_share(total, units, level, self.plan.depth),
                                 self.plan.rule)
        self._left = units if self._eps > 0.0 else 0
        self.levels.append({"level": level, "open_pairs": open_pairs,
                            "instances_planned": units, "instances": 0,
                            "epsilon_per_instance": self._eps})

    def _stop(self, why: str) -> BudgetExceededError:
        self.exhaustion_note = exhaustion_note(self._level, why)
        return BudgetExceededError(f"svt-pc: {why}")

    def _start(self) -> SparseVectorRun:
        if self._left <= 0:
            if self.plan.per_level and self._eps <= 0.0:
                raise self._stop(f"the budget is used up: nothing is left for level "
                                 f"{self._level}")
            raise self._stop(f"level {self._level}'s plan of instances is used up")
        mech = self._mechanism()
        if not fits(mech.cost(self.session.relation), self.session.remaining()):
            raise self._stop("an SVT instance does not fit the remaining budget")
        run = self.session.start(mech, purpose=f"svt-pc instance {self.instances + 1}")
        self.instances += 1
        self._left -= 1
        if self.levels:
            self.levels[-1]["instances"] += 1
        return run

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        if len(S) != self._level:
            self._enter_level(len(S))
            self._announce(len(S), self._kept)
        if not S and self._kept is not None and (min(x, y), max(x, y)) not in self._kept:
            self._removed += 1  # not kept by level 0's selection: independent given {}
            return CIResult(True, None, None)
        if self.run is None or self.run.halted:
            self.run = self._start()
        src = self.source
        T = src.threshold(x, y, S)
        # public: the test's bound -> the instance's sensitivity
        k = src.scale(x, y, bound_given(S))
        positive = bool(self.run.test(lambda: k * (T - src.score(x, y, S))))
        if positive:
            self._removed += 1
        return CIResult(positive, None, None)


class SVTPC(DiscreteAlgorithm[SVTPCParams, SVTPlan, SVTTester]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``svt-pc``."""

    name = "svt-pc"
    description = ("PC with the tests streamed through the sparse vector technique "
                   "(positive = independent; new instance after each positive)")
    params = SVTPCParams
    proof_note = "docs/privacy/algorithm-svt-pc.md"
    reproduces_pc = True

    def plan(self, params: SVTPCParams, settings: RunSettings,
             source: StatisticSource) -> SVTPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: SVTPlan, source: StatisticSource, session: Session) -> SVTTester:
        return SVTTester(plan, source, session)

    def usage(self, tester: SVTTester) -> dict[str, object]:
        return {"used_instances": tester.instances, "used_levels": tester.levels,
                "used_unspent": unspent(tester.session)}


ALGORITHM = register_algorithm(SVTPC())

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
primitive (never Gaussian). Plan: ``R`` instances (default
:func:`dpcg.private.planning.default_rounds`), ``eps_inst = eps / R`` under basic
composition, enforced by the filter. Proof note: ``docs/privacy/algorithm-svt-pc.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accounting.costs import split_epsilon
from accounting.mechanisms import SparseVector, SparseVectorRun
from accounting.session import Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.private.common import DiscreteAlgorithm, PlanSizeParams, check_count_field, plan_count
from dpcg.private.contract import RunSettings
from dpcg.private.planning import default_rounds
from dpcg.private.registry import register_algorithm


@dataclass(frozen=True)
class SVTPCParams(PlanSizeParams):
    """SVT-PC's options: the plan (``plan_size`` instances or ``test_epsilon`` per
    instance) and the ``cutoff`` of positives per instance."""

    cutoff: int = option(1, type=int, metavar="C",
                         help="positives (independence answers) per SVT instance "
                              "(default 1)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count_field("cutoff", self.cutoff)


@dataclass(frozen=True)
class SVTPlan:
    rule: str
    instances: int
    epsilon_instance: float
    cutoff: int
    sensitivity: float
    max_depth: int | None

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "plan_size": self.instances,
                "epsilon_per_instance": self.epsilon_instance, "cutoff": self.cutoff,
                "sensitivity": self.sensitivity, "positive": "independent",
                "max_depth": self.max_depth}


def make_plan(params: SVTPCParams, settings: RunSettings, source: StatisticSource) -> SVTPlan:
    budget = settings.budget()
    r = plan_count(params, settings, default_rounds(source.p))
    cutoff = params.cutoff
    if params.test_epsilon is not None:
        eps = float(params.test_epsilon)
    else:
        eps = split_epsilon(budget.epsilon, max(r, 1))
    return SVTPlan("basic", r, eps, cutoff, source.sensitivity(), settings.max_depth)


class SVTTester:
    """Edge tester streaming every test through the current SVT instance."""

    def __init__(self, plan: SVTPlan, source: StatisticSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.run: SparseVectorRun | None = None
        self.instances = 0

    def _mechanism(self) -> SparseVector:
        return SparseVector(threshold=0.0, sensitivity=self.plan.sensitivity,
                            epsilon=self.plan.epsilon_instance, cutoff=self.plan.cutoff)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        if self.run is None or self.run.halted:
            self.run = self.session.start(
                self._mechanism(), purpose=f"svt-pc instance {self.instances + 1}")
            self.instances += 1
        src = self.source
        T = src.threshold(x, y, S)
        k = src.scale(x, y)  # public: per-pair bound -> the instance's sensitivity
        positive = bool(self.run.test(lambda: k * (T - src.score(x, y, S))))
        return CIResult(positive, None, None)


class SVTPC(DiscreteAlgorithm[SVTPCParams, SVTPlan, SVTTester]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``svt-pc``."""

    name = "svt-pc"
    description = ("PC with the tests streamed through the sparse vector technique "
                   "(positive = independent; new instance after each positive)")
    params = SVTPCParams
    proof_note = "docs/privacy/algorithm-svt-pc.md"

    def plan(self, params: SVTPCParams, settings: RunSettings,
             source: StatisticSource) -> SVTPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: SVTPlan, source: StatisticSource, session: Session) -> SVTTester:
        return SVTTester(plan, source, session)

    def usage(self, tester: SVTTester) -> dict[str, object]:
        return {"used_instances": tester.instances}


ALGORITHM = register_algorithm(SVTPC())

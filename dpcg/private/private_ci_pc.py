"""private-CI PC: PC-stable where every CI test is a private continuous test (PrivGCM or
PrivCRT).

Python API::

    from dpcg.private.private_ci_pc import private_pc_continuous
    res = private_pc_continuous(dataset, test="privgcm", epsilon=10.0)
    res.pc.cpdag, res.guarantee, res.spent, res.plan

CLI::

    dpcg discover --data t.csv --schema s.json --dataset-id ID --algorithm private-ci-pc \\
        --test privgcm --epsilon 10 [--plan-size K | --test-epsilon E] [--bandwidth 0.5]
    dpcg discover ... --algorithm private-ci-pc --test privcrt --model-x law.json

Every CI test is one self-contained private release (PrivGCM: a vector Laplace release of
the residual products; PrivCRT: one Report-Noisy-Max release of a rank), charged by the
session before the data is touched. The total ``epsilon`` is split over a **public** plan
of ``K`` tests (``split_epsilon``; default ``K`` from the number of variables as for
Laplace-PC); the basic filter enforces the total under fully adaptive composition, and
when it refuses, PC stops and returns the graph so far (``budget_exhausted``). Pure
epsilon-DP: ``delta`` is 0. Like every private algorithm it is recorded in the durable
ledger by default (:mod:`dpcg.private.ledger`). Proof notes:
``docs/privacy/privgcm.md``, ``docs/privacy/privcrt.md`` (one test) and basic
composition under the filter (``docs/privacy/costs-and-filter.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from accounting.costs import split_epsilon
from accounting.session import Session
from dpcg.citests.continuous_pc import TESTS, KernelOptions, private_test_for
from dpcg.citests.crt import GaussianModelX, PrivCRTTest
from dpcg.citests.gcm import PrivGCMTest, check_epsilon
from dpcg.data.dataset import Dataset
from dpcg.errors import AlgorithmError, CITestError
from dpcg.pc.background import BackgroundKnowledge
from dpcg.private.common import PlanSizeParams
from dpcg.private.contract import RunSettings, ScoreCache
from dpcg.private.ledger import IN_MEMORY, LedgerTarget
from dpcg.private.planning import default_plan_size
from dpcg.private.registry import register_algorithm
from dpcg.private.run import PrivateResult, Progress, discover_private

__all__ = ["ALGORITHM", "ContinuousSource", "PrivateCIPC", "PrivateCIPCParams",
           "PrivateCIPlan", "private_pc_continuous"]


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
    """``K`` tests of ``test_epsilon`` each, and the tester validated before charging."""

    rule: str
    plan_size: int
    test_epsilon: float
    max_depth: int | None
    probe: PrivGCMTest | PrivCRTTest

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {
            "rule": self.rule, "test": self.probe_name, "plan_size": self.plan_size,
            "test_epsilon": self.test_epsilon, "bandwidth": self.probe.krr.bandwidth,
            "lam": self.probe.krr.lam, "alpha": self.probe.alpha,
            "max_depth": self.max_depth}
        if isinstance(self.probe, PrivCRTTest):
            out.update({"m": self.probe.m, "residual_bound": self.probe.residual_bound})
        else:
            out["sensitivity_c_lambda"] = self.probe.sensitivity
        return out

    @property
    def probe_name(self) -> str:
        return "privcrt" if isinstance(self.probe, PrivCRTTest) else "privgcm"


class PrivateCIPC:
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``private-ci-pc``."""

    name = "private-ci-pc"
    description = ("PC-stable where every test is a private continuous CI test (privgcm, "
                   "privcrt); total --epsilon split over a public plan of K tests")
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
        eps = check_epsilon(settings.epsilon)
        if params.test_epsilon is not None:
            per_test = check_epsilon(params.test_epsilon)
            if per_test > eps:
                raise AlgorithmError(f"test_epsilon={per_test} exceeds the total "
                                     f"epsilon={eps}")
            k = math.floor(eps / per_test)
        else:
            k = default_plan_size(len(source.dataset.names)) if params.plan_size is None \
                else params.plan_size
            per_test = float(split_epsilon(eps, k))
        # Validate the tester (bounds, values, bandwidth, lam, m, ...) before charging.
        probe = private_test_for(source.dataset, source.test, source.options, None,
                                 per_test, source.alpha)
        probe.preflight()  # a per-test epsilon its sampler cannot represent fails here
        return PrivateCIPlan("basic", k, per_test, settings.max_depth, probe)

    def tester(self, plan: PrivateCIPlan, source: ContinuousSource,
               session: Session) -> PrivGCMTest | PrivCRTTest:
        plan.probe.session = session
        return plan.probe

    def usage(self, tester: PrivGCMTest | PrivCRTTest) -> Mapping[str, object]:
        session = tester.session
        return {"releases": 0 if session is None else session.releases}


ALGORITHM = register_algorithm(PrivateCIPC())


def private_pc_continuous(
    dataset: Dataset,
    *,
    test: str = "privgcm",
    epsilon: float,
    plan_size: int | None = None,
    test_epsilon: float | None = None,
    alpha: float = 0.05,
    bandwidth: float | None = None,
    lam: float | None = None,
    model: GaussianModelX | None = None,
    m: int | None = None,
    residual_bound: float | None = None,
    seed: int | None = None,
    ledger: str | Path | LedgerTarget | None = None,
    dataset_id: str | None = None,
    max_depth: int | None = None,
    background: BackgroundKnowledge | None = None,
    progress: Progress | None = None,
) -> PrivateResult:
    """PC-stable with PrivGCM / PrivCRT on a continuous dataset (see the module docstring).

    ``bandwidth``, ``lam`` (both tests) and ``model``, ``m``, ``residual_bound`` (privcrt
    only; an error for privgcm) are the test's options; ``seed`` seeds the noise;
    ``ledger``/``dataset_id`` record the run (default: in memory). Every input is
    validated before the session opens, so bad input spends nothing.
    """
    given = {k: v for k, v in (("bandwidth", bandwidth), ("lam", lam), ("model", model),
                               ("crt_resamples", m), ("residual_bound", residual_bound))
             if v is not None}
    if isinstance(ledger, LedgerTarget):
        target = ledger
    elif ledger is not None:
        if dataset_id is None:
            raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")
        target = LedgerTarget(Path(ledger), dataset_id)
    else:
        target = IN_MEMORY
    return discover_private(
        dataset, ALGORITHM, epsilon=epsilon, delta=0.0, test=test, alpha=alpha,
        noise_seed=seed, max_depth=max_depth,
        params=PrivateCIPCParams(plan_size=plan_size, test_epsilon=test_epsilon),
        test_options=given, ledger=target, background=background, progress=progress)

"""PC-stable with a private CI test for continuous data (PrivGCM or PrivCRT).

Python API::

    from dpcg.citests.continuous_pc import private_pc_continuous
    res = private_pc_continuous(dataset, test="privgcm", epsilon=10.0)
    res.pc.cpdag, res.guarantee, res.spent, res.plan

CLI (registered in :mod:`dpcg.pc.registry` when this module is imported)::

    dpcg discover --data t.csv --schema s.json --algorithm private-ci-pc --test privgcm \\
        --epsilon 10 [--plan-size K | --test-epsilon E] [--bandwidth 0.5] [--lam 1]
    dpcg discover ... --algorithm private-ci-pc --test privcrt --model-x law.json

Every CI test is one self-contained private release (PrivGCM: a vector Laplace release
of the residual products; PrivCRT: one Report-Noisy-Max release of a rank), charged by
the session before the data is touched. The total ``epsilon`` is split over a **public**
plan of ``K`` tests (``split_epsilon``; default ``K`` from the number of variables as for
Laplace-PC); the basic filter enforces the total under fully adaptive composition, and
when it refuses, PC stops and returns the graph so far (``budget_exhausted``).

PrivCRT needs the public law of every ``X_i`` given every conditioning set: here a
public joint Gaussian ``N(mean, cov)`` (``--model-x law.json`` with keys ``mean`` and
``cov``; e.g. estimated from public data). It must not be estimated from the private
dataset.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcg.citests.crt import DEFAULT_CRT_LAMBDA, GaussianModelX, PrivCRTTest
from dpcg.citests.gcm import DEFAULT_BANDWIDTH, DEFAULT_LAMBDA, GCMTest, PrivGCMTest, check_epsilon
from dpcg.errors import AlgorithmError, CITestError

TESTS = ("privgcm", "privcrt")


@dataclass
class ContinuousPCResult:
    """PC result plus the privacy guarantee, what was spent and the public plan."""

    pc: Any  # dpcg.pc.engine.PCResult
    guarantee: dict[str, Any]
    spent: dict[str, Any]
    plan: dict[str, Any]
    ledger: dict[str, Any] | None

    def extra(self) -> dict[str, Any]:
        return {"privacy": {"guarantee": self.guarantee, "spent": self.spent,
                            "plan": self.plan},
                "ledger": self.ledger, "budget_exhausted": self.pc.budget_exhausted}


def _check_dataset(dataset: Any) -> None:
    if not getattr(dataset, "is_continuous", False):
        raise CITestError("PrivGCM / PrivCRT need an all-continuous schema with public bounds")


def _bounds(dataset: Any) -> list[tuple[float, float]]:
    return [(float(c.lower), float(c.upper)) for c in dataset.schema.columns]


def load_model_x(path: str | Path) -> GaussianModelX:
    """A public Gaussian law from JSON ``{"mean": [...], "cov": [[...], ...]}``."""
    try:
        doc = json.loads(Path(path).read_text())
        return GaussianModelX.from_arrays(np.asarray(doc["mean"], dtype=np.float64),
                                          np.asarray(doc["cov"], dtype=np.float64))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CITestError(f"--model-x {path}: expected JSON with 'mean' and 'cov' ({exc})"
                          ) from None


def build_private_test(
    dataset: Any,
    test: str,
    session: Any,
    test_epsilon: float,
    *,
    alpha: float = 0.05,
    bandwidth: float = DEFAULT_BANDWIDTH,
    lam: float | None = None,
    model: Any = None,
    m: int | None = None,
    residual_bound: float = 1.0,
) -> PrivGCMTest | PrivCRTTest:
    """The CI tester ``test`` on ``dataset`` charging ``test_epsilon`` per test."""
    _check_dataset(dataset)
    if test == "privgcm":
        return PrivGCMTest(dataset.values, _bounds(dataset), session, test_epsilon,
                           bandwidth=bandwidth, lam=DEFAULT_LAMBDA if lam is None else lam,
                           alpha=alpha, names=dataset.names)
    if test == "privcrt":
        if model is None:
            raise CITestError(
                "privcrt needs the public model-X law of the variables (model= / --model-x)"
            )
        return PrivCRTTest(dataset.values, _bounds(dataset), session, test_epsilon, model,
                           m=m, residual_bound=residual_bound, bandwidth=bandwidth,
                           lam=DEFAULT_CRT_LAMBDA if lam is None else lam, alpha=alpha,
                           names=dataset.names)
    raise CITestError(f"test={test!r}: choose one of {TESTS}")


def private_pc_continuous(
    dataset: Any,
    *,
    test: str = "privgcm",
    epsilon: float,
    plan_size: int | None = None,
    test_epsilon: float | None = None,
    alpha: float = 0.05,
    bandwidth: float = DEFAULT_BANDWIDTH,
    lam: float | None = None,
    model: Any = None,
    m: int | None = None,
    residual_bound: float = 1.0,
    seed: int | None = None,
    ledger: str | Path | None = None,
    dataset_id: str | None = None,
    max_depth: int | None = None,
    background: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> ContinuousPCResult:
    """PC-stable with PrivGCM / PrivCRT on a continuous dataset (see the module docstring).

    Every input is validated before the session opens, so bad input spends nothing.
    """
    from accounting.costs import Budget, split_epsilon
    from dpcg.pc.engine import pc_stable
    from dpcg.private.common import open_session
    from dpcg.private.planning import default_plan_size

    eps = check_epsilon(epsilon)
    p = len(dataset.names)
    if plan_size is not None and test_epsilon is not None:
        raise AlgorithmError("give at most one of plan_size and test_epsilon")
    if test_epsilon is not None:
        per_test = check_epsilon(test_epsilon)
        if per_test > eps:
            raise AlgorithmError(f"test_epsilon={per_test} exceeds the total epsilon={eps}")
        K = math.floor(eps / per_test)
    else:
        K = default_plan_size(p) if plan_size is None else plan_size
        if isinstance(K, bool) or not isinstance(K, int) or K < 1:
            raise AlgorithmError(f"plan_size must be a positive int, got {plan_size!r}")
        per_test = float(split_epsilon(eps, K))
    # Validate the tester (bounds, values, bandwidth, lam, m, ...) before charging.
    probe = build_private_test(dataset, test, None, per_test, alpha=alpha, bandwidth=bandwidth,
                               lam=lam, model=model, m=m, residual_bound=residual_bound)
    budget = Budget(eps)
    handle = open_session(budget, "basic", seed=seed, ledger=ledger, dataset_id=dataset_id,
                          description=f"dpcg private-ci-pc/{test}")
    session = handle.session
    probe.session = session
    status = "error"
    try:
        result = pc_stable(probe, tuple(dataset.names), max_depth=max_depth,
                           background=background, progress=progress)
        status = "budget-exhausted" if result.budget_exhausted else "completed"
    finally:
        handle.close(status)
    g = session.guarantee()
    spent = session.spent()
    ledger_info = None
    if handle.ledger_path is not None:
        ledger_info = {"path": handle.ledger_path, "run_id": handle.run_id,
                       "dataset_id": dataset_id}
    plan = {"test": test, "plan_size": K, "test_epsilon": per_test,
            "bandwidth": probe.krr.bandwidth, "lam": probe.krr.lam, "alpha": alpha,
            "releases": session.releases}
    if isinstance(probe, PrivCRTTest):
        plan.update({"m": probe.m, "residual_bound": probe.residual_bound})
    else:
        plan["sensitivity_c_lambda"] = probe.sensitivity
    return ContinuousPCResult(
        pc=result,
        guarantee={"epsilon": float(g.epsilon), "delta": float(g.delta),
                   "relation": str(getattr(g.relation, "value", g.relation)),
                   "rule": str(g.rule)},
        spent={"epsilon": float(spent.epsilon) if spent.epsilon is not None else None,
               "delta": float(spent.delta)},
        plan=plan,
        ledger=ledger_info,
    )


# ---------------------------------------------------------------------------------
# Registry hook: dpcg discover --algorithm private-ci-pc --test privgcm|privcrt
# ---------------------------------------------------------------------------------


def _register() -> None:
    from dpcg.pc.registry import (
        AlgorithmRun,
        AlgorithmSpec,
        Argument,
        RunContext,
        TestContext,
        TestSpec,
        register_algorithm,
        register_test,
    )

    own_args = (
        Argument.of("--bandwidth", type=float, default=None,
                    help=f"public Gaussian kernel bandwidth on the [-1, 1] scale of Z "
                         f"(privgcm/privcrt/gcm; default {DEFAULT_BANDWIDTH})"),
        Argument.of("--lam", type=float, default=None,
                    help="public KRR ridge lam >= 1e-3 (privgcm default 1, privcrt 10)"),
        Argument.of("--model-x", dest="model_x", metavar="JSON", default=None,
                    help="privcrt: public Gaussian law {'mean': [...], 'cov': [[...]]}"),
        Argument.of("--crt-resamples", dest="crt_resamples", type=int, default=None,
                    help="privcrt: number m of model-X resamples (default ceil(1/alpha)-1)"),
        Argument.of("--residual-bound", dest="residual_bound", type=float, default=None,
                    help="privcrt: public clip B_r of the X residuals (default 1)"),
    )
    shared = (
        Argument.of("--epsilon", type=float, help="TOTAL privacy budget epsilon of the run"),
        Argument.of("--ledger", metavar="PATH", help="record the run in this ledger file"),
        Argument.of("--dataset-id", metavar="ID", dest="dataset_id",
                    help="declared id of the dataset in the ledger"),
        Argument.of("--plan-size", type=int, dest="plan_size", metavar="K",
                    help="public plan size (number of tests the budget is split over)"),
        Argument.of("--test-epsilon", type=float, dest="test_epsilon", metavar="E",
                    help="budget of one test instead of --plan-size"),
    )

    def _opt(args: argparse.Namespace, name: str) -> Any:
        return getattr(args, name, None)

    def _kwargs(args: argparse.Namespace) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if _opt(args, "bandwidth") is not None:
            out["bandwidth"] = args.bandwidth
        if _opt(args, "lam") is not None:
            out["lam"] = args.lam
        if _opt(args, "crt_resamples") is not None:
            out["m"] = args.crt_resamples
        if _opt(args, "residual_bound") is not None:
            out["residual_bound"] = args.residual_bound
        if _opt(args, "model_x") is not None:
            out["model"] = load_model_x(args.model_x)
        return out

    def run(ctx: RunContext) -> AlgorithmRun:
        a = ctx.args
        if ctx.test_name not in TESTS:
            raise AlgorithmError(
                f"--algorithm private-ci-pc runs one of {TESTS}, not --test {ctx.test_name}"
            )
        eps = _opt(a, "epsilon")
        if eps is None:
            raise AlgorithmError("--algorithm private-ci-pc needs --epsilon (the total budget)")
        ledger = _opt(a, "ledger")
        if ledger is not None and _opt(a, "dataset_id") is None:
            raise AlgorithmError("--ledger needs --dataset-id (the dataset's declared id)")
        res = private_pc_continuous(
            ctx.dataset, test=ctx.test_name, epsilon=eps, plan_size=_opt(a, "plan_size"),
            test_epsilon=_opt(a, "test_epsilon"), alpha=ctx.alpha, seed=_opt(a, "seed"),
            ledger=ledger, dataset_id=_opt(a, "dataset_id"), max_depth=ctx.max_depth,
            background=ctx.background, progress=ctx.progress, **_kwargs(a),
        )
        return AlgorithmRun(res.pc, res.extra())

    register_algorithm(AlgorithmSpec(
        name="private-ci-pc",
        run=run,
        description="PC-stable where every test is a private continuous CI test (privgcm, "
                    "privcrt); total --epsilon split over a public plan of K tests",
        arguments=shared + own_args,
        private=True,
    ))

    def build_private(name: str) -> Callable[[TestContext], Any]:
        def build(ctx: TestContext) -> Any:
            if ctx.session is None:
                raise CITestError(f"--test {name} is private: it needs a session")
            per_test = _opt(ctx.args, "test_epsilon")
            if per_test is None:
                raise CITestError(f"--test {name} needs --test-epsilon (budget of one test)")
            return build_private_test(ctx.dataset, name, ctx.session, per_test,
                                      alpha=ctx.alpha, **_kwargs(ctx.args))
        return build

    def build_gcm(ctx: TestContext) -> Any:
        _check_dataset(ctx.dataset)
        kw = {k: v for k, v in _kwargs(ctx.args).items() if k in ("bandwidth", "lam")}
        return GCMTest(ctx.dataset.values, _bounds(ctx.dataset), alpha=ctx.alpha,
                       names=ctx.dataset.names, **kw)

    register_test(TestSpec(
        name="privgcm", build=build_private("privgcm"),
        description="PrivGCM (Kalemaj et al.): KRR residual products + vector Laplace",
        arguments=own_args + shared[4:], private=True, data="continuous"))
    register_test(TestSpec(
        name="privcrt", build=build_private("privcrt"),
        description="PrivCRT (Kalemaj et al.): model-X CRT rank by Report Noisy Max; "
                    "needs --model-x",
        arguments=own_args + shared[4:], private=True, data="continuous"))
    register_test(TestSpec(
        name="gcm", build=build_gcm,
        description="generalised covariance measure with KRR (non-private)",
        arguments=own_args, data="continuous"))


_register()

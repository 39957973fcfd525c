"""Registers the private algorithms in :mod:`dpcg.pc.registry` (``dpcg discover
--algorithm laplace-pc|svt-pc|priv-pc|em-pc|curate``).

Imported by :mod:`dpcg.citests.private` (a plugin module the registry loads), so the
CLI finds the algorithms without any other file being edited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounting.costs import Budget
from dpcg.errors import AlgorithmError
from dpcg.pc.registry import AlgorithmRun, AlgorithmSpec, Argument, RunContext, register_algorithm
from dpcg.private.common import ALGORITHMS

#: Ledger file used when ``--ledger`` is not given (and ``--no-ledger`` is not set).
DEFAULT_LEDGER = "dpcg-ledger.sqlite"

ARGUMENTS = (
    Argument.of("--epsilon", type=float, help="TOTAL privacy budget epsilon of the run"),
    Argument.of("--delta", type=float,
                help="TOTAL privacy budget delta (default 1e-6; 0 forces pure DP)"),
    Argument.of("--ledger", metavar="PATH",
                help=f"record the run in this ledger file (default: ./{DEFAULT_LEDGER})"),
    Argument.of("--no-ledger", action="store_true", dest="no_ledger",
                help="keep the run's entries in memory only (experiments; nothing durable)"),
    Argument.of("--dataset-id", metavar="ID", dest="dataset_id",
                help="declared id of the dataset in the ledger (required for --data; "
                     "bundled data defaults to bundled:NAME:rows=N:seed=S)"),
    Argument.of("--lifetime-epsilon", type=float, dest="lifetime_epsilon", metavar="E",
                help="lifetime epsilon of a dataset id the ledger does not know yet "
                     "(default: this run's epsilon); ignored for registered ids"),
    Argument.of("--lifetime-delta", type=float, dest="lifetime_delta", metavar="D",
                help="lifetime delta for a new dataset id (default: this run's delta)"),
    Argument.of("--noise-seed", type=int, dest="noise_seed", metavar="S",
                help="seed the privacy noise (reproducible runs; marked as seeded in the "
                     "ledger). Default: a secure random seed. --seed only seeds the data "
                     "sample of a bundled network"),
    Argument.of("--plan-size", type=int, dest="plan_size", metavar="K",
                help="public plan size: tests (laplace-pc), instances (svt-pc), rounds "
                     "(priv-pc); default from the number of variables"),
    Argument.of("--test-epsilon", type=float, dest="test_epsilon", metavar="E",
                help="budget of one test/instance/round instead of --plan-size"),
    Argument.of("--rule", choices=("basic", "zcdp"),
                help="composition rule (default: chosen from public information)"),
)

#: CLI test names that map onto a private score.
PRIVATE_ALIASES = {"g2": "cmi"}

DESCRIPTIONS = {
    "laplace-pc": "PC with every test a Laplace (basic) or Gaussian (zCDP) release of the "
                  "score; budget split over a public plan of K tests",
    "svt-pc": "PC with the tests streamed through the sparse vector technique "
              "(positive = independent; new instance after each positive)",
    "priv-pc": "Priv-PC sieve-and-examine: subsampled SVT sieve + Laplace examine per round",
    "em-pc": "EM-PC: exponential mechanism picks how many and which edges per level",
    "curate": "CURATE: adaptive per-order budgets (SLSQP) under the zCDP filter",
}


def _runner(algorithm: str) -> Callable[[RunContext], AlgorithmRun]:
    def run(ctx: RunContext) -> AlgorithmRun:
        from dpcg.citests.private import SCORES, source_for_dataset
        from dpcg.private.api import run_private
        from dpcg.private.common import PrivateSettings

        a = ctx.args
        # The private G-test: G^2 = 2 n CMI, so releasing n CMI against chi2(df)/2 is the
        # G-test's decision rule with noise.
        test = PRIVATE_ALIASES.get(ctx.test_name, ctx.test_name)
        if test not in SCORES:
            raise AlgorithmError(
                f"--test {ctx.test_name}: the private algorithms release one of {SCORES} "
                f"(or g2, the private G-test = cmi); kendall-split is recommended"
            )
        eps = getattr(a, "epsilon", None)
        if eps is None:
            raise AlgorithmError(f"--algorithm {algorithm} needs --epsilon (the total budget)")
        delta = getattr(a, "delta", None)
        ledger, dataset_id, lifetime = _ledger_target(a, eps, 1e-6 if delta is None else delta)
        settings = PrivateSettings(
            epsilon=eps, delta=1e-6 if delta is None else delta, test=test,
            alpha=ctx.alpha, threshold=getattr(a, "threshold", None),
            plan_size=getattr(a, "plan_size", None),
            test_epsilon=getattr(a, "test_epsilon", None), rule=getattr(a, "rule", None),
            seed=getattr(a, "noise_seed", None), max_depth=ctx.max_depth,
        )
        from dpcg.private.common import validate_settings

        validate_settings(settings)
        source = source_for_dataset(ctx.dataset, test, alpha=ctx.alpha,
                                    threshold=settings.threshold)
        res = run_private(algorithm, source, ctx.names, settings, ledger=ledger,
                          dataset_id=dataset_id, lifetime=lifetime, background=ctx.background,
                          progress=ctx.progress)
        extra = res.extra()
        extra["private_test"] = test
        return AlgorithmRun(res.pc, extra)

    return run


def _ledger_target(
    a: Any, epsilon: float, delta: float
) -> tuple[str | None, str | None, Budget | None]:
    """Where the run is recorded: (ledger path, dataset id, lifetime for a new id).

    Every private CLI run is recorded in a durable ledger unless ``--no-ledger`` is
    given. The dataset id is declared by the user; for a bundled network it defaults to
    the public recipe of the sample (name, rows, seed), never to a hash of the rows.
    """
    if getattr(a, "no_ledger", False):
        if getattr(a, "ledger", None) is not None:
            raise AlgorithmError("--no-ledger and --ledger exclude each other")
        return None, None, None
    ledger = getattr(a, "ledger", None) or DEFAULT_LEDGER
    dataset_id = getattr(a, "dataset_id", None)
    if dataset_id is None:
        if getattr(a, "dataset", None) is None:
            raise AlgorithmError(
                "--dataset-id: a private run on --data is recorded in the ledger under the "
                "dataset's declared id; pass --dataset-id ID (or --no-ledger for a "
                "throw-away experiment)"
            )
        from dpcg.cli.discover import DEFAULT_ROWS

        rows = DEFAULT_ROWS if a.rows is None else a.rows
        seed = 0 if a.seed is None else a.seed
        dataset_id = f"bundled:{a.dataset}:rows={rows}:seed={seed}"
    life_eps = getattr(a, "lifetime_epsilon", None)
    life_delta = getattr(a, "lifetime_delta", None)
    lifetime = Budget(epsilon if life_eps is None else life_eps,
                      delta if life_delta is None else life_delta)
    return ledger, dataset_id, lifetime


def register() -> None:
    from dpcg.citests.private import DEFAULT_SCORE

    for name in ALGORITHMS:
        register_algorithm(AlgorithmSpec(name=name, run=_runner(name),
                                         description=DESCRIPTIONS[name], arguments=ARGUMENTS,
                                         private=True, default_test=DEFAULT_SCORE))


_done: list[Any] = []
if not _done:
    register()
    _done.append(True)

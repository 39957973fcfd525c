"""cov-PC: one private release of a second-moment matrix, then PC-stable on it for free.

Python API (the one public function, :func:`dpcg.discover`)::

    import dpcg
    res = dpcg.discover(dataset, algorithm="cov-pc", epsilon=1.0, delta=1e-6,
                        dataset_id="survey")                          # rank route (default)
    res = dpcg.discover(dataset, algorithm="cov-pc", test="cov-pearson", epsilon=1.0,
                        ledger=dpcg.NO_LEDGER)                        # declared-bounds route
    res.cpdag, res.guarantee, res.to_json()["plan"]

CLI::

    dpcg discover --data t.csv --schema s.json --dataset-id ID --algorithm cov-pc \\
        --epsilon 1 [--delta 1e-6] [--test cov-rank | cov-pearson] [--null-draws 200]

The run makes exactly ONE release: the Gaussian mechanism
(:class:`accounting.mechanisms.Gaussian`, zCDP, ``rho = Budget(eps, delta).rho()``, the
whole budget) on the moment vector of :mod:`dpcg.stats.suffstat`, charged and written
to the ledger before the data is touched. Every CI test of PC-stable is then computed
from the released vector (:class:`dpcg.citests.noisy_gaussian.NoisyMomentTest`), which
is post-processing: the number of tests, their order and the depth cost nothing.

* ``--test cov-rank`` (default): centred midranks scaled to ``[-1, 1]``, tie-corrected
  Spearman matrix, Gaussian-copula map in all-continuous tests. Needs no bounds; ordinal and
  binary columns enter with their ties, nominal columns of ``K > 2`` categories as
  ``K - 1`` indicators. Sensitivity :func:`dpcg.stats.suffstat.rank_moment_sensitivity`.
* ``--test cov-pearson``: columns clipped to their declared bounds and scaled to
  ``[-1, 1]``; means and second moments released. Sensitivity
  :func:`dpcg.stats.suffstat.pearson_moment_sensitivity`.

Guarantee: ``rho``-zCDP under replace-one with ``n`` public, converted to the run's
``(epsilon, delta)`` by the zcdp filter. Proof note: ``docs/privacy/algorithm-cov-pc.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from accounting.errors import InvalidParameterError
from accounting.mechanisms import Gaussian
from accounting.session import Session
from dpcg.citests.noisy_gaussian import NULLS, NoisyMomentTest, ScoreLayout, score_matrix
from dpcg.citests.registry import NoOptions, TestSpec, option, register_test
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.errors import AlgorithmError
from dpcg.private.contract import RunSettings, ScoreCache
from dpcg.private.registry import register_algorithm
from dpcg.stats.suffstat import (
    moment_vector,
    pearson_moment_sensitivity,
    rank_moment_sensitivity,
    upper_size,
)

__all__ = ["ALGORITHM", "CovPC", "CovPCParams", "CovPlan", "CovSource", "auto_choice"]

#: ``--test`` name -> route of :func:`dpcg.citests.noisy_gaussian.score_matrix`.
ROUTE_OF = {"cov-rank": "rank", "cov-pearson": "pearson"}
DEFAULT_DRAWS = 200
DEFAULT_NULL = "delta"


@dataclass(frozen=True)
class CovPCParams:
    """cov-PC's options (public hyper-parameters)."""

    null_draws: int | None = option(
        None, type=int, metavar="B",
        help=f"replicates of the public release noise used for each test's null with "
             f"--null simulated, and for the tests that --null auto samples "
             f"(post-processing; default {DEFAULT_DRAWS}, at least 20)")
    null: str | None = option(
        None, type=str, metavar="delta|simulated|auto",
        help="how each test's null includes the release noise: 'delta' (default; its "
             "first-order covariance from the public sigma, chi-square reference; a test "
             "whose noise sd on a partial correlation exceeds 0.5 is swamped and gets a "
             "uniform p-value, exact level alpha), 'simulated' (the first version's "
             "Monte-Carlo replicates of the noise only) or 'auto' (experimental: the "
             "delta null, except that swamped tests get Monte-Carlo replicates of "
             "sampling and noise through the whole post-processing; not calibrated)")

    def __post_init__(self) -> None:
        v = self.null_draws
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 20
                              or v > 100_000):
            raise AlgorithmError(f"null_draws: expected an integer in [20, 100000], got {v!r}")
        if self.null is not None and self.null not in NULLS:
            raise AlgorithmError(f"null: choose one of {NULLS}, got {self.null!r}")

    @property
    def null_kind(self) -> str:
        return DEFAULT_NULL if self.null is None else self.null

    @property
    def draws(self) -> int:
        return DEFAULT_DRAWS if self.null_draws is None else self.null_draws


@dataclass(frozen=True)
class CovSource:
    """The exact score matrix (nothing released), its layout and the public ``n``."""

    scores: np.ndarray
    layout: ScoreLayout
    route: str
    n: int
    alpha: float
    names: tuple[str, ...]


@dataclass(frozen=True)
class CovPlan:
    """One Gaussian release of the whole budget, then free tests."""

    rule: str
    max_depth: int | None
    mechanism: Gaussian
    route: str
    dimension: int
    draws: int
    null: str = DEFAULT_NULL

    def describe(self) -> dict[str, object]:
        return {"rule": self.rule, "route": self.route, "releases_planned": 1,
                "dimension": self.dimension, "sensitivity_l2": self.mechanism.l2_sensitivity,
                "sigma": self.mechanism.sigma, "null": self.null,
                "null_draws": self.draws if self.null == "simulated" else 0,
                "max_depth": self.max_depth}


class CovPC:
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``cov-pc``."""

    name = "cov-pc"
    description = ("one zCDP release of a rank (Spearman) or bounded second-moment matrix, "
                   "then PC-stable on it as post-processing; continuous, ordinal and mixed "
                   "schemas")
    params = CovPCParams
    tests: tuple[str, ...] = tuple(ROUTE_OF)
    default_test = "cov-rank"
    default_delta = 1e-6
    proof_note = "docs/privacy/algorithm-cov-pc.md"

    def resolve_test(self, test: str) -> str:
        if test not in ROUTE_OF:
            raise AlgorithmError(f"--algorithm cov-pc runs one of {tuple(ROUTE_OF)}, not "
                                 f"--test {test}")
        return test

    def source(self, dataset: Dataset, settings: RunSettings, test_options: object,
               cache: ScoreCache | None = None) -> CovSource:
        if cache is not None:
            raise AlgorithmError("cache: cov-pc has no score cache")
        route = ROUTE_OF[self.resolve_test(settings.test)]
        scores, layout = score_matrix(dataset, route)  # refuses bad values, uncharged
        return CovSource(scores, layout, route, dataset.n, settings.alpha,
                         tuple(dataset.names))

    def plan(self, params: CovPCParams, settings: RunSettings, source: CovSource) -> CovPlan:
        if settings.delta <= 0:
            raise AlgorithmError("delta: cov-pc releases a Gaussian mechanism (zCDP); give "
                                 "delta > 0 (default 1e-6)")
        q = source.layout.q
        if source.route == "pearson":
            sens = pearson_moment_sensitivity(source.n, q)
        else:
            sens = rank_moment_sensitivity(source.n, q, source.layout.n_two_valued)
        try:
            mech = Gaussian.for_rho(sens, settings.budget().rho())
        except InvalidParameterError as exc:
            raise AlgorithmError(f"epsilon: too small for one Gaussian release ({exc})"
                                 ) from None
        return CovPlan("zcdp", settings.max_depth, mech, source.route,
                       upper_size(q, source.route == "pearson"), params.draws,
                       params.null_kind)

    def tester(self, plan: CovPlan, source: CovSource, session: Session) -> NoisyMomentTest:
        with_means = source.route == "pearson"
        released = session.release(
            plan.mechanism, lambda: moment_vector(source.scores, with_means),
            purpose=f"cov-pc: {source.route} moment matrix ({plan.dimension} entries)")
        return NoisyMomentTest(np.asarray(released, dtype=np.float64), source.layout,
                               source.n, source.route, plan.mechanism.sigma,
                               alpha=source.alpha, draws=plan.draws,
                               rng=session.auxiliary_generator(), names=source.names,
                               null=plan.null)

    def usage(self, tester: NoisyMomentTest) -> Mapping[str, object]:
        return {"releases": 1}


ALGORITHM = register_algorithm(CovPC())


def auto_choice(schema: Schema) -> tuple[str, str] | None:
    """``(algorithm, test)`` for ``--algorithm auto`` on ``schema``: ``("cov-pc",
    "cov-rank")`` when any column is continuous (continuous or mixed schemas: the rank
    route needs no bounds and takes ordinal, binary and nominal columns), ``None`` for
    an all-discrete schema (the discrete family decides). A function of the public
    schema only."""
    if not isinstance(schema, Schema):
        raise AlgorithmError(f"schema: expected a Schema, got {type(schema).__name__}")
    if schema.is_discrete:
        return None
    return ALGORITHM.name, ALGORITHM.default_test

for _name, _route in ROUTE_OF.items():
    register_test(TestSpec(
        name=_name, options=NoOptions, private=True, data="any",
        description=f"cov-pc's {_route} route: one released moment matrix, Gaussian "
                    "partial-correlation tests whose null includes the release noise"))

"""Private CI statistics for the private PC family (Laplace-PC, SVT-PC, Priv-PC, EM-PC,
CURATE).

A :class:`StatisticSource` computes one exact **dependence score** ``s(x, y | S)``
(larger = more dependent) on a discrete dataset, together with its **public**
sensitivity and decision threshold ``T``: a test says *independent* when the (noisy)
score is at most ``T``. Five scores are offered:

* ``kendall-z``: ``|z|`` of the conditional Kendall z with the public
  normaliser ``sqrt(9n/4)`` (:func:`dpcg.stats.kendall.conditional_kendall_z`); its
  sensitivity is the registered one (``|.|`` is 1-Lipschitz). ``T = z_{1-alpha/2}``.
  PRIVACY.md section 7: noise on the ``z`` scale keeps strong dependences far above
  ``T``.
* ``kendall-split`` (default): the largest ``|z|`` over the binary splits of x and y
  (:func:`dpcg.stats.kendall.split_kendall_z`): sensitivity ``6/sqrt(n)`` for every
  pair (the binary bound), and it sees non-monotone dependence between categorical
  variables. ``T = z_{1-alpha/2}``; under conditional independence every split's
  ``z`` has variance at most ``9/16`` (proof note), so each split alone exceeds ``T``
  with probability about ``P(|N(0,1)| > 2.61) = 0.009`` at most.
* ``kendall-p``: the references' variant, noise on the p-value. The score is
  ``1 - p = erf(|z| / sqrt 2)`` with ``p = 2 (1 - Phi(|z|))``, which is
  ``sqrt(2/pi)``-Lipschitz in ``|z|``, so its sensitivity is ``sqrt(2/pi) Delta_z``;
  ``T = 1 - alpha``. Kept for comparison only.
* ``cmi``: ``n CMI = G^2 / 2`` with the registered bound ``2 g(n-1)`` (replace-one);
  ``T = chi2_{1-alpha}(df) / 2`` with ``df = (cx-1)(cy-1) prod_{s in S} c_s`` from the
  declared cardinalities (public).
* ``g2-distance``: the signed number of replaced rows to the G-test's decision at level
  ``alpha`` (:func:`dpcg.stats.g2_distance.g2_distance`): sensitivity 1 (replace-one
  only), ``T = 1/2``; without noise its decisions are G^2's. Slower per test than the
  others (a search over radii), and at ``eps = 1`` weaker than ``kendall-split`` on most
  networks (``docs/benchmarks/utility.md``).

Each score is a registered :class:`dpcg.stats.scores.Score` (its value on a stratified
table, its registered bound per pair, its threshold rule); a :class:`StatisticSource`
is a table engine (:mod:`dpcg.engines.base`: where the tables are counted, ``numpy`` by
default) plus one score.

Releases go through :meth:`accounting.session.Session.release` with the mechanism the
algorithm chose (:class:`ReleasePlan`): ``Laplace(Delta, eps)`` under basic
composition or ``Gaussian(Delta, sigma)`` under zCDP. :class:`PrivateCITest` is the
per-test release (Laplace-PC); :class:`ThresholdCITest` is the same decision rule
without noise (the non-private PC "with the same test").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from accounting.mechanisms import Gaussian, Laplace
from accounting.relations import Relation
from accounting.session import Session
from dpcg.citests.base import CIResult, CITest, validate_query
from dpcg.citests.registry import TestContext, TestSpec, option, register_test
from dpcg.engines.base import (
    DEFAULT_ENGINE,
    NumpyEngine,
    Query,
    TableEngine,
    WarmsTables,
    get_engine,
)
from dpcg.errors import CITestError, StatisticInputError
from dpcg.stats.contingency import StrataTable
from dpcg.stats.scores import (
    CMI_SPEC,
    KENDALL_SPEC,
    P_LIPSCHITZ,
    SPLIT_SPEC,
    Score,
    get_score,
    pair_cardinality,
    score_names,
    widest_pair_cardinality,
    z_threshold,
)

#: Queries per in-memory engine call in :meth:`StatisticSource.prefetch` (memory only).
PREFETCH_CHUNK = 16

__all__ = [
    "CMI_SPEC",
    "DEFAULT_ALPHA",
    "DEFAULT_SCORE",
    "KENDALL_SPEC",
    "P_LIPSCHITZ",
    "SCORES",
    "SPLIT_SPEC",
    "DiscreteDataset",
    "PrivateCITest",
    "ReleasePlan",
    "StatisticSource",
    "ThresholdCITest",
    "pair_cardinality",
    "source_for_dataset",
    "widest_pair_cardinality",
    "z_threshold",
]

ScoreName = Literal["kendall-split", "kendall-z", "kendall-p", "cmi", "g2-distance"]
#: Names of the registered scores (:mod:`dpcg.stats.scores`).
SCORES: tuple[str, ...] = score_names()

#: The default score of the private family (and of the non-private PC "with the same
#: test").
DEFAULT_SCORE = "kendall-split"

DEFAULT_ALPHA = 0.05

#: Exact full-data scores by ``(x, y, S)``.
ScoreCache = dict[tuple[int, int, tuple[int, ...]], float]


class DiscreteDataset(Protocol):
    """What :func:`source_for_dataset` reads from a :class:`dpcg.data.Dataset`."""

    @property
    def codes(self) -> NDArray[np.integer]: ...

    @property
    def cardinalities(self) -> tuple[int | None, ...]: ...

    @property
    def names(self) -> tuple[str, ...]: ...


class StatisticSource:
    """Exact dependence scores of one discrete dataset, with public sensitivities and
    thresholds: a table engine (:mod:`dpcg.engines.base`, where the tables are counted)
    plus a registered score (:mod:`dpcg.stats.scores`, what is computed from a table,
    its sensitivity and its threshold rule).

    ``codes``: ``(p, n)`` array of category codes (validated against the declared
    ``cardinalities``), counted by the in-memory ``numpy`` engine; :meth:`from_engine`
    builds a source on any engine. Exact full-data scores are cached by ``(x, y, S)``
    (the cache holds exact statistics, never released values; sharing it between runs
    on the same data only saves time).
    """

    def __init__(
        self,
        codes: NDArray[np.generic],
        cardinalities: Sequence[int | None],
        score: str = DEFAULT_SCORE,
        *,
        alpha: float = DEFAULT_ALPHA,
        threshold: float | None = None,
        relation: Relation | str = Relation.REPLACE_ONE,
        cache: ScoreCache | None = None,
        check: bool = True,
        names: Sequence[str] | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> None:
        scorer = _score(score)
        _check_alpha(alpha)
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise CITestError(f"codes: expected a (p, n) array with n >= 2, got {arr.shape}")
        if arr.dtype.kind not in "ui":
            raise CITestError(f"codes: expected integer category codes, got {arr.dtype}")
        cards = _declared(cardinalities, arr.shape[0])
        if check:
            lo = arr.min(axis=1)
            hi = arr.max(axis=1)
            for j, c in enumerate(cards):
                if int(lo[j]) < 0 or int(hi[j]) >= c:
                    raise CITestError(
                        f"column {j} has a code outside its declared range [0, {c})"
                    )
        _check_threshold(threshold)
        try:
            tables = get_engine(engine).from_codes(arr, cards, names or _default_names(cards))
        except StatisticInputError as exc:
            raise CITestError(str(exc)) from None
        self._setup(tables, scorer, float(alpha), Relation.parse(relation),
                    None if threshold is None else float(threshold),
                    {} if cache is None else cache, {})

    @classmethod
    def from_engine(
        cls,
        engine: TableEngine,
        score: str = DEFAULT_SCORE,
        *,
        alpha: float = DEFAULT_ALPHA,
        threshold: float | None = None,
        relation: Relation | str = Relation.REPLACE_ONE,
        cache: ScoreCache | None = None,
    ) -> StatisticSource:
        """A source whose tables ``engine`` counts (the engine validated its data)."""
        scorer = _score(score)
        _check_alpha(alpha)
        if engine.n < 2:
            raise CITestError(f"engine: expected n >= 2 rows, got {engine.n}")
        _declared(engine.cardinalities, len(engine.cardinalities))
        _check_threshold(threshold)
        src = cls.__new__(cls)
        src._setup(engine, scorer, float(alpha), Relation.parse(relation),
                   None if threshold is None else float(threshold),
                   {} if cache is None else cache, {})
        return src

    def _setup(self, engine: TableEngine, score: Score, alpha: float, relation: Relation,
               threshold: float | None, cache: ScoreCache,
               sens: dict[tuple[int, int, bool], float]) -> None:
        self.engine = engine
        self.scorer = score
        self.cardinalities: tuple[int, ...] = tuple(engine.cardinalities)
        self.score_name = score.name
        self.alpha = alpha
        self.relation = relation
        self.fixed_threshold = threshold
        self.cache = cache
        self.p = len(self.cardinalities)
        self.n = int(engine.n)
        self._sens = sens  # (rows, key, marginal) -> bound: public, shared with subsets
        # queries announced by expect(), counted by the engine (warm) on the first miss
        self._expected: list[Query] = []
        try:
            self.sensitivity()  # a score without a bound under the relation is refused here
        except StatisticInputError as exc:
            raise CITestError(
                f"test: the score {score.name!r} has no registered bound under "
                f"{relation.value}") from exc

    # ---------------------------------------------------------------- public info
    def sensitivity(self, m: int | None = None, pair: tuple[int, int] | None = None,
                    S: tuple[int, ...] | None = None) -> float:
        """Sensitivity of the score on ``m`` rows (default ``n``) under the relation.

        With ``pair = (x, y)``: the bound for that pair's tests, which for the Kendall
        scores depends on the declared cardinalities ``c = min(cx, cy)`` (public; e.g.
        ``6/sqrt(n)`` instead of ``9/sqrt(n)`` when x or y is binary). Without: the
        largest pair bound, valid for every test of the source. With ``S = ()``: the
        bound of the tests given the empty set, where the score has a smaller one
        (:meth:`~dpcg.stats.scores.Score.marginal_bound`: ``kendall-split`` under
        replace-one, ``3/sqrt(n)``); any other ``S`` changes nothing.
        """
        rows = self.n if m is None else int(m)
        score = self.scorer
        if pair is None:
            c = score.widest_key(self.cardinalities)
        else:
            c = score.pair_key(self.cardinalities[pair[0]], self.cardinalities[pair[1]])
        marginal = S is not None and len(S) == 0
        key = (rows, c, marginal)
        dz = self._sens.get(key)
        if dz is None:
            bound = score.marginal_bound(rows, self.relation, c) if marginal else None
            dz = score.bound(rows, self.relation, c) if bound is None else bound
            self._sens[key] = dz
        return dz

    def scale(self, x: int, y: int, S: tuple[int, ...] | None = None) -> float:
        """``Delta / Delta(x, y) >= 1``: multiplying the pair's score (and its public
        threshold) by it gives a query whose sensitivity is the source-level ``Delta``
        (how the SVT-based algorithms use the per-pair bounds); with ``S``, the bound of
        that test (:meth:`sensitivity`: smaller given the empty set for some scores)."""
        return self.sensitivity() / self.sensitivity(pair=(x, y), S=S)

    def threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The public decision threshold of the test ``(x, y | S)`` (score scale)."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold
        return self.scorer.threshold(self.alpha, self.cardinalities, x, y, S)

    def public_params(self) -> dict[str, str | float | int | None]:
        return {
            "score": self.score_name,
            "alpha": self.alpha,
            "n": self.n,
            "relation": self.relation.value,
            "threshold": self.fixed_threshold,
        }

    # ---------------------------------------------------------------- exact scores
    def score(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The exact score on this source's rows (cached)."""
        key = (x, y, tuple(S))
        v = self.cache.get(key)
        if v is None:
            if self._expected:
                expected, self._expected = self._expected, []
                engine = self.engine
                assert isinstance(engine, WarmsTables)
                cache = self.cache
                engine.warm([q for q in expected if q not in cache])
            v = self.scorer.value(self.engine.tables([key])[0], self.alpha)
            self.cache[key] = v
        return v

    def expect(self, queries: Sequence[Query]) -> None:
        """Announce the queries a tester may ask next, one at a time (an SVT stream,
        CURATE's per-test releases). On an engine that counts where the data live
        (:class:`~dpcg.engines.base.WarmsTables`: DuckDB, Spark), the first score that is
        not cached then has the engine count all of them with the scans of one batch
        (:meth:`~dpcg.engines.grouped.GroupedEngine.warm`) instead of one scan per query;
        each score is still computed only when it is read, so the same tests are
        computed as without the announcement. Nothing is counted here: that happens when
        a score is first read, inside a release that was already admitted. On the
        in-memory ``numpy`` engine a table costs the same alone or in a batch, and the
        announcement is dropped. A new announcement replaces one not yet used."""
        if isinstance(self.engine, WarmsTables):
            self._expected = [(x, y, tuple(S)) for x, y, S in queries]

    def prefetch(self, queries: Sequence[Query]) -> None:
        """Compute the exact scores of ``queries`` not yet cached with ONE engine call
        (in the order of the queries, a repeated query counted once), so that
        :meth:`score` then reads them from the cache. On the in-memory engine, where a
        table costs the same alone or in a batch, the calls take
        :data:`PREFETCH_CHUNK` queries at a time, so that a level's tables are never
        held together (a sparse table at 100K rows holds up to 100K cells; issue 59,
        ``docs/memory.md``): the same tables, hence the same scores."""
        cache = self.cache
        todo: list[Query] = []
        seen: set[Query] = set()
        for x, y, S in queries:
            key = (x, y, tuple(S))
            if key not in cache and key not in seen:
                seen.add(key)
                todo.append(key)
        if not todo:
            return
        value = self.scorer.value
        alpha = self.alpha
        engine = self.engine
        step = len(todo) if isinstance(engine, WarmsTables) else PREFETCH_CHUNK
        for i in range(0, len(todo), step):
            chunk = todo[i:i + step]
            for key, table in zip(chunk, engine.tables(chunk), strict=True):
                cache[key] = value(table, alpha)

    @property
    def codes(self) -> NDArray[np.integer]:
        """The ``(p, n)`` codes of an in-memory (``numpy``) source; for a subset,
        gathered on first access. Other engines keep the rows where they live."""
        engine = self.engine
        if not isinstance(engine, NumpyEngine):
            raise CITestError(
                f"codes: the {engine.name!r} engine keeps the rows where they live; ask it "
                "for tables")
        return engine.codes

    def table(self, x: int, y: int, S: tuple[int, ...]) -> StrataTable:
        """The stratified table of a (validated) query, from the engine."""
        return self.engine.tables([(x, y, tuple(S))])[0]

    def subset(self, rows: NDArray[np.integer]) -> StatisticSource:
        """The same score on the rows ``rows`` (a subsample drawn by an ``accounting``
        primitive; public size ``len(rows)``).

        Its sensitivity is the registered one at ``m = len(rows)``; for the floored
        Kendall z (normaliser ``sqrt(9m/4)``) this is exactly ``Delta_n sqrt(n/m)``.
        The engine counts on those rows only (the numpy engine gathers the columns a
        Priv-PC round touches, lazily).
        """
        idx = np.asarray(rows, dtype=np.int64)
        sub = StatisticSource.__new__(StatisticSource)
        sub._setup(self.engine.subset(idx), self.scorer, self.alpha, self.relation,
                   self.fixed_threshold, {}, self._sens)
        return sub


def _score(name: str) -> Score:
    if name not in SCORES:
        raise CITestError(f"test: unknown private score {name!r}; choose from {SCORES}")
    return get_score(name)


def _check_alpha(alpha: object) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise CITestError(f"alpha: expected a number in (0, 1), got {alpha!r}")


def _check_threshold(threshold: object) -> None:
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
    ):
        raise CITestError(f"threshold: expected a finite number, got {threshold!r}")


def _declared(cardinalities: Sequence[int | None], p: int) -> tuple[int, ...]:
    cards = tuple(cardinalities)
    if len(cards) != p:
        raise CITestError(f"cardinalities: got {len(cards)} for {p} columns")
    for j, c in enumerate(cards):
        if c is None or isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise CITestError(
                f"cardinalities[{j}]: private tests need discrete columns with a declared "
                f"number of categories, got {c!r}"
            )
    return tuple(int(c) for c in cards if c is not None)


def _default_names(cards: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(f"X{j}" for j in range(len(cards)))


# -------------------------------------------------------------------- mechanisms


@dataclass(frozen=True)
class ReleasePlan:
    """How one test's score is released: Laplace (basic composition) or Gaussian
    (zCDP), with the per-test parameter fixed before the run from public information.

    * ``kind="laplace"``: ``Laplace(Delta, epsilon)`` (``epsilon`` per test).
    * ``kind="gaussian"``: ``Gaussian(Delta, sigma)`` with ``sigma = Delta/sqrt(2 rho)``
      (``rho`` per test).
    """

    kind: Literal["laplace", "gaussian"]
    epsilon: float | None = None
    rho: float | None = None

    def mechanism(self, sensitivity: float) -> Laplace | Gaussian:
        if self.kind == "laplace":
            assert self.epsilon is not None
            return Laplace(sensitivity, self.epsilon)
        assert self.rho is not None
        return Gaussian.for_rho(sensitivity, self.rho)

    def describe(self) -> dict[str, str | float | None]:
        return {"mechanism": self.kind, "epsilon_per_test": self.epsilon,
                "rho_per_test": self.rho}


def _purpose(x: int, y: int, S: tuple[int, ...], what: str = "test") -> str:
    return f"{what} {x} _||_ {y} | {list(S)}"


class PrivateCITest:
    """One noisy release of the score per test (Laplace-PC's tester).

    ``test(x, y, S)`` releases ``s(x, y | S) + noise`` through ``session.release`` (the
    filter admits the declared cost and the ledger records it before the data is
    touched) and says *independent* when the noisy score is at most the public ``T``.
    """

    def __init__(self, source: StatisticSource, session: Session | None,
                 plan: ReleasePlan) -> None:
        if session is None:
            raise CITestError("session: a private test needs an accounting session")
        if source.relation is not session.relation:
            # the releases declare the source's bound under the session's relation
            raise CITestError(
                f"source: its sensitivities are declared under {source.relation.value}, "
                f"the session is under {session.relation.value}")
        self.source = source
        self.session = session
        self.plan = plan
        self.sensitivity = source.sensitivity()
        self.releases = 0
        self._mechs: dict[float, Laplace | Gaussian] = {}
        #: Whether a test given the empty set uses that smaller bound where the score has
        #: one (:meth:`StatisticSource.sensitivity` with ``S = ()``); off by default.
        self.empty_set_bound = False

    def mechanism(self, x: int | None = None, y: int | None = None,
                  S: tuple[int, ...] | None = None) -> Laplace | Gaussian:
        """The release mechanism of the pair's tests: the plan's per-test cost with the
        pair's sensitivity (the source-level one without a pair); with ``S = ()`` and
        :attr:`empty_set_bound`, that of a test given the empty set
        (:meth:`StatisticSource.sensitivity`)."""
        given = S if self.empty_set_bound else None
        sens = self.sensitivity if x is None or y is None else self.source.sensitivity(
            pair=(x, y), S=given)
        mech = self._mechs.get(sens)
        if mech is None:
            mech = self.plan.mechanism(sens)
            self._mechs[sens] = mech
        return mech

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        """One test: :meth:`test_many` of one query (the same admission and noise as
        ``session.release``; a refusal raises ``BudgetExceededError``)."""
        return self.test_many([(x, y, S)])[0]


    def test_many(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]
                  ) -> list[CIResult]:
        """:meth:`test` for a round of queries chosen together (none depends on another's
        answer): one ``session.release_many`` call, so the ledger records the round in
        one transaction before any score is computed. Returns the answers of the
        admitted prefix (shorter when the budget ran out; the session is then halted).
        """
        src = self.source
        valid = [validate_query(x, y, S, src.p) for x, y, S in queries]
        round_scores = _RoundScores(src, valid)
        outputs = self.session.release_many([
            (self.mechanism(x, y, S), partial(round_scores.score, x, y, S), _purpose(x, y, S))
            for x, y, S in valid])
        self.releases += len(outputs)
        out = []
        for (x, y, S), released in zip(valid, outputs, strict=False):
            noisy = float(np.asarray(released))
            out.append(CIResult(noisy <= self.decision_threshold(x, y, S), noisy, None))
        return out

    def decision_threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The public ``T`` a noisy score is compared with (the source's threshold; a
        plan may move it by a public amount, e.g. Laplace-PC's level-0 screen)."""
        return self.source.threshold(x, y, S)


class _RoundScores:
    """The exact scores of one round, counted by ONE engine call
    (:meth:`StatisticSource.prefetch`) when the session computes the first admitted
    score, i.e. after the whole round was admitted and recorded; each release then reads
    its own score. The tables are those of the round's queries in their order (the same
    tables as one call per query; an out-of-core engine answers the round in a few
    scans). Nothing is released but the admitted scores, with their own noise."""

    def __init__(self, source: StatisticSource, queries: Sequence[Query]) -> None:
        self.source = source
        self.queries: Sequence[Query] | None = queries

    def score(self, x: int, y: int, S: tuple[int, ...]) -> float:
        if self.queries is not None:
            self.source.prefetch(self.queries)
            self.queries = None
        return self.source.score(x, y, S)


class ThresholdCITest:
    """The same decision rule on the exact score (no noise, NOT private): the
    non-private PC "with the same test" that the private algorithms converge to."""

    def __init__(self, source: StatisticSource) -> None:
        self.source = source

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        s = self.source.score(x, y, S)
        return CIResult(s <= self.source.threshold(x, y, S), s, None)


def source_for_dataset(
    dataset: DiscreteDataset | TableEngine,
    score: str = DEFAULT_SCORE,
    *,
    alpha: float = DEFAULT_ALPHA,
    threshold: float | None = None,
    cache: ScoreCache | None = None,
    engine: str = DEFAULT_ENGINE,
) -> StatisticSource:
    """A :class:`StatisticSource` on a :class:`dpcg.data.Dataset` (discrete columns,
    counted by the registered table engine ``engine``), or on a :class:`TableEngine`
    directly."""
    if isinstance(dataset, TableEngine):
        return StatisticSource.from_engine(dataset, score, alpha=alpha, threshold=threshold,
                                           cache=cache)
    try:
        codes = dataset.codes
        cards = dataset.cardinalities
        names = dataset.names
    except AttributeError as exc:
        raise CITestError(
            f"dataset: expected a dpcg Dataset with codes and cardinalities ({exc})"
        ) from None
    return StatisticSource(codes, cards, score, alpha=alpha, threshold=threshold, cache=cache,
                           check=False, names=names, engine=engine)


# -------------------------------------------------------------- registry hook


@dataclass(frozen=True)
class ScoreOptions:
    """Options of the score tests (``kendall-split``, ``kendall-z``, ``kendall-p``,
    ``cmi``, ``g2-distance``), exact with ``--algorithm pc`` and noisy with the private
    algorithms."""

    threshold: float | None = option(
        None, type=float, metavar="T",
        help="public decision threshold on the score scale (default: from --alpha)")

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)


def _build_threshold(score: str) -> Callable[[TestContext[ScoreOptions]], CITest]:
    def build(ctx: TestContext[ScoreOptions]) -> CITest:
        return ThresholdCITest(source_for_dataset(ctx.dataset, score, alpha=ctx.alpha,
                                                  threshold=ctx.options.threshold))
    return build


for _name in SCORES:
    register_test(TestSpec(name=_name, description=get_score(_name).description,
                           options=ScoreOptions, build=_build_threshold(_name),
                           data="discrete"))

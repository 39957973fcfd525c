"""Shared pieces of the private PC family: the plan-size options and the base of the five
discrete algorithms.

Every private algorithm is a *strategy* over the one engine
(:func:`dpcg.pc.engine.pc_stable`): an :class:`~dpcg.pc.engine.EdgeTester` (Laplace-PC,
SVT-PC, Priv-PC, CURATE, private-CI PC) or a :class:`~dpcg.pc.engine.LevelStrategy`
(EM-PC). The strategy holds an ``accounting`` session; every release goes through
``session.release`` / ``session.start`` (filter admission and ledger entry first). When
the filter refuses a mechanism the engine stops and returns the graph so far with
``budget_exhausted=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from itertools import combinations
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from accounting.costs import Cost, round_down
from accounting.mechanisms import TopK
from accounting.session import Session
from dpcg.citests.private import DEFAULT_SCORE, SCORES, ScoreOptions, StatisticSource
from dpcg.citests.private import source_for_dataset as _source_for_dataset
from dpcg.citests.registry import option
from dpcg.data.dataset import Dataset
from dpcg.engines.base import WarmsTables
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import CandidateSets, LevelCandidates, Pair, Sepset
from dpcg.private import planning
from dpcg.private.contract import Plan, RunSettings, ScoreCache, Tester
from dpcg.private.planning import SELECT_GAIN, SELECT_SHARE, level0_selection

__all__ = ["DiscreteAlgorithm", "PlanSizeParams", "check_count_field", "exhaustion_note", "fits",
           "plan_count", "unspent"]

#: CLI test names that map onto a private score: the private G-test is ``cmi``
#: (G^2 = 2 n CMI, so releasing n CMI against chi2(df)/2 is the G-test's rule with noise).
PRIVATE_ALIASES = {"g2": "cmi"}


def check_count_field(name: str, value: object, *, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise AlgorithmError(f"{name}: expected {what}, got {value!r}")


def check_number_field(name: str, value: object, *, positive: bool = False,
                       nonnegative: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
        value
    ):
        raise AlgorithmError(f"{name}: expected a finite number, got {value!r}")
    if positive and not value > 0:
        raise AlgorithmError(f"{name}: expected a finite number > 0, got {value!r}")
    if nonnegative and value < 0:
        raise AlgorithmError(f"{name}: must be >= 0, got {value!r}")


@dataclass(frozen=True)
class PlanSizeParams:
    """The public plan of an algorithm that splits its budget over ``K`` units (tests,
    SVT instances, sieve-and-examine rounds): ``plan_size`` K, or ``test_epsilon`` the
    budget of one unit (then ``K = floor(epsilon / test_epsilon)``; 0 means nothing can
    run). At most one of them; neither = the algorithm's default K."""

    plan_size: int | None = option(
        None, type=int, metavar="K",
        help="public plan size: tests (laplace-pc, private-ci-pc), instances (svt-pc), "
             "rounds (priv-pc); default from the number of variables")
    test_epsilon: float | None = option(
        None, type=float, metavar="E",
        help="budget of one test/instance/round instead of --plan-size")

    def __post_init__(self) -> None:
        if self.plan_size is not None:
            check_count_field("plan_size", self.plan_size)
        if self.test_epsilon is not None:
            check_number_field("test_epsilon", self.test_epsilon, positive=True)
            if self.plan_size is not None:
                raise AlgorithmError("give at most one of plan_size and test_epsilon")


def plan_count(params: PlanSizeParams, settings: RunSettings, default: int) -> int:
    """Plan size from ``plan_size`` / ``test_epsilon`` / the default (may be 0)."""
    if params.plan_size is not None:
        return int(params.plan_size)
    if params.test_epsilon is not None:
        return int(Fraction(settings.epsilon) // Fraction(params.test_epsilon))
    return default


def fits(need: Cost, remaining: Cost) -> bool:
    """Whether a declared cost fits what the session has left, under either rule."""
    if remaining.epsilon is not None and (need.epsilon is None
                                          or need.epsilon > remaining.epsilon):
        return False
    if remaining.epsilon is not None and need.delta > remaining.delta:
        return False
    return not (remaining.rho is not None and (need.rho is None or need.rho > remaining.rho))


def unspent(session: Session) -> dict[str, float | str | None]:
    """What the run did not spend, under its rule (released: budget minus the declared
    costs of admitted releases)."""
    rem = session.remaining()
    return {"rule": session.rule,
            "epsilon": None if rem.epsilon is None else round_down(max(rem.epsilon,
                                                                       Fraction(0))),
            "delta": round_down(max(rem.delta, Fraction(0))),
            "rho": None if rem.rho is None else round_down(max(rem.rho, Fraction(0)))}


ParamsT = TypeVar("ParamsT")
PlanT = TypeVar("PlanT", bound=Plan)
TesterT = TypeVar("TesterT", bound=Tester)


class DiscreteAlgorithm(Generic[ParamsT, PlanT, TesterT]):
    """What the five discrete algorithms share: their tests (the private scores of
    :mod:`dpcg.citests.private`, ``g2`` meaning ``cmi``), the default delta and the
    source (a :class:`StatisticSource`). Subclasses set ``name``, ``description``,
    ``params``, ``proof_note`` and implement ``plan``/``tester`` (and ``usage``)."""

    tests: tuple[str, ...] = (*SCORES, *PRIVATE_ALIASES)
    default_test: str = DEFAULT_SCORE
    default_delta: float = 1e-6
    #: With epsilon -> infinity the decisions are the non-private test's (the noise falls
    #: below every margin): ``dpcg.testing.check_algorithm`` then compares the run with
    #: non-private PC. False where a subsample, a selection or a coin decides.
    reproduces_pc: bool = False

    def resolve_test(self, test: str) -> str:
        resolved = PRIVATE_ALIASES.get(test, test)
        if resolved not in SCORES:
            raise AlgorithmError(
                f"--test {test}: the private algorithms release one of {SCORES} "
                f"(or g2, the private G-test = cmi); kendall-split is recommended"
            )
        return resolved

    def source(self, dataset: Dataset, settings: RunSettings, test_options: object,
               cache: ScoreCache | None = None) -> StatisticSource:
        if settings.test not in SCORES:
            raise AlgorithmError(f"test: unknown private test {settings.test!r}; choose "
                                 f"from {SCORES}")
        if not isinstance(test_options, ScoreOptions):
            raise AlgorithmError(f"test_options: expected ScoreOptions, got "
                                 f"{type(test_options).__name__}")
        return _source_for_dataset(dataset, settings.test, alpha=settings.alpha,
                                   threshold=test_options.threshold, cache=cache)

    def usage(self, tester: TesterT) -> Mapping[str, object]:
        return {}


def exhaustion_note(level: int, why: str) -> str:
    """What a run stopped by its plan at PC level ``level`` returns, in words (the result
    message of Priv-PC and SVT-PC; ``level`` < 0 counts as level 0)."""
    level = max(level, 0)
    if level == 0:
        what = ("level 0 was not completed: the pairs it had not yet tested keep their "
                "edge untested, so this graph is NOT a pruned skeleton")
    else:
        what = (f"the graph is level {level - 1}'s (levels_completed = {level}) minus "
                f"the removals decided at level {level}; the pairs level {level} had "
                f"not yet decided keep their edge")
    return (f"budget-limited: {why}; {what}. The guarantee covers everything released; "
            f"the unspent budget is in plan.used_unspent")


def plan_level0_selection(rule: str, level0: Fraction, source: StatisticSource,
                          select: float | None, share: Fraction = Fraction(SELECT_SHARE),
                          gain: float = SELECT_GAIN, grow: bool = True
                          ) -> tuple[int, float] | None:
    """:func:`dpcg.private.planning.level0_selection` for ``source``: the selection gets
    ``share`` of level 0's ``level0`` (public facts only)."""
    return level0_selection(rule, level0 * share, level0, source.p, source.sensitivity(),
                            min_level0_threshold(source), select, gain, grow)


def min_level0_threshold(source: StatisticSource) -> float:
    """The smallest level-0 threshold over the pairs (public: from the schema, ``n`` and
    ``alpha``)."""
    p = source.p
    return min((source.threshold(x, y, ()) for x in range(p) for y in range(x + 1, p)),
               default=1.0)


def select_pairs(source: StatisticSource, session: Session, k: int, epsilon: float,
                 who: str, pairs: Sequence[tuple[int, int]] | None = None,
                 empty_set_bound: bool | None = None) -> set[tuple[int, int]]:
    """Level 0's selection for testers that ask one pair at a time: one
    :class:`~accounting.mechanisms.TopK` release (``k`` pairs, ``epsilon`` per step) over
    ``pairs`` (default: every pair ``x < y``) on the utilities
    ``(s(x, y | {}) - T(x, y)) / Delta(x, y)`` (sensitivity 1; ``docs/privacy/top-k.md``;
    ``Delta`` the bound of a test given the empty set with ``empty_set_bound``, default
    :data:`~dpcg.private.planning.SELECTION_EMPTY_SET_BOUND`, see
    :func:`selection_bound`), admitted and recorded before any score is computed. Returns
    the kept pairs."""
    empty_set_bound = _selection_switch(empty_set_bound)
    p = source.p
    todo = (list(pairs) if pairs is not None
            else [(x, y) for x in range(p) for y in range(x + 1, p)])
    return set(_top_pairs(source, session, k, epsilon, todo,
                          lambda: marginal_utilities(source, todo, empty_set_bound),
                          f"{who} level 0: keep the top {k} of {len(todo)} pairs"))


def select_pairs_ranked(source: StatisticSource, session: Session, k: int, epsilon: float,
                        who: str, pairs: Sequence[tuple[int, int]],
                        empty_set_bound: bool | None = None) -> list[tuple[int, int]]:
    """:func:`select_pairs` over ``pairs``, returning the kept pairs in the release's
    order (strongest first): the same single ``TopK(1, epsilon, k)`` release, admitted and
    recorded before any score is computed (Marginal-PC's level-0 selection uses the
    order to rank conditioning sets: post-processing of the output)."""
    empty_set_bound = _selection_switch(empty_set_bound)
    todo = list(pairs)
    return _top_pairs(source, session, k, epsilon, todo,
                      lambda: marginal_utilities(source, todo, empty_set_bound),
                      f"{who} level 0: keep the top {k} of {len(todo)} pairs")


def node_pairs(p: int, pairs: Sequence[Pair]) -> list[list[int]]:
    """For each node, the indices into ``pairs`` of the pairs it is an endpoint of (in
    ``pairs``' order)."""
    out: list[list[int]] = [[] for _ in range(p)]
    for i, (x, y) in enumerate(pairs):
        out[x].append(i)
        out[y].append(i)
    return out


def select_node_partners(source: StatisticSource, session: Session, k: int,
                         epsilon: float, who: str, pairs: Sequence[Pair] | None = None,
                         empty_set_bound: bool | None = None) -> dict[Pair, float]:
    """Hub-PC's per-node selection (``docs/privacy/algorithm-hub-pc.md``): for each node
    ``a`` with more than ``k`` pairs among ``pairs`` (default: every pair ``x < y``), one
    :class:`~accounting.mechanisms.TopK` release (``k`` partners, ``epsilon`` per step)
    over its pairs on the utilities ``(s(a, b | {}) - T(a, b)) / Delta(a, b)``
    (sensitivity 1, as in :func:`select_pairs`); all requests in one
    ``Session.release_many`` batch, recorded before any score is computed. A node with at
    most ``k`` pairs keeps them all without a release. Returns the kept pairs (kept by
    either endpoint) with their strengths, post-processing of the outputs: ``k - j`` for
    a partner released ``j``-th (the larger over the endpoints), 0 for a pair kept
    without a release. Raises ``BudgetExceededError`` when not every request is admitted
    (the session then admits nothing more)."""
    from accounting.errors import BudgetExceededError

    empty_set_bound = _selection_switch(empty_set_bound)
    p = source.p
    todo = (list(pairs) if pairs is not None
            else [(x, y) for x in range(p) for y in range(x + 1, p)])
    by_node = node_pairs(p, todo)
    cache: list[npt.NDArray[np.float64]] = []

    def node_utilities(idx: list[int]) -> npt.NDArray[np.float64]:
        if not cache:  # after the whole batch was admitted and recorded
            cache.append(marginal_utilities(source, todo, empty_set_bound))
        return cache[0][np.asarray(idx, dtype=np.int64)]

    mech = TopK(1.0, epsilon, k, relation=source.relation)
    asked = [a for a in range(p) if len(by_node[a]) > k]
    requests: list[tuple[TopK, Callable[[], npt.NDArray[np.float64]], str]] = [
        (mech, partial(node_utilities, by_node[a]),
         f"{who} level 0: node {a} keeps its top {k} of {len(by_node[a])} partners")
        for a in asked]
    outputs = session.release_many(requests)
    if len(outputs) < len(requests):
        raise BudgetExceededError(f"{who}: the budget is used up in level 0's selection")
    strength: dict[Pair, float] = {}
    for a in range(p):
        if len(by_node[a]) <= k:
            for i in by_node[a]:
                strength[todo[i]] = max(strength.get(todo[i], 0.0), 0.0)
    for a, out in zip(asked, outputs, strict=True):
        idx = by_node[a]
        for j, pos in enumerate(np.asarray(out, dtype=np.int64).ravel()):
            pair = todo[idx[int(pos)]]
            strength[pair] = max(strength.get(pair, -math.inf), float(k - j))
    return strength


def bound_given(S: tuple[int, ...]) -> tuple[int, ...] | None:
    """The ``S`` to pass to :meth:`StatisticSource.sensitivity` for a level-0 release:
    ``S`` itself when :data:`~dpcg.private.planning.LEVEL0_EMPTY_SET_BOUND` is on (a test
    given the empty set may then use its smaller bound), else ``None`` (the pair's)."""
    return S if planning.LEVEL0_EMPTY_SET_BOUND else None


def _selection_switch(empty_set_bound: bool | None) -> bool:
    """A selection's ``empty_set_bound``: the caller's, or (``None``)
    :data:`~dpcg.private.planning.SELECTION_EMPTY_SET_BOUND`, read at call time."""
    return planning.SELECTION_EMPTY_SET_BOUND if empty_set_bound is None else empty_set_bound


def selection_bound(S: tuple[int, ...], empty_set_bound: bool) -> tuple[int, ...] | None:
    """The ``S`` to pass to :meth:`StatisticSource.sensitivity` for a term of a level-0
    selection's utility: ``S`` itself (a term given the empty set then uses that test's
    smaller bound, any other set the pair's) when the caller asks for it
    (``empty_set_bound``: Laplace-PC, Priv-PC and SVT-PC take the selections' default,
    :data:`~dpcg.private.planning.SELECTION_EMPTY_SET_BOUND`; CURATE passes ``False``) or
    when
    :data:`~dpcg.private.planning.LEVEL0_EMPTY_SET_BOUND` is on, else ``None``. Each term
    divided by its own test's bound moves by at most 1, whichever bound it uses."""
    return S if empty_set_bound else bound_given(S)


def marginal_utilities(source: StatisticSource, pairs: Sequence[tuple[int, int]],
                       empty_set_bound: bool = False) -> npt.NDArray[np.float64]:
    """``(s(x, y | {}) - T(x, y)) / Delta(x, y)`` for each pair (sensitivity 1; ``Delta``
    the bound of a test given the empty set or the pair's, :func:`selection_bound`), the
    scores computed with one engine call."""
    source.prefetch([(x, y, ()) for x, y in pairs])
    given = selection_bound((), empty_set_bound)
    return np.array([(source.score(x, y, ()) - source.threshold(x, y, ()))
                     / source.sensitivity(pair=(x, y), S=given) for x, y in pairs])


def _top_pairs(source: StatisticSource, session: Session, k: int, epsilon: float,
               pairs: Sequence[tuple[int, int]],
               utilities: Callable[[], npt.NDArray[np.float64]], purpose: str
               ) -> list[tuple[int, int]]:
    """One admitted, recorded ``TopK(1, epsilon, k)`` release over ``pairs``: the kept
    pairs, strongest first (the release's order)."""
    mech = TopK(1.0, epsilon, k, relation=source.relation)
    chosen = session.release(mech, utilities, purpose=purpose)
    return [pairs[int(i)] for i in np.asarray(chosen).ravel()]


def neighbour_order(ranked: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    """Each node's neighbours in the graph of ``ranked`` (pairs, strongest first), in
    that order."""
    order: dict[int, list[int]] = {}
    for u, v in ranked:
        order.setdefault(u, []).append(v)
        order.setdefault(v, []).append(u)
    return order


def screening_sets(pair: tuple[int, int], p: int,
                   order: Mapping[int, Sequence[int]] | None) -> list[tuple[int, ...]]:
    """The conditioning sets of a pair's utility in a screened selection's second release:
    the empty set and ``{z}`` for each ``z`` among the ``SETS_PER_SIDE`` strongest
    neighbours of each endpoint (other than the other endpoint) in the first release's
    graph (``order``: :func:`neighbour_order` of that release, a function of it alone),
    or every other node when there was no first release (``order = None``)."""
    x, y = pair
    if order is None:
        zs = [z for z in range(p) if z != x and z != y]
    else:
        picked: set[int] = set()
        for a, b in (pair, (y, x)):
            picked.update([w for w in order.get(a, ()) if w != b][:SETS_PER_SIDE])
        zs = sorted(picked)
    return [(), *((z,) for z in zs)]


#: Help of the ``screen_selection`` option (Laplace-PC and Priv-PC; one flag).
SCREEN_SELECTION_HELP = (
    "per-level plans with a level-0 selection: 1: screened (a first top-K release keeps "
    "2K pairs by their score given {}, a second keeps K/2 of them by their smallest score "
    "over {} and single neighbours); 0: one top-K release by the score given {} "
    "(default: the algorithm's rule; Priv-PC screens every selection, Laplace-PC where "
    "only the no-noisier-than-testing-every-pair rule selects, about 20-80 nodes)")


def screen_selection_option() -> int | None:
    """The ``screen_selection`` option field (``None``: the algorithm's rule)."""
    out: int | None = option(None, type=int, metavar="0|1", help=SCREEN_SELECTION_HELP)
    return out


def check_screen_selection(value: object) -> None:
    """``screen_selection`` is ``None``, 0 or 1."""
    if value is not None and (type(value) is not int or value not in (0, 1)):
        raise AlgorithmError(f"screen_selection: expected 0 or 1, got {value!r}")


#: Whether the pairs a screened selection's second release removes stay in the adjacency
#: level 1's conditioning sets come from (:meth:`ScreenedPairs.carried_pairs`).
SCREENED_STAY_CANDIDATES = True


class ScreenedPairs:
    """Part of a tester that can make a screened selection (Laplace-PC, Priv-PC): the
    pairs its second release did not keep, which the tester's ``__init__`` sets to an
    empty set and its level 0 fills."""

    #: pairs a screened selection's second release did not keep
    _screened: set[tuple[int, int]]

    def carried_pairs(self, level: int) -> frozenset[tuple[int, int]]:
        """The pairs the second release did not keep stay in the adjacency that level 1's
        conditioning sets come from (:class:`dpcg.pc.engine.CarriesAdjacency`): it
        removed them by a level-1 question (their smallest score over single neighbours),
        and PC-stable draws level 1's sets from the adjacency before level 1's removals.
        A function of the first release's output and the second's (public)."""
        if level != 1 or not SCREENED_STAY_CANDIDATES:
            return frozenset()
        return frozenset(self._screened)

    @property
    def unreleased_sepsets(self) -> frozenset[tuple[int, int]]:
        """Pairs removed without a released separating set (a screened selection's second
        release did not keep them; the engine records the empty set for them and drops it
        before orienting, :class:`dpcg.pc.engine.NamesNoSepsets`)."""
        return frozenset(self._screened)


class AnnouncesLevels:
    """Part of an edge tester that streams its tests one at a time (SVT-PC, CURATE): the
    engine's level start (:class:`~dpcg.pc.engine.LevelListener`) is kept, and when the
    tester enters the level it announces the level's candidate tests to its source
    (:meth:`StatisticSource.expect`), so that a table engine counting where the data
    live answers them with one call rather than one scan per test. The announced tests
    are the engine's own candidates (:func:`dpcg.pc.engine.candidate_sets` of the frozen
    adjacency): public, post-processing of earlier releases."""

    source: StatisticSource
    _frozen: tuple[Sequence[frozenset[int]], Sequence[Pair]] | None = None

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[Pair]) -> None:
        self._frozen = (adjacency, pairs)

    def _announce(self, level: int, kept: set[tuple[int, int]] | None = None) -> None:
        """Announce the level's candidate tests (at level 0 only the ``kept`` pairs, when
        a selection kept some)."""
        if self._frozen is None:
            return
        adjacency, pairs = self._frozen
        self._frozen = None
        if level == 0 and kept is not None:
            pairs = [pair for pair in pairs if pair in kept]
        announce(self.source, ((x, y, S) for x, y in pairs
                               for S in CandidateSets(x, y, level, adjacency)))


def announce(source: StatisticSource,
             queries: Iterable[tuple[int, int, tuple[int, ...]]]) -> None:
    """:meth:`StatisticSource.expect` of ``queries``, listed only when the source's engine
    counts announced batches (:class:`~dpcg.engines.base.WarmsTables`: DuckDB, Spark):
    the in-memory engine drops announcements, so a level's candidate tests are never
    materialised for it (``docs/internals.md``, "Memory model")."""
    if isinstance(source.engine, WarmsTables):
        source.expect(list(queries))


def select_pairs_screened(source: StatisticSource, session: Session, first_k: int,
                          first_epsilon: float, k: int, epsilon: float, who: str,
                          pairs: Sequence[tuple[int, int]] | None = None,
                          empty_set_bound: bool | None = None
                          ) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """Level 0's screened selection (``docs/privacy/algorithm-priv-pc.md``): a first
    top-``first_k`` release over every pair on the marginal utilities (as
    :func:`select_pairs`; ``first_k = 0``: none, every pair goes on), then one
    ``TopK(1, epsilon, k)`` over the pairs it kept (``pairs``: the candidates, default
    every pair ``x < y``) on

        u(x, y) = min_{S in sets(x, y)} (s(x, y | S) - T(x, y, S)) / Delta(x, y),

    ``sets`` from :func:`screening_sets` (a function of the first release). Each term
    changes by at most 1 between neighbours (``Delta(x, y)`` bounds every test of the
    pair; with ``empty_set_bound`` the term given the empty set is divided by that test's
    own, smaller bound instead, :func:`selection_bound`; default as in
    :func:`select_pairs`), so their minimum does too. Returns ``(kept, screened)``: the
    pairs the second release keeps, and the first release's pairs it does not keep
    (removed without a released separating set)."""
    empty_set_bound = _selection_switch(empty_set_bound)
    p = source.p
    every = (sorted(pairs) if pairs is not None
             else [(x, y) for x in range(p) for y in range(x + 1, p)])
    ranked: list[tuple[int, int]] | None = None
    if first_k > 0:
        ranked = _top_pairs(source, session, first_k, first_epsilon, every,
                            lambda: marginal_utilities(source, every, empty_set_bound),
                            f"{who} level 0: keep the top {first_k} of {len(every)} "
                            "pairs (screen)")
    candidates = every if ranked is None else sorted(ranked)
    order = None if ranked is None else neighbour_order(ranked)
    sets = {pair: screening_sets(pair, p, order) for pair in candidates}

    def screened() -> npt.NDArray[np.float64]:
        source.prefetch([(x, y, S) for (x, y) in candidates for S in sets[(x, y)]])
        return np.array([min((source.score(x, y, S) - source.threshold(x, y, S))
                             / source.sensitivity(pair=(x, y),
                                                  S=selection_bound(S, empty_set_bound))
                             for S in sets[(x, y)])
                         for x, y in candidates])

    kept = set(_top_pairs(source, session, k, epsilon, candidates, screened,
                          f"{who} level 0: keep the top {k} of {len(candidates)} pairs "
                          "by their smallest score over {} and single neighbours"))
    return kept, set(candidates) - kept


#: Per-pair releases (Laplace-PC, Priv-PC): a pair's minimum over its conditioning sets
#: runs over all of them when it has at most twice this many, else over at most this
#: many per endpoint built from its strongest neighbours (:func:`ranked_sets`; public,
#: bounds the exact statistics a level computes).
SETS_PER_SIDE = 16


def ranked_sets(level: int, pair: Pair, candidates: LevelCandidates,
                strength: Mapping[Pair, float]) -> tuple[Sepset, ...]:
    """The candidate sets a pair's per-pair release runs over: all of them when there
    are at most ``2 SETS_PER_SIDE``; else, for each endpoint ``a`` (other endpoint
    ``b``), the size-``level`` subsets of the ``m`` strongest neighbours in
    ``adj(a) \\ {b}`` (``m`` the largest with ``C(m, level) <= SETS_PER_SIDE``). A
    neighbour ``v``'s strength is ``strength[(min(a, v), max(a, v))]``, which must be
    released values (or public facts); neighbours without one rank last, ties by index.
    Every set returned is one of the engine's candidates for the pair."""
    sets = candidates[pair]
    if len(sets) <= 2 * SETS_PER_SIDE:
        return tuple(sets)
    allowed = sets  # membership without listing them (CandidateSets)
    out: list[Sepset] = []
    for a, b in (pair, (pair[1], pair[0])):
        power = {v: strength.get((min(a, v), max(a, v)), -math.inf)
                 for v in candidates.adjacency[a] - {b}}
        nbrs = sorted(power, key=lambda v: (-power[v], v))
        m = level
        while m < len(nbrs) and math.comb(m + 1, level) <= SETS_PER_SIDE:
            m += 1
        for S in combinations(sorted(nbrs[:m]), level):
            if S in allowed and S not in out:
                out.append(S)
    return tuple(out) if out else tuple(sets)

"""The PC-stable engine (Colombo & Maathuis 2014), shared by every PC variant.

Skeleton phase, level ``l = 0, 1, 2, ...``:

* The adjacency is **frozen** at the start of the level; every candidate conditioning
  set of the level is drawn from the frozen adjacency, so the result does not depend on
  the order in which pairs are visited.
* Each unordered adjacent pair ``{x, y}`` (always passed as ``x < y``) is tested at most
  **once per conditioning set**: the candidates are the size-``l`` subsets of
  ``adj(x) \\ {y}`` in lexicographic order, followed by the size-``l`` subsets of
  ``adj(y) \\ {x}`` that were not already listed. Testing ``(x, y | S)`` and
  ``(y, x | S)`` separately would ask (and, privately, pay for) the same question twice
  (PRIVACY.md section 6, defect 8).
* A pair's tests stop at its first separating set; removals are applied at the end of
  the level. A tester that removed pairs early, by a question PC-stable asks at a later
  level (:class:`CarriesAdjacency`), has them kept in that level's frozen adjacency for
  the candidate sets only. The phase stops when no adjacent pair has ``l`` other
  neighbours, or after ``max_depth``. Pairs a tester removed by a release that names no
  separating set (:class:`NamesNoSepsets`) keep no set, so orientation (run once, on
  the final skeleton) reads no v-structure from them.

Three kinds of testers drive the decisions:

* an :class:`EdgeTester` answers one CI question at a time (``test(x, y, S)``, the
  :class:`dpcg.citests.CITest` protocol);
* a :class:`BatchEdgeTester` answers a *round* of questions at once
  (``test_many(queries)``; Laplace-PC, whose session then admits and records the round
  in one ledger transaction). The level runs round-robin: round ``r`` asks every pair
  that is still open its ``r``-th candidate set. Each pair's own sequence of tests
  (candidate sets in order, up to the first separating set) is exactly the sequential
  one, because the candidates come from the frozen adjacency; only the interleaving of
  pairs differs, so the skeleton and sepsets are the same as with an
  :class:`EdgeTester` giving the same answers. A shorter answer list means the budget
  ran out after that prefix;
* a :class:`LevelStrategy` decides a whole level at once:
  ``decide_level(level, candidates)`` gets, for each pair, the conditioning sets of the
  level and returns the removed pairs with their separating sets (EM-PC).

If the tester raises :class:`accounting.errors.BudgetExceededError`,
:class:`accounting.errors.SessionHaltedError` or
:class:`accounting.errors.NoiseRangeError` (a test's budget too small for its noise
sampler: the plan is used up; raised when the mechanism is built, before it is
admitted, or for a vector release when its grid is built, after its charge), the
skeleton phase stops: removals
already decided in the interrupted level are applied (their tests were answered; a level
strategy hands them over as the exception's ``partial`` mapping), no further tests run,
and orientation still runs on the graph so far. The result says
``budget_exhausted=True``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations, islice, pairwise
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

from accounting.errors import BudgetExceededError, NoiseRangeError, SessionHaltedError
from dpcg.errors import AlgorithmError
from dpcg.graph import CPDAG
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.limits import LimitGuard, RunLimits
from dpcg.pc.orientation import orient
from dpcg.pc.parallel import fork_available, run_level

Pair = tuple[int, int]
Sepset = tuple[int, ...]

__all__ = [
    "BatchEdgeTester",
    "BlockEdgeTester",
    "CandidateSets",
    "CarriesAdjacency",
    "DeclaresLevelWork",
    "EdgeTester",
    "LevelCandidates",
    "LevelStrategy",
    "NamesNoSepsets",
    "PCResult",
    "RunLimits",
    "TestOutcome",
    "TestRecord",
    "candidate_sets",
    "hand_over",
    "pc_stable",
    "without_sepsets",
]

_Stop = TypeVar("_Stop", bound=BaseException)


def hand_over(exc: _Stop, decided: Mapping[Pair, Sepset]) -> _Stop:
    """``exc`` (a budget stop) carrying the removals a strategy had already decided as
    its ``partial`` mapping, which :func:`pc_stable` applies before it stops."""
    setattr(exc, "partial", decided)  # noqa: B010 - an attribute of a foreign exception
    return exc


class TestOutcome(Protocol):
    """What a CI test returns (``dpcg.citests.CIResult`` satisfies it)."""

    @property
    def independent(self) -> bool: ...

    @property
    def statistic(self) -> float | None: ...

    @property
    def pvalue(self) -> float | None: ...


@runtime_checkable
class EdgeTester(Protocol):
    """Answers one conditional-independence question: is ``x _||_ y | S``?"""

    def test(self, x: int, y: int, S: tuple[int, ...]) -> TestOutcome: ...


@runtime_checkable
class BatchEdgeTester(Protocol):
    """Answers a round of CI questions chosen together, in order.

    Returns one outcome per query, or fewer (the answered prefix) when it can answer no
    more (e.g. the privacy budget ran out); the engine then stops as after a refusal.
    """

    def test_many(self, queries: Sequence[tuple[int, int, Sepset]]) -> Sequence[TestOutcome]: ...


@runtime_checkable
class BlockEdgeTester(Protocol):
    """An edge tester that answers a block of one pair's candidate sets at once, sharing
    their encoding and counting (issue 59; :meth:`dpcg.citests.nonprivate.FastG2Test.test_block`).

    ``test_block(x, y, sets)`` yields the outcomes of ``(x, y | S)`` for ``S`` in
    ``sets`` **in order**, each the outcome ``test(x, y, S)`` would give. The engine
    reads them up to the pair's first separating set and drops the rest, so the tester
    may compute a few tests beyond it: the engine uses blocks only for a tester that is
    also side-effect free (``parallel_safe = True``: non-private), never for one whose
    answers are releases."""

    def test_block(self, x: int, y: int, sets: Sequence[Sepset]) -> Iterator[TestOutcome]: ...


#: Candidate sets of one pair handed to a :class:`BlockEdgeTester` tester at a time.
BLOCK_SETS = 64


def _blocks_of(tester: object) -> Callable[[int, int, Sequence[Sepset]],
                                           Iterator[TestOutcome]] | None:
    """The tester's ``test_block`` if the engine may use it (non-private, side-effect
    free), else ``None``."""
    if isinstance(tester, BlockEdgeTester) and getattr(tester, "parallel_safe", False) is True:
        return tester.test_block
    return None


@runtime_checkable
class LevelListener(Protocol):
    """An edge or batch tester that is told when a level starts, before its first test:
    the level, the adjacency frozen for it and the pairs it will test. All of it is
    post-processing of earlier answers and of the user's background knowledge, so a
    private tester may plan the level's budget from it (Laplace-PC's per-level plan)."""

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[Pair]) -> None: ...


@runtime_checkable
class CarriesAdjacency(Protocol):
    """A tester that removed some pairs early: at an earlier level, by a question that
    PC-stable would only have asked at ``level`` (a screened selection's second release
    removes pairs at level 0 by their smallest score over the empty set and single
    neighbours). PC-stable freezes the adjacency before a level, so those pairs would
    still have been adjacent while ``level``'s conditioning sets were drawn: they stay in
    the adjacency the candidate sets of ``level`` come from, and are not tested again.
    What it returns must be post-processing of earlier releases (it is public)."""

    def carried_pairs(self, level: int) -> Collection[Pair]: ...


@runtime_checkable
class DeclaresLevelWork(Protocol):
    """A level strategy that says, before a level, how many exact scores the level
    computes at most (EM-PC scores every candidate test). A function of the level's
    candidates only (public). The engine counts it against the run's test budgets
    (:class:`dpcg.pc.limits.RunLimits`) and does not start a level that would pass
    one, so a private run's time and memory limits also bind a strategy whose records
    are far fewer than its scores."""

    def level_work(self, level: int, candidates: LevelCandidates) -> int: ...


@runtime_checkable
class NamesNoSepsets(Protocol):
    """A tester that removed some pairs by a release naming no separating set (a screened
    selection's second release, whose removals the engine records with the empty set of
    the level they happen at). Before orienting, the engine drops those pairs' recorded
    sets, so they claim no v-structure (as :func:`without_sepsets` does to a finished
    result). Read once, after the skeleton phase; what it returns must be
    post-processing of earlier releases (it is public)."""

    @property
    def unreleased_sepsets(self) -> Collection[Pair]: ...


def pair_test_count(level: int, adjacency: Sequence[frozenset[int]], x: int, y: int) -> int:
    """How many sets :func:`candidate_sets` yields for ``(x, y)`` at ``level``:
    ``C(|a_x|, l) + C(|a_y|, l) - C(|a_x & a_y|, l)`` with ``a_x = adj(x) \\ {y}``,
    ``a_y = adj(y) \\ {x}`` (a pair that is never found independent asks all of them)."""
    if level == 0:
        return 1
    ax = adjacency[x] - {y}
    ay = adjacency[y] - {x}
    return (math.comb(len(ax), level) + math.comb(len(ay), level)
            - math.comb(len(ax & ay), level))


@dataclass(frozen=True, slots=True)
class TestRecord:
    """One CI test the engine ran (or a level strategy reported)."""

    __test__ = False  # not a pytest test class

    level: int
    x: int
    y: int
    S: Sepset
    statistic: float | None
    pvalue: float | None
    independent: bool


class CandidateSets(Sequence[Sepset]):
    """The conditioning sets of one pair at one level, enumerated lazily.

    The same sets, in the same order, as :func:`candidate_sets` (which iterating this
    sequence runs), but nothing is materialised: ``len`` is
    :func:`pair_test_count`'s formula, membership is a check of ``O(level)`` lookups, an
    index in the first part (the subsets of ``adj(x) \\ {y}``) is unranked directly and
    one in the second part walks it. Memory is ``O(|adj(x)| + |adj(y)|)`` whatever
    ``C(|adj|, level)`` is (``docs/internals.md``, "Memory model"). Equal to a tuple of
    the same sets (``==`` compares the enumerations).
    """

    __slots__ = ("_ax", "_ax_set", "_ay", "_ay_set", "_len", "level")

    def __init__(self, x: int, y: int, level: int,
                 adj: Sequence[frozenset[int]] | Sequence[set[int]]) -> None:
        self.level = level
        self._ax = tuple(sorted(adj[x] - {y}))
        self._ay = tuple(sorted(adj[y] - {x}))
        self._ax_set = frozenset(self._ax)
        self._ay_set = frozenset(self._ay)
        if level == 0:
            self._len = 1
        else:
            self._len = (math.comb(len(self._ax), level) + math.comb(len(self._ay), level)
                         - math.comb(len(self._ax_set & self._ay_set), level))

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        # not through __len__: around a wide hub C(|adj|, level) can exceed sys.maxsize,
        # which len() refuses (OverflowError), although truth only asks "any set?"
        return self._len > 0

    @property
    def size(self) -> int:
        """The number of sets, exact at any size (``len`` is limited to sys.maxsize)."""
        return self._len

    def __iter__(self) -> Iterator[Sepset]:
        level = self.level
        if level == 0:
            yield ()
            return
        yield from combinations(self._ax, level)
        ax_set = self._ax_set
        for S in combinations(self._ay, level):
            if not ax_set.issuperset(S):
                yield S

    def __contains__(self, S: object) -> bool:
        if not isinstance(S, tuple) or len(S) != self.level:
            return False
        if self.level == 0:
            return True
        if any(not isinstance(v, int) for v in S):
            return False
        if any(a >= b for a, b in pairwise(S)):
            return False  # the enumeration yields sorted sets only
        return self._ax_set.issuperset(S) or self._ay_set.issuperset(S)

    @overload
    def __getitem__(self, i: int) -> Sepset: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Sepset, ...]: ...

    def __getitem__(self, i: int | slice) -> Sepset | tuple[Sepset, ...]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            if step <= 0:
                return tuple(self)[i]
            return tuple(islice(self, start, stop, step))
        j = operator.index(i)
        if j < 0:
            j += self._len
        if not 0 <= j < self._len:
            raise IndexError("candidate set index out of range")
        if self.level == 0:
            return ()
        first = math.comb(len(self._ax), self.level)
        if j < first:
            return _unrank(self._ax, self.level, j)
        return next(islice(iter(self), j, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CandidateSets | tuple):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CandidateSets(level={self.level}, n={self._len})"

    def batches(self, size: int) -> Iterator[tuple[Sepset, ...]]:
        """The sets in order, in tuples of at most ``size``."""
        it = iter(self)
        while chunk := tuple(islice(it, size)):
            yield chunk


def _unrank(items: Sequence[int], k: int, rank: int) -> Sepset:
    """The ``rank``-th (0-based) size-``k`` subset of ``items`` in the lexicographic
    order of :func:`itertools.combinations`."""
    out: list[int] = []
    start = 0
    m = len(items)
    for left in range(k, 0, -1):
        for i in range(start, m):
            block = math.comb(m - i - 1, left - 1)  # subsets starting at items[i]
            if rank < block:
                out.append(items[i])
                start = i + 1
                break
            rank -= block
    return tuple(out)


class LevelCandidates(Mapping[Pair, Sequence[Sepset]]):
    """The pairs that can still be tested at a level, each with its conditioning sets.

    A read-only mapping ``(x, y) -> (S_1, S_2, ...)`` in the engine's deterministic order
    (pairs sorted, sets in :func:`candidate_sets` order). Built by the engine with
    :meth:`lazy`, a pair's sets are a :class:`CandidateSets` made when asked for and
    enumerated as they are read: the mapping holds the pairs and the frozen adjacency,
    never ``C(|adj|, level)`` sets per pair (``docs/internals.md``, "Memory model").
    :meth:`batches` walks every (pair, set) of the level in order, at most ``size`` at a
    time. A strategy that runs tests of its own reports them with :meth:`record` so they
    appear in the result.
    """

    def __init__(self, level: int, sets: Mapping[Pair, Sequence[Sepset]],
                 adjacency: Sequence[frozenset[int]] = ()) -> None:
        self.level = level
        self._sets: Mapping[Pair, Sequence[Sepset]] | None = sets
        self._pairs: tuple[Pair, ...] = tuple(sets)
        self._index: frozenset[Pair] = frozenset(self._pairs)
        #: The adjacency frozen for the level (what the candidate sets were built from).
        self.adjacency: tuple[frozenset[int], ...] = tuple(adjacency)
        self.records: list[TestRecord] = []
        #: How many more tests the run's test budgets allow (public: set by the engine
        #: from :class:`dpcg.pc.limits.RunLimits`; ``None``: no budget).
        self.test_budget: int | None = None
        #: Whether the strategy cut the level short at the budget (:meth:`out_of_tests`).
        self.cut = False

    @classmethod
    def lazy(cls, level: int, pairs: Sequence[Pair],
             adjacency: Sequence[frozenset[int]]) -> LevelCandidates:
        """The candidates of ``pairs`` drawn from ``adjacency``, enumerated on demand."""
        out = cls(level, {}, adjacency)
        out._sets = None
        out._pairs = tuple(pairs)
        out._index = frozenset(out._pairs)
        return out

    def __getitem__(self, pair: Pair) -> Sequence[Sepset]:
        if self._sets is not None:
            return self._sets[pair]
        if pair not in self._index:
            raise KeyError(pair)
        return CandidateSets(pair[0], pair[1], self.level, self.adjacency)

    def __contains__(self, pair: object) -> bool:
        return pair in self._index

    def __iter__(self) -> Iterator[Pair]:
        return iter(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def n_tests(self) -> int:
        """How many (pair, set) questions the level has (without enumerating them)."""
        return sum(len(self[pair]) for pair in self._pairs)

    def batches(self, size: int = 1 << 16) -> Iterator[list[tuple[Pair, Sepset]]]:
        """Every ``(pair, S)`` of the level in the engine's order, in lists of at most
        ``size`` (a pair's sets may straddle two lists)."""
        if size < 1:
            raise AlgorithmError(f"batch size: expected a positive integer, got {size!r}")
        chunk: list[tuple[Pair, Sepset]] = []
        for pair in self._pairs:
            for S in self[pair]:
                chunk.append((pair, S))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def out_of_tests(self) -> bool:
        """Whether the tests recorded so far reached :attr:`test_budget`. A strategy
        whose level runs many tests after its releases (post-processing: Marginal-PC's
        noisy G-tests) asks before each pair and, on ``True``, stops the level there;
        the engine then applies the removals decided so far and stops the run with the
        budget's limit (its message), as after a test that reached it. The answer is a
        function of the count of recorded tests and of public limits: post-processing."""
        if self.test_budget is not None and len(self.records) >= self.test_budget:
            self.cut = True
        return self.cut

    def record(self, x: int, y: int, S: Sepset, outcome: TestOutcome) -> None:
        """Report a test the strategy ran on ``(x, y | S)``."""
        self.records.append(
            TestRecord(self.level, x, y, tuple(S), outcome.statistic, outcome.pvalue,
                       bool(outcome.independent))
        )


@runtime_checkable
class LevelStrategy(Protocol):
    """Decides a whole level: returns ``{(x, y): sepset}`` for the pairs it removes.

    Every returned pair must be a key of ``candidates`` and its sepset one of that pair's
    candidate sets.
    """

    def decide_level(self, level: int, candidates: LevelCandidates) -> Mapping[Pair, Sepset]: ...


@dataclass
class PCResult:
    """Everything a PC run produced. Node indices refer to :attr:`names`."""

    names: tuple[str, ...]
    cpdag: CPDAG
    adjacency: tuple[frozenset[int], ...]
    sepsets: dict[Pair, Sepset]
    tests: list[TestRecord]
    budget_exhausted: bool
    levels_completed: int
    seconds: float
    test_seconds: float
    v_structures: tuple[tuple[int, int, int], ...] = ()
    orientation_conflicts: tuple[Pair, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    #: The run limit that ended the skeleton phase (``RunLimits``), or ``None``.
    stop_reason: str | None = None

    @property
    def n_tests(self) -> int:
        return len(self.tests)

    def tests_by_level(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for rec in self.tests:
            counts[rec.level] = counts.get(rec.level, 0) + 1
        return dict(sorted(counts.items()))

    def to_json(self, *, include_tests: bool = False) -> dict[str, Any]:
        """JSON-compatible summary: graph, counts, sepsets, timing (tests optional)."""
        nm = self.names
        out: dict[str, Any] = self.cpdag.to_json()
        out["tests"] = {
            "count": self.n_tests,
            "by_level": {str(k): v for k, v in self.tests_by_level().items()},
        }
        if include_tests:
            out["tests"]["records"] = [
                {"x": nm[r.x], "y": nm[r.y], "S": [nm[s] for s in r.S], "level": r.level,
                 "statistic": r.statistic, "pvalue": r.pvalue, "independent": r.independent}
                for r in self.tests
            ]
        out["sepsets"] = [
            {"x": nm[x], "y": nm[y], "S": [nm[s] for s in sep]}
            for (x, y), sep in sorted(self.sepsets.items())
        ]
        out["budget_exhausted"] = self.budget_exhausted
        out["levels_completed"] = self.levels_completed
        out["orientation_conflicts"] = [[nm[a], nm[b]] for a, b in self.orientation_conflicts]
        if "sepsets_unreleased" in self.info:
            # removed pairs whose separating set was never released (not in "sepsets")
            out["sepsets_unreleased"] = self.info["sepsets_unreleased"]
        if self.stop_reason is not None:
            out["stopped"] = dict(self.info.get("stopped", {"limit": self.stop_reason}))
        out["timing"] = {"seconds": self.seconds, "test_seconds": self.test_seconds}
        return out


@dataclass(frozen=True, slots=True)
class _Answered:
    """An outcome a forked worker answered (:mod:`dpcg.pc.parallel`)."""

    independent: bool
    statistic: float | None
    pvalue: float | None


def candidate_sets(
    x: int, y: int, level: int, adj: Sequence[frozenset[int]] | Sequence[set[int]]
) -> Iterator[Sepset]:
    """Conditioning sets of size ``level`` for the pair ``(x, y)``, each exactly once.

    Subsets of ``adj(x) \\ {y}`` (lexicographic), then those subsets of
    ``adj(y) \\ {x}`` not already produced (lexicographic).
    """
    ax = sorted(adj[x] - {y})
    ay = sorted(adj[y] - {x})
    ax_set = set(ax)
    if level == 0:
        yield ()
        return
    yield from combinations(ax, level)
    for S in combinations(ay, level):
        if not ax_set.issuperset(S):
            yield S


def _sets_at(level: int, frozen: Sequence[frozenset[int]], x: int, y: int
             ) -> Iterator[Sepset]:
    return candidate_sets(x, y, level, frozen)


def _with_carried(adjacency: list[frozenset[int]], tester: object, level: int
                  ) -> list[frozenset[int]]:
    """The adjacency a level's candidate sets come from: ``adjacency`` with the pairs a
    :class:`CarriesAdjacency` tester carries into ``level`` added back."""
    if not isinstance(tester, CarriesAdjacency):
        return adjacency
    carried = tester.carried_pairs(level)
    if not carried:
        return adjacency
    out = [set(a) for a in adjacency]
    for a, b in carried:
        out[a].add(b)
        out[b].add(a)
    return [frozenset(a) for a in out]


def _validate(names: Sequence[str], max_depth: int | None) -> tuple[str, ...]:
    if isinstance(names, str):
        raise AlgorithmError("names: expected a sequence of variable names, got a string")
    nm = tuple(names)
    if not nm:
        raise AlgorithmError("names: need at least one variable")
    if len(set(nm)) != len(nm):
        raise AlgorithmError("names: variable names must be unique")
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0
    ):
        raise AlgorithmError(
            f"max_depth: expected a non-negative integer or None, got {max_depth!r}"
        )
    return nm


def pc_stable(
    tester: EdgeTester | BatchEdgeTester | LevelStrategy,
    names: Sequence[str],
    *,
    max_depth: int | None = None,
    background: BackgroundKnowledge | None = None,
    progress: Callable[[int, int], None] | None = None,
    limits: RunLimits | None = None,
    workers: int = 1,
    parallel_min_tests: int = 0,
) -> PCResult:
    """Run PC-stable with ``tester`` on the variables ``names`` (indices ``0..p-1``).

    ``progress(level, tests_so_far)`` is called after every test (edge and batch testers)
    or level (level strategies); a ``progress`` that also has ``start_level(level,
    adjacency, pairs)`` (:class:`dpcg.pc.progress.ProgressLine`) is told when a level
    starts. See the module docstring for the algorithm and stop semantics.
    ``workers > 1`` runs an edge tester that sets ``parallel_safe = True`` (non-private,
    side-effect free) on that many forked processes, merged in the serial order: the
    same records, removals and stops as ``workers=1`` (:mod:`dpcg.pc.parallel`);
    with ``parallel_min_tests > 0`` only levels that may ask at least that many tests
    (:func:`pair_test_count` summed over the level's pairs: public, the frozen adjacency)
    fork, the others run in this process (forking costs more than a small level).
    ``limits`` (:class:`dpcg.pc.limits.RunLimits`) are checked before every test (edge
    testers), round (batch testers) and level: when one is reached the skeleton phase
    stops as after a budget stop (removals already decided are applied, the graph so far
    is oriented) and ``stop_reason`` names the limit.
    """
    t_start = time.perf_counter()
    if limits is not None and not isinstance(limits, RunLimits):
        raise AlgorithmError(f"limits: expected RunLimits or None, got {type(limits).__name__}")
    guard = LimitGuard(limits)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AlgorithmError(f"workers: expected an integer >= 1, got {workers!r}")
    nm = _validate(names, max_depth)
    if isinstance(tester, LevelStrategy):
        mode = "level"
    elif isinstance(tester, BatchEdgeTester):
        mode = "batch"
    elif isinstance(tester, EdgeTester):
        mode = "edge"
    else:
        raise AlgorithmError(
            f"tester: {type(tester).__name__} has neither test(x, y, S) nor decide_level(...)"
        )
    if workers > 1 and (mode != "edge" or getattr(tester, "parallel_safe", False) is not True):
        raise AlgorithmError(
            f"workers={workers}: only a non-private, side-effect-free edge tester (one with "
            f"parallel_safe = True) runs on several processes; {type(tester).__name__} does not")
    if workers > 1 and not fork_available():  # pragma: no cover - every POSIX has fork
        workers = 1  # the same results, serially
    if isinstance(parallel_min_tests, bool) or not isinstance(parallel_min_tests, int) or (
            parallel_min_tests < 0):
        raise AlgorithmError(f"parallel_min_tests: expected an integer >= 0, got "
                             f"{parallel_min_tests!r}")
    p = len(nm)
    kb = background.resolve(nm) if background is not None else None
    required = kb.required if kb is not None else frozenset()
    adj: list[set[int]] = [set(range(p)) - {v} for v in range(p)]
    if kb is not None:
        for a, b in kb.forbidden:
            adj[a].discard(b)
            adj[b].discard(a)

    sepsets: dict[Pair, Sepset] = {}
    tests: list[TestRecord] = []
    work = 0  # level strategies that declare it: the scores their levels compute
    test_seconds = 0.0
    exhausted = False
    level = 0
    levels_completed = 0
    clock = time.perf_counter
    while max_depth is None or level <= max_depth:
        tested = [frozenset(a) for a in adj]
        frozen = _with_carried(tested, tester, level)
        pairs = [
            (x, y)
            for x in range(p)
            for y in sorted(tested[x])
            if x < y and (x, y) not in required
            and (len(frozen[x]) - 1 >= level or len(frozen[y]) - 1 >= level)
        ]
        if not pairs:
            break
        if guard.reached(max(len(tests), work)):
            break
        removals: dict[Pair, Sepset] = {}

        def answered(x: int, y: int, S: Sepset, outcome: TestOutcome, level: int = level,
                     removals: dict[Pair, Sepset] = removals) -> bool:
            """Record an answered test (and the pair's removal); True if independent."""
            indep = bool(outcome.independent)
            tests.append(TestRecord(level, x, y, S, outcome.statistic, outcome.pvalue, indep))
            if progress is not None:
                progress(level, len(tests))
            if indep:
                removals[(x, y)] = S
            return indep

        told = getattr(progress, "start_level", None)  # a progress line (dpcg.pc.progress)
        if callable(told):
            told(level, frozen, pairs)
        try:
            if mode != "level" and isinstance(tester, LevelListener):
                tester.start_level(level, frozen, pairs)  # may refuse: nothing is left
            if mode == "level":
                assert isinstance(tester, LevelStrategy)
                cands = LevelCandidates.lazy(level, pairs, frozen)
                cands.test_budget = guard.tests_left(max(len(tests), work))
                if isinstance(tester, DeclaresLevelWork):
                    # public: a function of the level's candidates (dpcg.pc.limits)
                    work = max(work, len(tests)) + tester.level_work(level, cands)
                    if guard.would_reach(work):
                        break  # the level would pass a test budget: not started
                t0 = clock()
                stop: BaseException | None = None
                try:
                    decided = tester.decide_level(level, cands)
                except (BudgetExceededError, SessionHaltedError, NoiseRangeError) as exc:
                    # a strategy stopped by its budget may hand over what it decided
                    decided = dict(getattr(exc, "partial", None) or {})  # hand_over
                    stop = exc
                finally:
                    test_seconds += clock() - t0
                    tests.extend(cands.records)
                for pair, sep in decided.items():
                    if pair not in cands or tuple(sep) not in cands[pair]:
                        raise AlgorithmError(
                            f"level strategy returned {pair} | {sep}, which is not one of the "
                            f"level-{level} candidates"
                        )
                    removals[pair] = tuple(sep)
                if progress is not None:
                    progress(level, len(tests))
                if stop is not None:
                    raise stop
                if cands.cut:  # the strategy stopped the level at the test budget
                    guard.reached(max(len(tests), work))
            elif mode == "batch":
                assert isinstance(tester, BatchEdgeTester)
                test_many = tester.test_many
                todo = {pair: candidate_sets(*pair, level, frozen) for pair in pairs}
                while todo:
                    if guard.reached(len(tests)):
                        break
                    queries = []
                    for (x, y), sets in list(todo.items()):
                        S = next(sets, None)
                        if S is None:
                            del todo[(x, y)]
                        else:
                            queries.append((x, y, S))
                    if not queries:
                        break
                    t0 = clock()
                    outcomes = test_many(queries)
                    test_seconds += clock() - t0
                    for (x, y, S), outcome in zip(queries, outcomes, strict=False):
                        if answered(x, y, S, outcome):
                            del todo[(x, y)]
                    if len(outcomes) < len(queries):
                        raise BudgetExceededError(
                            f"the tester answered {len(outcomes)} of {len(queries)} queries")
            elif workers > 1 and (parallel_min_tests == 0 or _at_least(
                    parallel_min_tests, level, frozen, pairs)):
                assert isinstance(tester, EdgeTester)
                t0 = clock()
                deadline, memory = guard.worker_limits()
                stream = run_level(tester.test, functools.partial(_sets_at, level, frozen),
                                   pairs, workers, deadline, memory,
                                   block=_blocks_of(tester), block_sets=BLOCK_SETS)
                try:
                    for item in stream:
                        if isinstance(item, str):  # a worker reached a limit
                            guard.reason = item
                            break
                        i, seq = item
                        x, y = pairs[i]
                        for S, stat, pv, indep in seq:
                            if guard.reached(len(tests)):
                                break
                            answered(x, y, S, _Answered(indep, stat, pv))
                        if guard.reason is not None:
                            break
                finally:
                    stream.close()
                    test_seconds += clock() - t0
            elif (block := _blocks_of(tester)) is not None:
                for x, y in pairs:
                    if guard.reason is not None:
                        break
                    sets = candidate_sets(x, y, level, frozen)
                    closed = False
                    while not closed and (chunk := tuple(islice(sets, BLOCK_SETS))):
                        answers = block(x, y, chunk)
                        for S in chunk:
                            if guard.reached(len(tests)):
                                closed = True
                                break
                            t0 = clock()
                            outcome = next(answers)
                            test_seconds += clock() - t0
                            if answered(x, y, S, outcome):
                                closed = True
                                break
            else:
                assert isinstance(tester, EdgeTester)
                test = tester.test
                for x, y in pairs:
                    if guard.reason is not None:
                        break
                    for S in candidate_sets(x, y, level, frozen):
                        if guard.reached(len(tests)):
                            break
                        t0 = clock()
                        outcome = test(x, y, S)
                        test_seconds += clock() - t0
                        if answered(x, y, S, outcome):
                            break
        except (BudgetExceededError, SessionHaltedError, NoiseRangeError):
            exhausted = True
        for (x, y), S in removals.items():
            adj[x].discard(y)
            adj[y].discard(x)
            sepsets[(x, y)] = S
        if exhausted or guard.reason is not None:
            break
        levels_completed = level + 1
        level += 1

    info: dict[str, Any] = {}
    if guard.reason is not None:
        info["stopped"] = {"limit": guard.reason, "message": guard.message(),
                           "tests": len(tests), "level": level}
    if isinstance(tester, NamesNoSepsets):
        sepsets, dropped = _drop_sepsets(sepsets, tester.unreleased_sepsets)
        if dropped:
            info["sepsets_unreleased"] = dropped
    orientation = orient(nm, adj, sepsets, kb.arcs if kb is not None else frozenset())
    return PCResult(
        names=nm,
        cpdag=orientation.cpdag,
        adjacency=tuple(frozenset(a) for a in adj),
        sepsets=sepsets,
        tests=tests,
        budget_exhausted=exhausted,
        levels_completed=levels_completed,
        seconds=time.perf_counter() - t_start,
        test_seconds=test_seconds,
        v_structures=orientation.v_structures,
        orientation_conflicts=orientation.conflicts,
        info=info,
        stop_reason=guard.reason,
    )


def _at_least(count: int, level: int, frozen: Sequence[frozenset[int]],
              pairs: Sequence[Pair]) -> bool:
    """Whether the level's pairs may ask at least ``count`` tests in all."""
    total = 0
    for x, y in pairs:
        total += pair_test_count(level, frozen, x, y)
        if total >= count:
            return True
    return False


def _drop_sepsets(sepsets: Mapping[Pair, Sepset], pairs: Collection[Pair]
                  ) -> tuple[dict[Pair, Sepset], int]:
    """``sepsets`` without those of ``pairs``, and how many were dropped."""
    drop = {pair for pair in pairs if pair in sepsets}
    return {pair: S for pair, S in sepsets.items() if pair not in drop}, len(drop)


def without_sepsets(result: PCResult, pairs: frozenset[Pair] | set[Pair],
                    background: BackgroundKnowledge | None = None) -> PCResult:
    """``result`` with the separating sets of ``pairs`` dropped and the graph oriented
    again (with the same background knowledge): for pairs removed by a release that
    names no separating set (a screened selection), which therefore claim no
    v-structure. The skeleton is unchanged; ``info["sepsets_unreleased"]`` counts them."""
    sepsets, dropped = _drop_sepsets(result.sepsets, pairs)
    if not dropped:
        return result
    kb = background.resolve(result.names) if background is not None else None
    orientation = orient(result.names, [set(a) for a in result.adjacency], sepsets,
                         kb.arcs if kb is not None else frozenset())
    return dataclasses.replace(
        result, cpdag=orientation.cpdag, sepsets=sepsets,
        v_structures=orientation.v_structures,
        orientation_conflicts=orientation.conflicts,
        info={**result.info, "sepsets_unreleased": dropped})

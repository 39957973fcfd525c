"""EM-PC (Xu, Yuan, Wu 2017, as described in Priv-PC's appendix): per level, the
exponential mechanism picks how many edges to delete and which.

A :class:`~dpcg.pc.engine.LevelStrategy`. At level ``l`` the engine hands over every
adjacent pair ``e`` with its candidate conditioning sets. With the public threshold
``T`` define the margin ``d(e, S) = s(e | S) - T(e, S)`` (``Delta``-sensitive: ``T`` is
public) and the pair's score ``s_e = min_S d(e, S)`` (a minimum of ``Delta``-sensitive
functions is ``Delta``-sensitive). Sort the scores ``s_(1) <= ... <= s_(N)`` and put
``s_(0) = -inf``, ``s_(N+1) = +inf``.

1. **How many**: ``Exponential(Delta, eps_count)`` over ``k = 0..N`` with utility
   ``u(k) = -dist(0, [s_(k), s_(k+1)])``: 0 exactly when ``k`` is the number of pairs
   with a negative margin. Sorting is 1-Lipschitz in the sup norm, so both interval ends
   move by at most ``Delta`` between neighbours and so does ``u(k)``: sensitivity
   ``Delta``.
2. **Which**: ``k`` successive ``Exponential(Delta, eps_pick / k)`` draws over the
   remaining candidates ``(e, S)`` with utility ``-d(e, S)``; a drawn pair is removed with
   ``S`` as its separating set, and all its other candidates leave the pool. The ``k``
   draws are released as one :class:`~accounting.mechanisms.GroupTopK` (a group per
   pair, ``eps_pick / k`` per round): the same law and the same declared cost, in one
   pass instead of ``k`` (``docs/privacy/group-top-k.md``).

   **The smaller side.** When more than half of the pairs are to go (``2k > N``) and every
   pair has exactly one candidate set (always at level 0, where it is the empty set),
   the picks are the ``N - k`` pairs to *keep* instead: ``N - k`` rounds of peeling with
   utility ``s_e``, released as one :class:`~accounting.mechanisms.TopK` at
   ``eps_pick / (N - k)`` per round; every other pair is deleted with its one set. The
   output space is the same (a set of ``k`` pairs to delete, each with its set), each
   round gets ``k / (N - k)`` times the budget of a round of step 2, and the side is
   chosen from the released ``k`` and the public candidate lists only.

Level ``l`` spends ``eps_l = w_l eps`` (public halving weights over levels
``0..max_depth``, default max depth ``min(p - 2, 3)``): ``eps_l / 2`` on the count and
``eps_l / 2`` on the ``k`` picks (``k`` is a released, post-processed value). Basic
composition, enforced by the filter. Only indices are released. Proof note:
``docs/privacy/algorithm-em-pc.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.costs import split_epsilon
from accounting.errors import InvalidParameterError
from accounting.mechanisms import Exponential, GroupTopK, TopK
from accounting.session import Session
from dpcg.citests.base import CIResult
from dpcg.citests.private import StatisticSource
from dpcg.pc.engine import LevelCandidates, Pair, Sepset
from dpcg.private.common import DiscreteAlgorithm, bound_given
from dpcg.private.contract import RunSettings
from dpcg.private.planning import level_weights
from dpcg.private.registry import register_algorithm

#: How many of a level's tests EM-PC scores per engine call (memory, not results).
MARGIN_BATCH = 1 << 16

#: Default deepest level of EM-PC (public; EM-PC computes every test of a level).
DEFAULT_MAX_DEPTH = 3
#: Whether a level whose every pair has one candidate set picks the pairs to keep when
#: they are fewer than the pairs to delete (``False``: always the pairs to delete, as
#: published; kept for comparisons, both are private).
KEEP_SIDE = True


@dataclass(frozen=True)
class EMPCParams:
    """EM-PC has no options of its own: it plans its budget per level (halving weights
    over levels ``0..max_depth``, default max depth ``min(p - 2, 3)``)."""


@dataclass(frozen=True)
class EMPlan:
    rule: str
    max_depth: int
    level_epsilons: tuple[float, ...]
    sensitivity: float

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "max_depth": self.max_depth,
                "epsilon_per_level": list(self.level_epsilons),
                "sensitivity": self.sensitivity}


def make_plan(params: EMPCParams, settings: RunSettings, source: StatisticSource) -> EMPlan:
    budget = settings.budget()
    depth = settings.max_depth
    if depth is None:
        depth = max(0, min(source.p - 2, DEFAULT_MAX_DEPTH))
    w = level_weights(depth)
    # Each level's share rounded down; their exact sum stays within the budget.
    unit = split_epsilon(budget.epsilon, 1 << depth) if depth > 0 else budget.epsilon
    eps = []
    for i in range(depth + 1):
        parts = (1 << (depth - i - 1)) if i < depth else 1
        eps.append(unit * parts)
    del w  # the halving weights, realised exactly on the 2^-depth grid
    # Pre-flight, before the run is reserved: every level's count and every pick of its
    # largest possible deletion (all pairs) must get an epsilon > 0, or the run would
    # fail after its first release (a vanishing budget underflows in the splits).
    pairs = max(source.p * (source.p - 1) // 2, 1)
    for e in eps:
        if not (e / 2.0 > 0 and split_epsilon(e - e / 2.0, pairs) > 0):
            raise InvalidParameterError("epsilon", budget.epsilon,
                                        "too small for EM-PC: a level's share of it "
                                        "rounds to 0")
    return EMPlan("basic", depth, tuple(eps), source.sensitivity())


def count_utilities(scores: np.ndarray) -> np.ndarray:
    """``u(k) = -dist(0, [s_(k), s_(k+1)])`` for ``k = 0..N`` (see module docstring)."""
    s = np.sort(np.asarray(scores, dtype=np.float64))
    lo = np.concatenate(([-np.inf], s))
    hi = np.concatenate((s, [np.inf]))
    out = np.where(lo > 0, -lo, np.where(hi < 0, hi, 0.0))
    return np.asarray(out, dtype=np.float64)


class EMPCStrategy:
    """Level strategy: exponential mechanism for the count, then for the picks."""

    def __init__(self, plan: EMPlan, source: StatisticSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session

    def _margins(self, candidates: LevelCandidates) -> np.ndarray:
        """``s - T`` of every test of the level, in the candidates' order. Every test is
        scored: the engine is asked for them in batches of :data:`MARGIN_BATCH` (one
        GROUP BY pass per batch on DuckDB/Spark instead of one query per test), so no
        list of the level's tests is held whole (``docs/internals.md``, "Memory
        model"); the values are the same whatever the batch size."""
        src = self.source
        out = np.empty(candidates.n_tests(), dtype=np.float64)
        i = 0
        for batch in candidates.batches(MARGIN_BATCH):
            queries = [(x, y, S) for (x, y), S in batch]
            src.prefetch(queries)
            for x, y, S in queries:
                out[i] = src.score(x, y, S) - src.threshold(x, y, S)
                i += 1
        assert i == out.shape[0]
        return out

    def level_work(self, level: int, candidates: LevelCandidates) -> int:
        """Scores the level computes at most: every candidate test
        (:class:`~dpcg.pc.engine.DeclaresLevelWork`; public)."""
        if level > self.plan.max_depth:
            return 0
        return candidates.n_tests()

    def decide_level(self, level: int, candidates: LevelCandidates) -> Mapping[Pair, Sepset]:
        if level > self.plan.max_depth or len(candidates) == 0:
            return {}
        eps_level = self.plan.level_epsilons[level]
        eps_count = eps_level / 2.0
        eps_pick_total = eps_level - eps_count
        pairs = list(candidates)
        # each computed once per level, when a release first reads it (the count and
        # the keep side both read the pair scores)
        sizes = np.array([len(candidates[pair]) for pair in pairs], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)

        @functools.cache
        def margins() -> np.ndarray:
            return self._margins(candidates)

        @functools.cache
        def pair_scores() -> np.ndarray:
            # each pair's smallest margin (every pair has at least one set)
            out = np.minimum.reduceat(margins(), starts) if len(pairs) else np.empty(0)
            out = np.asarray(out, dtype=np.float64)
            out.setflags(write=False)
            return out

        # every score of level 0 is a test given the empty set (bound_given)
        delta = (self.source.sensitivity(S=bound_given(()))
                 if level == 0 else self.plan.sensitivity)
        k = int(self.session.release(
            Exponential(delta, eps_count), lambda: count_utilities(pair_scores()),
            purpose=f"em-pc level {level}: number of edges to delete",
        ))
        removals: dict[Pair, Sepset] = {}
        if k == 0:
            return removals
        if KEEP_SIDE and 2 * k > len(pairs) and all(
                len(candidates[pair]) == 1 for pair in pairs):
            return self._keep(level, pairs, candidates, k, eps_pick_total, pair_scores, delta)
        eps_pick = split_epsilon(eps_pick_total, k)

        # the candidates in the order of _margins, labelled by pair: public (the frozen
        # adjacency), never read from the margins; a chosen index is mapped back to its
        # (pair, set) through the sizes, without listing the level's sets
        groups = np.repeat(np.arange(len(pairs), dtype=np.int64), sizes)

        def neg_margins() -> np.ndarray:
            m = margins()
            assert len(m) == len(groups)  # the same candidates, in the same order
            return np.asarray(-m, dtype=np.float64)

        # k rounds of group peeling (a drawn pair's other sets leave the pool) as one
        # release with the same law and declared cost (docs/privacy/group-top-k.md)
        chosen = self.session.release(
            GroupTopK.over(groups, delta, eps_pick, k), neg_margins,
            purpose=f"em-pc level {level}: the {k} edges to delete",
        )
        for j in np.asarray(chosen).ravel():
            g = int(groups[int(j)])
            pair = pairs[g]
            S = tuple(candidates[pair][int(j) - int(starts[g])])
            removals[pair] = S
            candidates.record(pair[0], pair[1], S, CIResult(True, None, None))
        return removals

    def _keep(self, level: int, pairs: list[Pair], candidates: LevelCandidates, k: int,
              eps_pick_total: float, pair_scores: Callable[[], np.ndarray], delta: float
              ) -> dict[Pair, Sepset]:
        """Delete ``k`` of the level's pairs by picking the ``N - k`` to keep: ``N - k``
        rounds of peeling (one :class:`TopK`) with utility ``s_e`` (each pair's one
        candidate set is its separating set when deleted, so nothing else is chosen)."""
        keep = len(pairs) - k
        kept: set[int] = set()
        if keep > 0:
            chosen = self.session.release(
                TopK(delta, split_epsilon(eps_pick_total, keep), keep),
                pair_scores,
                purpose=f"em-pc level {level}: the {keep} edges to keep",
            )
            kept = {int(j) for j in np.asarray(chosen).ravel()}
        removals: dict[Pair, Sepset] = {}
        for i, pair in enumerate(pairs):
            if i not in kept:
                (S,) = candidates[pair]
                removals[pair] = S
                candidates.record(pair[0], pair[1], S, CIResult(True, None, None))
        return removals


class EMPC(DiscreteAlgorithm[EMPCParams, EMPlan, EMPCStrategy]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``em-pc``."""

    name = "em-pc"
    description = "EM-PC: exponential mechanism picks how many and which edges per level"
    params = EMPCParams
    proof_note = "docs/privacy/algorithm-em-pc.md"

    def plan(self, params: EMPCParams, settings: RunSettings,
             source: StatisticSource) -> EMPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: EMPlan, source: StatisticSource, session: Session) -> EMPCStrategy:
        return EMPCStrategy(plan, source, session)


ALGORITHM = register_algorithm(EMPC())

"""Lazy candidate sets (issue 59): the same sets in the same order as the eager
enumeration, with memory independent of ``C(|adj|, level)``."""

from __future__ import annotations

import math
import random
import tracemalloc
from itertools import combinations

import pytest

from dpcg.errors import AlgorithmError
from dpcg.pc.engine import (
    CandidateSets,
    LevelCandidates,
    candidate_sets,
    pair_test_count,
)


def _adjacency(p: int, density: float, seed: int) -> list[frozenset[int]]:
    rng = random.Random(seed)
    adj: list[set[int]] = [set() for _ in range(p)]
    for a, b in combinations(range(p), 2):
        if rng.random() < density:
            adj[a].add(b)
            adj[b].add(a)
    return [frozenset(a) for a in adj]


@pytest.mark.parametrize("seed", range(6))
def test_same_sets_same_order_as_eager(seed: int) -> None:
    adj = _adjacency(11, 0.3 + 0.1 * seed, seed)
    for level in range(0, 5):
        for x, y in combinations(range(11), 2):
            eager = tuple(candidate_sets(x, y, level, adj))
            lazy = CandidateSets(x, y, level, adj)
            assert tuple(lazy) == eager
            assert lazy == eager
            assert (lazy != eager) is False
            assert len(lazy) == len(eager) == (
                pair_test_count(level, adj, x, y) if level else 1)
            assert [lazy[i] for i in range(len(lazy))] == list(eager)
            if eager:
                assert lazy[-1] == eager[-1]
            assert lazy[2:] == eager[2:]
            assert lazy[1::2] == eager[1::2]
            assert lazy[::-1] == eager[::-1]
            for S in eager:
                assert S in lazy
            assert list(lazy.batches(3)) == [eager[i:i + 3] for i in range(0, len(eager), 3)]


def test_membership_rejects_what_is_not_a_candidate() -> None:
    adj = [frozenset({1, 2, 3}), frozenset({0, 2}), frozenset({0, 1, 3}), frozenset({0, 2})]
    sets = CandidateSets(0, 1, 2, adj)
    assert tuple(sets) == ((2, 3),)
    assert (3, 2) not in sets  # unsorted: never enumerated
    assert (1, 2) not in sets  # contains the other endpoint
    assert (2,) not in sets
    assert [2, 3] not in sets  # type: ignore[comparison-overlap]
    assert (2.0, 3) not in sets
    assert (0, 3) not in sets
    with pytest.raises(IndexError):
        sets[1]
    with pytest.raises(IndexError):
        sets[-2]


def test_level_candidates_lazy_equals_explicit() -> None:
    adj = _adjacency(9, 0.6, 1)
    pairs = [(x, y) for x in range(9) for y in sorted(adj[x]) if x < y]
    lazy = LevelCandidates.lazy(2, pairs, adj)
    eager = LevelCandidates(2, {pr: tuple(candidate_sets(*pr, 2, adj)) for pr in pairs}, adj)
    assert list(lazy) == list(eager) == pairs
    assert len(lazy) == len(eager)
    for pr in pairs:
        assert lazy[pr] == eager[pr]
        assert pr in lazy
    assert (0, 0) not in lazy
    with pytest.raises(KeyError):
        lazy[(0, 0)]
    flat = [(pr, S) for pr in pairs for S in eager[pr]]
    assert lazy.n_tests() == len(flat)
    for size in (1, 4, 1000):
        got = [item for batch in lazy.batches(size) for item in batch]
        assert got == flat
        assert all(len(b) <= size for b in lazy.batches(size))
    with pytest.raises(AlgorithmError):
        next(lazy.batches(0))


def test_memory_does_not_grow_with_the_number_of_sets() -> None:
    # a hub: 120 nodes all adjacent to each other; level 6 has C(118, 6) ~ 2.7e9 sets
    # per pair, which no eager listing could hold
    p = 120
    adj = [frozenset(set(range(p)) - {v}) for v in range(p)]
    pairs = [(x, y) for x in range(p) for y in range(x + 1, p)]
    tracemalloc.start()
    try:
        cands = LevelCandidates.lazy(6, pairs, adj)
        total = 0
        for pr in pairs[:200]:
            sets = cands[pr]
            total += len(sets)
            assert sets[0] == tuple(sorted(adj[pr[0]] - {pr[1]}))[:6]
            assert sets[len(sets) // 2] in sets
        first = next(cands.batches(1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 200 * math.comb(p - 2, 6)
    assert len(first) == 1000
    assert peak < 8 * 2**20  # pairs and one batch, not C(118, 6) sets


def test_announcements_are_listed_only_for_engines_that_count_them() -> None:
    """``dpcg.private.common.announce``: the in-memory engine drops announcements, so a
    level's candidate tests are never listed for it; a warming engine gets them all."""
    from typing import Any

    from dpcg.private.common import announce

    class Source:
        def __init__(self, engine: object) -> None:
            self.engine = engine
            self.expected: list[Any] | None = None

        def expect(self, queries: list[Any]) -> None:
            self.expected = list(queries)

    class Warming:
        def warm(self, queries: Any) -> None:  # the WarmsTables protocol
            raise AssertionError("not called by announce")

    consumed = []

    def queries() -> Any:
        for i in range(5):
            consumed.append(i)
            yield (0, 1, (i + 2,))

    plain = Source(object())
    announce(plain, queries())  # type: ignore[arg-type]
    assert plain.expected is None
    assert consumed == []  # the generator was never run
    warm = Source(Warming())
    announce(warm, queries())  # type: ignore[arg-type]
    assert warm.expected == [(0, 1, (i + 2,)) for i in range(5)]


def test_truth_of_a_hub_pairs_sets_beyond_sys_maxsize() -> None:
    """Around a wide hub C(|adj|, level) passes sys.maxsize, which len() refuses; asking
    whether a pair has any set must not go through len (marginal-pc crashed there with
    an OverflowError on a 150-node scale-free network, found 2026-12-03)."""
    import sys

    adj = [frozenset(range(1, 121)), *(frozenset({0}) for _ in range(120))]
    sets = CandidateSets(0, 1, 60, adj)
    assert sets.size > sys.maxsize
    assert bool(sets)
    assert next(iter(sets)) == tuple(range(2, 62))
    with pytest.raises(OverflowError):
        len(sets)
    assert not CandidateSets(0, 1, 200, adj)

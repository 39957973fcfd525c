"""A level's tests on several processes, merged in the serial order (issue 59).

For **non-private**, side-effect-free edge testers only (a tester whose class sets
``parallel_safe = True``: the chi-square family, Kendall, Spearman, Fisher-z of
:mod:`dpcg.citests.nonprivate`). PC-stable's pairs are independent within a level (the
adjacency is frozen, removals are applied at its end), and each pair's sequence of
tests (candidate sets in order, up to the first separating set) does not depend on
the other pairs. So the level's pairs are cut into chunks, each chunk's pairs run
their sequences in a forked worker, and the chunks come back **in order**
(``Pool.imap``): the records and removals are exactly the serial ones, in the serial
order (``tests/pc/test_parallel.py`` compares them).

Never for a private tester: its releases go through one session and one ledger, in
one process, in a fixed order.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from itertools import islice
from typing import Any

from dpcg.pc.limits import resident_bytes

Pair = tuple[int, int]
Sepset = tuple[int, ...]
#: One answered test of a pair's sequence: (S, statistic, pvalue, independent).
Answer = tuple[Sepset, float | None, float | None, bool]

__all__ = ["CHUNK_PAIRS", "fork_available", "run_level"]

#: Pairs per chunk handed to a worker (small: a hub's pairs are long, the others short).
CHUNK_PAIRS = 4

# The forked workers inherit what a level needs through this module global (set before
# the pool forks, cleared after): the tester, its candidate enumeration, the level's
# pairs, and the stop conditions.
_STATE: dict[str, Any] = {}


def fork_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _work(span: tuple[int, int]) -> tuple[list[list[Answer]], str | None]:
    st = _STATE
    test = st["test"]
    sets_of: Callable[[int, int], Iterator[Sepset]] = st["sets_of"]
    pairs: Sequence[Pair] = st["pairs"]
    deadline: float | None = st["deadline"]
    memory: int | None = st["memory"]
    block: Callable[[int, int, Sequence[Sepset]], Iterator[Any]] | None = st["block"]
    block_sets: int = st["block_sets"]
    out: list[list[Answer]] = []
    checks = 0
    for i in range(*span):
        x, y = pairs[i]
        seq: list[Answer] = []
        sets = sets_of(x, y)
        closed = False
        while not closed:
            # a block of the pair's sets (a tester that shares their counting), or one
            chunk = tuple(islice(sets, block_sets if block is not None else 1))
            if not chunk:
                break
            outcomes = block(x, y, chunk) if block is not None else None
            for S in chunk:
                checks += 1
                if deadline is not None and time.monotonic() >= deadline:
                    return out, "max_seconds"
                if memory is not None and checks % 64 == 0 and resident_bytes() >= memory:
                    return out, "max_memory"
                outcome = next(outcomes) if outcomes is not None else test(x, y, S)
                indep = bool(outcome.independent)
                seq.append((S, outcome.statistic, outcome.pvalue, indep))
                if indep:
                    closed = True
                    break
        out.append(seq)
    return out, None


def run_level(test: Callable[[int, int, Sepset], Any],
              sets_of: Callable[[int, int], Iterator[Sepset]], pairs: Sequence[Pair],
              workers: int, deadline: float | None = None, memory: int | None = None, *,
              block: Callable[[int, int, Sequence[Sepset]], Iterator[Any]] | None = None,
              block_sets: int = 64,
              ) -> Generator[tuple[int, list[Answer]] | str, None, None]:
    """Yield ``(pair index, answers)`` for every pair in order, or a limit's name (and
    stop) when a worker reached ``deadline`` (``time.monotonic``) or its share of
    ``memory`` (each of ``workers`` processes gets ``memory / (workers + 1)``).
    ``block(x, y, sets)`` (a side-effect-free tester's ``test_block``), if given, answers
    ``block_sets`` of a pair's sets at a time (read up to the first separating set)."""
    spans = [(a, min(a + CHUNK_PAIRS, len(pairs))) for a in range(0, len(pairs), CHUNK_PAIRS)]
    _STATE.update(test=test, sets_of=sets_of, pairs=pairs, deadline=deadline,
                  memory=None if memory is None else memory // (workers + 1),
                  block=block, block_sets=max(int(block_sets), 1))
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            for (a, _b), (answers, stop) in zip(spans, pool.imap(_work, spans), strict=True):
                for k, seq in enumerate(answers):
                    yield a + k, seq
                if stop is not None:
                    pool.terminate()
                    yield stop
                    return
    finally:
        _STATE.clear()

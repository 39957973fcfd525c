"""Pre-flight test estimates and a progress line for non-private PC runs (issue 59).

* :func:`level_test_bounds` gives, from an adjacency (after level 0, say), the number of
  tests each later level asks **at most**: ``sum over adjacent pairs of``
  :func:`~dpcg.pc.engine.pair_test_count`, i.e. if no further pair were removed. It is
  an upper bound (a pair stops at its first separating set, and removals shrink the
  adjacency of later levels), exact for the next level's worst case.
* :class:`ProgressLine` is a ``progress`` callback for :func:`~dpcg.pc.engine.pc_stable`
  that also listens to level starts: it prints, at most every ``every`` seconds, the
  level, tests done, the level's pending tests (upper bound) and an ETA for the level
  from the level's rate so far, and after level 0 the pre-flight estimate of the levels
  to come.

Only for **non-private** runs: it reads the clock, and the time tests take depends on
the data (``docs/memory.md``); a private run reports progress through its own,
public, callback.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from dpcg.pc.engine import Pair, pair_test_count

__all__ = ["MIN_RATE_SECONDS", "MIN_RATE_TESTS", "ProgressLine", "level_test_bounds"]

#: A level's ETA is given once its tests have run this long and this many of them are
#: done (before: "ETA ?").
MIN_RATE_SECONDS = 1.0
MIN_RATE_TESTS = 100


def level_test_bounds(adjacency: Sequence[frozenset[int]], start: int,
                      max_depth: int | None = None, *, cap: int = 10**15) -> dict[int, int]:
    """``{level: most tests}`` for ``level = start, start + 1, ...`` up to ``max_depth``
    (or until no pair has ``level`` other neighbours), if no further pair were removed.
    Stops adding levels once the running total passes ``cap`` (the bound then says
    only "more than cap")."""
    p = len(adjacency)
    pairs = [(x, y) for x in range(p) for y in adjacency[x] if x < y]
    out: dict[int, int] = {}
    total = 0
    level = start
    widest = max((len(a) for a in adjacency), default=0)
    while (max_depth is None or level <= max_depth) and level <= max(widest - 1, 0):
        n = sum(pair_test_count(level, adjacency, x, y) for x, y in pairs)
        if n == 0:
            break
        out[level] = n
        total += n
        if total > cap:
            break
        level += 1
    return out


def _eta(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}min"
    return f"{seconds / 3600:.1f}h"


class ProgressLine:
    """``pc_stable(..., progress=ProgressLine())``: a line on ``stream`` (default
    stderr) at most every ``every`` seconds, e.g.::

        level 2: 41,230 tests done (run 118,004), <= 612,880 pending at this level, ETA <= 2.9min

    and after level 0 the pre-flight estimate::

        pre-flight: after level 0, at most 98,417 tests at level 1, 2,791,816 at level 2, ...
    """

    def __init__(self, stream: TextIO | None = None, every: float = 2.0,
                 max_depth: int | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.max_depth = max_depth
        self._level = -1
        self._level_bound = 0
        self._level_start_tests = 0
        self._level_t0 = time.perf_counter()
        self._last = -math.inf
        self._tests = 0
        self.estimates: dict[int, int] = {}

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[Pair]) -> None:
        self._level = level
        self._level_bound = sum(pair_test_count(level, adjacency, x, y) for x, y in pairs)
        self._level_start_tests = self._tests
        self._level_t0 = time.perf_counter()
        if level == 1:
            self.estimates = level_test_bounds(adjacency, 1, self.max_depth)
            parts = [f"{n:,} at level {lv}" for lv, n in list(self.estimates.items())[:6]]
            more = ", ..." if len(self.estimates) > 6 else ""
            self._print("pre-flight: after level 0, at most "
                        + (", ".join(parts) or "no tests") + more
                        + " (upper bounds: no further removals)")

    def __call__(self, level: int, tests: int) -> None:
        self._tests = tests
        now = time.perf_counter()
        if now - self._last < self.every:
            return
        self._last = now
        done = tests - self._level_start_tests
        pending = max(self._level_bound - done, 0)
        elapsed = now - self._level_t0
        rate = done / max(elapsed, 1e-9)
        # no ETA from the first tests of a level (a rate over one test said "ETA <=
        # 7440h" at the start of level 4 on hub-60; with workers the first answers
        # arrive a chunk of pairs at a time)
        settled = elapsed >= MIN_RATE_SECONDS and done >= MIN_RATE_TESTS
        eta = pending / rate if rate > 0 and settled else math.inf
        self._print(f"level {level}: {done:,} tests done (run {tests:,}), <= {pending:,} "
                    f"pending at this level, ETA <= {_eta(eta)}")

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

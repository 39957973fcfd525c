"""Run limits: a memory and a time budget for every PC run (issue 59).

``RunLimits(max_seconds=..., max_memory=..., max_tests=..., public_only=...)`` is passed
to :func:`dpcg.pc.engine.pc_stable` (``limits=``). When a limit is reached the skeleton
phase stops, the graph so far is oriented and returned, and ``PCResult.stop_reason``
names the limit (``"max_seconds"``, ``"max_memory"`` or ``"max_tests"``) with a message
in ``info["stopped"]``. Nothing is raised: a private run's releases so far stay
recorded and spent, and its partial result is as valid as one stopped by its budget.

Two ways of deciding, because wall time and memory depend on the data:

* ``public_only=False`` (non-private runs): the engine reads the clock and the
  process's resident memory (``/proc/self/statm``; peak RSS where that is missing)
  before each test (edge testers), each round (batch testers) and each level (level
  strategies).
* ``public_only=True`` (private runs): the clock and the memory are **never read**.
  Whether and when a run stops would otherwise depend on how long the data's tables
  took to count and how large they were, an unaccounted release. Instead both limits
  become a budget of **tests answered** through a public cost model: ``max_seconds``
  allows ``max_seconds * PUBLIC_ROW_TESTS_PER_SECOND / n`` tests and ``max_memory``
  allows ``(max_memory - p * n - BASE_BYTES) / BYTES_PER_TEST`` tests (``n``, ``p``:
  public). The number of tests a private run has answered is post-processing of its
  releases (each record is a release or is derived from released outputs), so the
  stop is too. The model is conservative on the machine it was measured on
  (``docs/memory.md``); on a slower machine the run may take longer than
  ``max_seconds``.

Checks happen between tests, rounds and levels, never inside a release.
"""

from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import dataclass

from dpcg.errors import AlgorithmError

__all__ = [
    "BASE_BYTES",
    "BYTES_PER_TEST",
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_MAX_SECONDS",
    "PUBLIC_ROW_TESTS_PER_SECOND",
    "LimitGuard",
    "RunLimits",
    "default_limits",
    "resident_bytes",
]

#: Default time budget of a run given limits by the front door: 6 hours.
DEFAULT_MAX_SECONDS = 6 * 3600.0
#: Default memory budget: 4 GiB (the machine's physical memory, if smaller, times 3/4).
DEFAULT_MAX_MEMORY = 4 * 2**30
#: Public cost model (private runs): rows x tests per second a private test costs at
#: least on the reference machine (2 shared cores, 2026-12); a per-pair release scores
#: up to 32 sets on the full data plus Priv-PC's subsample, so this is 1/5 of non-private
#: G^2 PC's measured ~2.6e8.
PUBLIC_ROW_TESTS_PER_SECOND = 5.0e7
#: Public memory model: the interpreter, NumPy and SciPy; and per test answered (its
#: record, its cached exact scores and their keys), with a margin.
BASE_BYTES = 300 * 2**20
BYTES_PER_TEST = 1024


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def default_limits(*, public_only: bool, rows: int | None = None, columns: int | None = None
                   ) -> RunLimits:
    """The documented defaults: ``DEFAULT_MAX_SECONDS`` and the smaller of
    ``DEFAULT_MAX_MEMORY`` and 3/4 of physical memory (a fact of the machine, public)."""
    phys = _physical_memory()
    mem = DEFAULT_MAX_MEMORY if phys is None else min(DEFAULT_MAX_MEMORY, phys * 3 // 4)
    return RunLimits(max_seconds=DEFAULT_MAX_SECONDS, max_memory=mem,
                     public_only=public_only, rows=rows, columns=columns)


def resident_bytes() -> int:
    """The process's resident memory now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
        return pages * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _positive(name: str, v: object, *, integer: bool) -> None:
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, int | float) or (
            integer and not isinstance(v, int)):
        kind = "an integer" if integer else "a number"
        raise AlgorithmError(f"{name}: expected {kind} > 0 or None, got {type(v).__name__}")
    if not (math.isfinite(v) and v > 0):
        raise AlgorithmError(f"{name}: expected a finite value > 0 or None, got {v!r}")


@dataclass(frozen=True)
class RunLimits:
    """A run's time, memory and test budgets (``None``: no limit). ``rows`` and
    ``columns`` (``n``, ``p``: public) feed the public cost model of ``public_only``
    runs and are required there when ``max_seconds`` or ``max_memory`` is set."""

    max_seconds: float | None = None
    max_memory: int | None = None
    max_tests: int | None = None
    public_only: bool = False
    rows: int | None = None
    columns: int | None = None

    def __post_init__(self) -> None:
        _positive("max_seconds", self.max_seconds, integer=False)
        _positive("max_memory", self.max_memory, integer=True)
        _positive("max_tests", self.max_tests, integer=True)
        _positive("rows", self.rows, integer=True)
        _positive("columns", self.columns, integer=True)
        if not isinstance(self.public_only, bool):
            raise AlgorithmError("public_only: expected True or False")
        if self.public_only and (self.max_seconds is not None or self.max_memory is not None
                                 ) and (self.rows is None or self.columns is None):
            raise AlgorithmError("limits: a public-only time or memory limit needs the "
                                 "public rows and columns of the data")

    def test_budgets(self) -> dict[str, int]:
        """``public_only``: the tests each limit allows (public cost model)."""
        out: dict[str, int] = {}
        if self.max_tests is not None:
            out["max_tests"] = self.max_tests
        if not self.public_only:
            return out
        n = self.rows or 1
        p = self.columns or 0
        if self.max_seconds is not None:
            out["max_seconds"] = int(self.max_seconds * PUBLIC_ROW_TESTS_PER_SECOND / n)
        if self.max_memory is not None:
            out["max_memory"] = max((self.max_memory - p * n - BASE_BYTES) // BYTES_PER_TEST,
                                    0)
        return out


_MESSAGES = {
    "max_seconds": "the run's time limit (max_seconds={v}) was reached",
    "max_memory": "the run's memory limit (max_memory={v} bytes) was reached",
    "max_tests": "the run's test limit (max_tests={v}) was reached",
}


class LimitGuard:
    """The engine's check of :class:`RunLimits`: ``reached(tests)`` returns the name of
    the first limit reached with ``tests`` answered so far, or ``None``."""

    #: Resident memory is read at most this often (seconds; the read costs ~10 us).
    MEMORY_EVERY = 0.05

    def __init__(self, limits: RunLimits | None) -> None:
        self.limits = limits
        self._t0 = time.perf_counter()
        self._budgets = limits.test_budgets() if limits is not None else {}
        self._next_mem = 0.0
        self.reason: str | None = None

    def reached(self, tests: int) -> str | None:
        lim = self.limits
        if lim is None:
            return None
        for name, budget in self._budgets.items():
            if tests >= budget:
                self.reason = name
                return name
        if lim.public_only:
            return None  # never read the clock or the memory (module docstring)
        now = time.perf_counter()
        if lim.max_seconds is not None and now - self._t0 >= lim.max_seconds:
            self.reason = "max_seconds"
            return self.reason
        if lim.max_memory is not None and now >= self._next_mem:
            self._next_mem = now + self.MEMORY_EVERY
            if resident_bytes() >= lim.max_memory:
                self.reason = "max_memory"
                return self.reason
        return None

    def tests_left(self, done: int) -> int | None:
        """How many tests the test budgets (``max_tests``, a public-only limit's) allow
        after ``done``, or ``None`` without one; the clock is not read."""
        if not self._budgets:
            return None
        return max(min(self._budgets.values()) - done, 0)

    def would_reach(self, count: int) -> str | None:
        """The first test budget (``max_tests``, or a public-only limit's) that
        ``count`` reaches, recorded as the stop reason; the clock is not read."""
        for name, budget in self._budgets.items():
            if count > budget:
                self.reason = name
                return name
        return None

    def worker_limits(self) -> tuple[float | None, int | None]:
        """For forked workers of a non-private level (:mod:`dpcg.pc.parallel`): the
        deadline on ``time.monotonic`` and the memory limit, or ``None``s."""
        lim = self.limits
        if lim is None or lim.public_only:
            return None, None
        deadline = None
        if lim.max_seconds is not None:
            left = lim.max_seconds - (time.perf_counter() - self._t0)
            deadline = time.monotonic() + left
        return deadline, lim.max_memory

    def message(self) -> str:
        """What stopped the run (public: a limit's name and its configured value)."""
        assert self.limits is not None
        assert self.reason is not None
        value = getattr(self.limits, self.reason)
        how = (" (counted in tests by the public cost model, docs/memory.md)"
               if self.limits.public_only and self.reason != "max_tests" else "")
        return (_MESSAGES[self.reason].format(v=value) + how
                + "; the skeleton so far was oriented and returned")

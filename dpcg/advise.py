"""The budget advisor (``dpcg advise``, issue 57): the private algorithms' skeleton F1
predicted from public facts alone, before any data is touched.

Input: the schema's cardinalities (one per column), the number of rows ``n``, the budgets
to consider and, optionally, what the user knows of the network: its maximum in-degree
(``max_parents``) and its shape (``uniform`` or ``scale-free``). Nothing else.

The advisor draws ``networks`` networks from its prior
(:func:`dpcg.datasets.prior_network.prior_network`: the schema's cardinalities, a range of
densities and both shapes unless given, a wide range of dependence strengths, skews and
table kinds), samples ``n`` rows from each (``n`` is kept: F1 depends on it), runs every
algorithm at every budget on each sample (the exact statistics are shared between the
runs of one sample through a score cache; the runs are independent per network and spread
over ``workers`` processes), and reports per algorithm and budget

* ``f1``: the median skeleton F1 over the simulated networks, ``f1_mean`` the mean;
* ``f1_low``, ``f1_high``: the band, the ``BAND`` (5 % and 95 %) quantiles of F1 over
  the simulated networks and their noise seeds: a *predictive* band for one real network
  (calibrated on networks the advisor never simulates: ``docs/benchmarks/advise.md``);
* mean precision and recall;

and per algorithm the smallest budget of the grid whose median F1 reaches a target
(interpolated in ``log eps`` between grid points).

**Time per advice.** The number of simulated networks is :func:`default_networks`' (a
cost model of public sizes, 8-24) cut to a public time budget ``seconds`` (default 60 s
of wall time on 2 idle cores, :data:`SECONDS`): networks ``0, 1, 2, ...`` are simulated
in this order and, after the first :data:`FLOOR_NETWORKS`, another one is started only
while the CPU spent plus the mean cost of a finished network for each running one and the
new one stays within ``2 * seconds * BUDGET_USE``. Schemas whose networks are cheap
simulate exactly what the cost model gives; costly ones (barley: up to 67 categories a
column, 10-45 CPU s a network) fewer, and a band from fewer than :data:`MIN_NETWORKS`
networks is widened to a normal-theory prediction interval (:func:`band`).

It reads no data and charges nothing: every run is on synthetic data, in memory, with an
in-memory ledger that is dropped (:attr:`Advice.note` says so). Given the number of
networks, everything is a deterministic function of the inputs and ``seed`` (the number
of processes does not change the result); the count a time-limited advice used is
:attr:`Advice.networks`, and passing it back as ``networks`` reproduces that advice
exactly (only the count depends on the machine's speed, never the draws).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

from dpcg.datasets.prior_network import prior_network
from dpcg.datasets.random_network import SHAPES
from dpcg.errors import AlgorithmError
from dpcg.metrics import skeleton_scores
from dpcg.pipeline.request import NO_LEDGER, DiscoverRequest
from dpcg.pipeline.run import execute

__all__ = ["ALGORITHMS", "BAND", "EPSILONS", "SECONDS", "Advice", "AdviceRow", "advise", "band",
           "cardinality_range", "default_networks", "epsilon_for"]

#: Algorithms advised on by default (the per-test leaders of ``docs/choosing.md``).
ALGORITHMS = ("laplace-pc", "priv-pc")
#: Budgets of the default grid.
EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: Quantiles of the band.
BAND = (0.05, 0.95)
#: Delta of the simulated runs (the benchmarks' default).
DELTA = 1e-6
#: Target CPU seconds of one advice when ``networks`` is not given (:func:`default_networks`).
CPU_BUDGET = 100.0
#: Bounds on the automatic number of simulated networks (before the time budget).
MIN_NETWORKS, MAX_NETWORKS = 8, 24
#: Default time budget of one advice: wall seconds on :data:`REFERENCE_CORES` idle cores.
SECONDS = 60.0
#: Cores the time budget refers to (the project's reference machine).
REFERENCE_CORES = 2
#: Share of ``REFERENCE_CORES * seconds`` of CPU spent on networks (the rest: the last
#: network running alone on one core, the processes' start-up).
BUDGET_USE = 0.8
#: Networks simulated whatever the time budget (a band needs a few draws).
FLOOR_NETWORKS = 4
NOTE = ("advice from public facts only (schema cardinalities, n, budgets and what you "
        "gave of the network's shape): every run is on synthetic data from networks "
        "drawn from the advisor's prior; no data was read and no budget was charged")


@dataclass(frozen=True)
class AdviceRow:
    """One algorithm at one budget over the simulated networks."""

    algorithm: str
    epsilon: float
    f1: float
    f1_low: float
    f1_high: float
    f1_mean: float
    precision: float
    recall: float
    runs: int


@dataclass(frozen=True)
class Advice:
    """What :func:`advise` returns (``to_json`` for the CLI)."""

    nodes: int
    rows: int
    card: tuple[int, int]
    max_parents: int | None
    shape: str | None
    networks: int
    target_f1: float
    band: tuple[float, float]
    rows_table: tuple[AdviceRow, ...]
    epsilon_for_target: dict[str, float | None]
    seconds: float
    note: str = NOTE
    family: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["rows_table"] = [asdict(r) for r in self.rows_table]
        return out

    def row(self, algorithm: str, epsilon: float) -> AdviceRow:
        """The row of ``algorithm`` at ``epsilon``."""
        for r in self.rows_table:
            if r.algorithm == algorithm and r.epsilon == float(epsilon):
                return r
        raise KeyError((algorithm, epsilon))


def cardinality_range(cardinalities: Sequence[int]) -> tuple[int, int]:
    """The schema's smallest and largest cardinality (at least 2: a one-category column
    carries no dependence)."""
    cards = _cards(cardinalities)
    return max(2, min(cards)), max(2, max(cards))


def _cards(cardinalities: Sequence[int]) -> list[int]:
    if isinstance(cardinalities, str | bytes) or not isinstance(cardinalities, Sequence):
        raise AlgorithmError("cardinalities: expected a sequence of positive integers")
    if not cardinalities or any(isinstance(c, bool) or not isinstance(c, int | np.integer)
                                or c < 1 for c in cardinalities):
        raise AlgorithmError("cardinalities: expected positive integers")
    return [int(c) for c in cardinalities]


def default_networks(cardinalities: Sequence[int], rows: int, runs_per_network: int) -> int:
    """How many networks an advice simulates when not told: as many as fit
    :data:`CPU_BUDGET` by a cost model of the per-test algorithms, within
    ``[MIN_NETWORKS, MAX_NETWORKS]``: ``0.0045 p mean(card^2) n / 10^5`` CPU seconds per
    run (fitted to advices at 20-76 columns and 100,000 rows on the shared 2-core machine,
    the largest ratio of measured to modelled cost: water's). A function of public sizes
    only."""
    cards = [max(2, int(c)) for c in cardinalities]
    p = len(cards)
    scale = max(rows, 10_000) / 100_000
    per_run = 0.0045 * p * (sum(c * c for c in cards) / max(p, 1)) * scale
    per_network = 0.1 * scale + runs_per_network * per_run
    return int(min(MAX_NETWORKS, max(MIN_NETWORKS, CPU_BUDGET // per_network)))


def _check(cards: list[int], rows: int, epsilons: Sequence[float], algorithms: Sequence[str],
           max_parents: int | None, shape: str | None, networks: int | None,
           target_f1: float, seed: int, workers: int | None) -> None:
    if len(cards) < 2:
        raise AlgorithmError("cardinalities: need at least 2 variables")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 2:
        raise AlgorithmError(f"rows: expected an integer >= 2, got {rows!r}")
    if not epsilons or any(isinstance(e, bool) or not isinstance(e, int | float)
                           or not math.isfinite(e) or e <= 0 for e in epsilons):
        raise AlgorithmError("epsilon: expected finite numbers > 0")
    if not algorithms or any(not isinstance(a, str) or not a for a in algorithms):
        raise AlgorithmError("algorithms: expected one or more algorithm names")
    for name, v in (("max_parents", max_parents), ("networks", networks),
                    ("workers", workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise AlgorithmError(f"{name}: expected an integer >= 1, got {v!r}")
    if shape is not None and shape not in SHAPES:
        raise AlgorithmError(f"shape: expected one of {', '.join(SHAPES)}, got {shape!r}")
    if isinstance(target_f1, bool) or not isinstance(target_f1, int | float) or not (
            0.0 < target_f1 <= 1.0):
        raise AlgorithmError(f"target_f1: expected a number in (0, 1], got {target_f1!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**40:
        raise AlgorithmError(f"seed: expected an integer in [0, 2^40), got {seed!r}")


def epsilon_for(target: float, grid: Sequence[tuple[float, float]]) -> float | None:
    """The smallest ``eps`` at which the F1 reaches ``target``: the first grid point
    that reaches it, interpolated in ``log eps`` from the point before; ``None`` if none
    does."""
    pts = sorted(grid)
    for i, (eps, f1) in enumerate(pts):
        if f1 >= target:
            if i == 0:
                return eps
            e0, f0 = pts[i - 1]
            if f1 <= f0:
                return eps
            w = (target - f0) / (f1 - f0)
            return float(math.exp(math.log(e0) + w * (math.log(eps) - math.log(e0))))
    return None


#: One simulated network's job: (cardinalities, rows, network seed, algorithms,
#: epsilons, max_parents, shape).
_Job = tuple[tuple[int, ...], int, int, tuple[str, ...], tuple[float, ...], int | None,
             str | None]
#: Its result: the draw's parameters, one (algorithm, eps, f1, precision, recall) per run
#: and the CPU seconds the job took.
_Out = tuple[dict[str, Any], list[tuple[str, float, float, float, float]], float]


def _simulate(job: _Job) -> _Out:
    """Draw one network of the prior, sample it, run every algorithm at every budget;
    also returns the CPU seconds this took (in the process that ran it)."""
    c0 = time.process_time()
    cards, rows, net_seed, algorithms, epsilons, max_parents, shape = job
    net, draw = prior_network(cards, net_seed, max_parents=max_parents, shape=shape)
    data = net.sample(rows, net_seed + 1)
    truth = net.true_cpdag()
    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    out: list[tuple[str, float, float, float, float]] = []
    for algo in algorithms:
        for eps in epsilons:
            # the pipeline's internal seam: one score cache for every run on this sample
            res = execute(DiscoverRequest.create(
                data, algorithm=algo, epsilon=eps, delta=DELTA, noise_seed=net_seed + 2,
                ledger=NO_LEDGER), scores=cache)
            s = skeleton_scores(res.cpdag, truth)
            out.append((algo, eps, s.f1, s.precision, s.recall))
    return asdict(draw), out, time.process_time() - c0


def _network_seed(seed: int, k: int) -> int:
    return (seed * 1_000_003 + k) * 16 + 1


def _fits(spent: float, running: int, done: Sequence[float], budget: float) -> bool:
    """Whether one more network fits the CPU budget: the CPU spent so far plus the mean
    cost of a finished network for each running one and the new one."""
    if not done:
        return False
    return spent + (running + 1) * statistics.fmean(done) <= budget


def _children_cpu() -> float | None:
    """CPU seconds used so far by this process's live child processes (the pool's
    workers, including the jobs they are running), from ``/proc``; ``None`` where that
    cannot be read."""
    try:
        tick = float(os.sysconf("SC_CLK_TCK"))
        total = 0.0
        for child in multiprocessing.active_children():
            with open(f"/proc/{child.pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        return total
    except (OSError, ValueError, IndexError):
        return None


def _run_jobs(jobs: Sequence[_Job], n_workers: int, floor: int,
              budget: float | None) -> list[_Out]:
    """Simulate ``jobs[0], jobs[1], ...`` in this order on ``n_workers`` processes. With a
    CPU ``budget`` (seconds), after the first ``floor`` networks a further one is started
    only while :func:`_fits` says so, where the CPU spent counts the finished networks
    and, with several processes, what the running ones have used so far (a costly draw
    still running is seen before it finishes); the result is always a prefix
    ``jobs[:K]`` (every started job finishes), so passing ``networks=K`` reproduces it
    exactly."""
    limit = len(jobs)
    results: dict[int, _Out] = {}
    done: list[float] = []
    spent = 0.0
    if n_workers == 1:
        for k, job in enumerate(jobs):
            if budget is not None and k >= floor and not _fits(spent, 0, done, budget):
                break
            results[k] = _simulate(job)
            spent += results[k][2]
            done.append(results[k][2])
        return [results[k] for k in range(len(results))]
    with ProcessPoolExecutor(max_workers=n_workers,
                             mp_context=multiprocessing.get_context("fork")) as pool:
        running: dict[Future[_Out], int] = {}
        k = 0
        while True:
            while k < limit and len(running) < n_workers and (
                    budget is None or k < floor
                    or _fits(spent, len(running), done, budget)):
                running[pool.submit(_simulate, jobs[k])] = k
                k += 1
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                out = fut.result()
                results[running.pop(fut)] = out
                done.append(out[2])
            spent = sum(done)
            live = _children_cpu() if budget is not None else None
            if live is not None:
                # the workers' whole CPU (finished jobs and the running ones' part so far)
                spent = max(spent, live)
            if budget is not None and k >= floor and not _fits(spent, len(running), done,
                                                               budget):
                limit = k  # start no more; the running ones finish
    return [results[j] for j in range(len(results))]


def band(f1s: NDArray[np.float64]) -> tuple[float, float]:
    """The predictive band of one more network's F1 from the simulated ones: their
    :data:`BAND` quantiles; from fewer than :data:`MIN_NETWORKS` networks (a time-limited
    advice) also at least the normal-theory prediction interval ``mean +- t s sqrt(1 +
    1/m)`` (``t`` the ``BAND[1]`` quantile of Student's t with ``m - 1`` degrees of
    freedom; the quantiles of a few draws are nearly their range, which holds the next
    draw with probability only ``(m - 1)/(m + 1)``), within [0, 1]."""
    lo, hi = (float(v) for v in np.quantile(f1s, BAND))
    m = int(f1s.shape[0])
    if 2 <= m < MIN_NETWORKS:
        half = float(student_t.ppf(BAND[1], m - 1)) * float(np.std(f1s, ddof=1)) * \
            math.sqrt(1.0 + 1.0 / m)
        mean = float(f1s.mean())
        lo, hi = max(0.0, min(lo, mean - half)), min(1.0, max(hi, mean + half))
    return lo, hi


def advise(cardinalities: Sequence[int], rows: int, *,
           epsilons: Sequence[float] = EPSILONS, algorithms: Sequence[str] = ALGORITHMS,
           max_parents: int | None = None, shape: str | None = None,
           networks: int | None = None, target_f1: float = 0.9, seed: int = 0,
           workers: int | None = None, seconds: float = SECONDS) -> Advice:
    """Simulate networks of the advisor's prior shaped like the schema and report the
    algorithms' predicted skeleton F1 with a band (module docstring). Public facts only.

    ``max_parents``/``shape``: what the user knows of the network (``None``: the prior's
    range); ``networks``: how many to simulate (``None``: :func:`default_networks`, cut
    to what ``seconds`` allows, at least :data:`FLOOR_NETWORKS`; the count used is
    :attr:`Advice.networks`); ``workers``: processes (``None``: up to 2, the machine's
    cores); ``seconds``: the time budget, wall seconds on :data:`REFERENCE_CORES` idle
    cores (a CPU budget of ``REFERENCE_CORES * seconds * BUDGET_USE``: public)."""
    cards = _cards(cardinalities)
    _check(cards, rows, epsilons, algorithms, max_parents, shape, networks, target_f1, seed,
           workers)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
            math.isfinite(seconds) and seconds > 0):
        raise AlgorithmError(f"seconds: expected a finite number > 0, got {seconds!r}")
    algos = tuple(dict.fromkeys(algorithms))
    eps_grid = tuple(sorted({float(e) for e in epsilons}))
    runs_per_network = len(algos) * len(eps_grid)
    m = networks if networks is not None else default_networks(cards, rows, runs_per_network)
    budget = None if networks is not None else REFERENCE_CORES * seconds * BUDGET_USE
    n_workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    n_workers = max(1, min(n_workers, m))
    jobs: list[_Job] = [(tuple(cards), rows, _network_seed(seed, k), algos, eps_grid,
                         max_parents, shape) for k in range(m)]
    t0, c0 = time.perf_counter(), time.process_time()
    ch0 = sum(os.times()[2:4])
    results = _run_jobs(jobs, n_workers, min(m, FLOOR_NETWORKS), budget)
    m = len(results)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0 + (sum(os.times()[2:4]) - ch0)
    runs: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
    for _draw, outs, _cpu in results:
        for algo, eps, f1, prec, rec in outs:
            runs.setdefault((algo, eps), []).append((f1, prec, rec))
    table: list[AdviceRow] = []
    for algo in algos:
        for eps in eps_grid:
            vals = runs[(algo, eps)]
            f1s = np.array([v[0] for v in vals])
            lo, hi = band(f1s)
            table.append(AdviceRow(algo, eps, float(np.median(f1s)), lo, hi,
                                   float(f1s.mean()),
                                   statistics.fmean(v[1] for v in vals),
                                   statistics.fmean(v[2] for v in vals), len(vals)))
    needed = {algo: epsilon_for(target_f1, [(r.epsilon, r.f1) for r in table
                                            if r.algorithm == algo])
              for algo in algos}
    lo_c, hi_c = cardinality_range(cards)
    family = (f"prior_network(schema cardinalities, max_parents="
              f"{'prior' if max_parents is None else max_parents}, shape="
              f"{'prior' if shape is None else shape}, seed=S)")
    return Advice(len(cards), rows, (lo_c, hi_c), max_parents, shape, m, float(target_f1),
                  BAND, tuple(table), needed, wall, family=family,
                  extra={"cpu_seconds": cpu, "workers": n_workers,
                         "seconds_budget": None if budget is None else float(seconds),
                         "network_cpu_seconds": [c for _, _, c in results],
                         "draws": [d for d, _, _ in results]})

"""The budget advisor (``dpcg advise``, issue 57): expected skeleton F1 of the private
algorithms from public facts alone, before any data is touched.

Input: the number of variables and their cardinalities (a schema), the number of rows
``n``, the budgets to consider and optionally the expected density (parents per node).
The advisor generates random Bayesian networks of that shape
(:mod:`dpcg.datasets.random_network`: ``nodes = p``, ``card`` the schema's range,
``max_parents`` the density), samples ``n`` synthetic rows from each, runs every
algorithm at every budget on them and reports, per algorithm and budget, the mean
skeleton F1, precision and recall with a band (the smallest and largest F1 over the
simulated networks), and the smallest budget of the grid whose mean F1 reaches a target
(interpolated in ``log eps`` between grid points).

It reads no data and charges nothing: every run is on synthetic data, in memory, with
no ledger (:attr:`Advice.note` says so). The prediction is only as good as the match
between the generated family and the real network (measured limit:
``docs/benchmarks/marginal-pc.md``, "Advisor").
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.metrics import skeleton_scores
from dpcg.private.run import discover_private

__all__ = ["ALGORITHMS", "EPSILONS", "Advice", "AdviceRow", "advise", "cardinality_range"]

#: Algorithms advised on by default (the per-test leaders and the shared-table one).
ALGORITHMS = ("laplace-pc", "priv-pc", "marginal-pc")
#: Budgets of the default grid.
EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: Delta of the simulated runs (the benchmarks' default).
DELTA = 1e-6
NOTE = ("advice from public facts only (schema, n, budgets, density): every run is on "
        "synthetic data from generated networks; no data was read and no budget was "
        "charged")


@dataclass(frozen=True)
class AdviceRow:
    """One algorithm at one budget over the simulated networks."""

    algorithm: str
    epsilon: float
    f1: float
    f1_low: float
    f1_high: float
    precision: float
    recall: float
    runs: int


@dataclass(frozen=True)
class Advice:
    """What :func:`advise` returns (``to_json`` for the CLI)."""

    nodes: int
    rows: int
    card: tuple[int, int]
    max_parents: int
    networks: int
    target_f1: float
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


def cardinality_range(cardinalities: Sequence[int]) -> tuple[int, int]:
    """The generated family's ``card=lo-hi`` from the schema's cardinalities (at least 2:
    a one-category column carries no dependence)."""
    cards = [int(c) for c in cardinalities]
    if not cards or any(isinstance(c, bool) or c < 1 for c in cards):
        raise AlgorithmError("cardinalities: expected positive integers")
    return max(2, min(cards)), max(2, max(cards))


def _check(nodes: int, rows: int, epsilons: Sequence[float], max_parents: int,
           networks: int, target_f1: float) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 2:
        raise AlgorithmError("cardinalities: need at least 2 variables")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 2:
        raise AlgorithmError(f"rows: expected an integer >= 2, got {rows!r}")
    if not epsilons or any(isinstance(e, bool) or not isinstance(e, int | float)
                           or not math.isfinite(e) or e <= 0 for e in epsilons):
        raise AlgorithmError("epsilon: expected finite numbers > 0")
    if isinstance(max_parents, bool) or not isinstance(max_parents, int) or max_parents < 1:
        raise AlgorithmError(f"max_parents: expected an integer >= 1, got {max_parents!r}")
    if isinstance(networks, bool) or not isinstance(networks, int) or networks < 1:
        raise AlgorithmError(f"networks: expected an integer >= 1, got {networks!r}")
    if not (isinstance(target_f1, int | float) and 0.0 < target_f1 <= 1.0):
        raise AlgorithmError(f"target_f1: expected a number in (0, 1], got {target_f1!r}")


def epsilon_for(target: float, grid: Sequence[tuple[float, float]]) -> float | None:
    """The smallest ``eps`` at which the mean F1 reaches ``target``: the first grid point
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


def advise(cardinalities: Sequence[int], rows: int, *,
           epsilons: Sequence[float] = EPSILONS, algorithms: Sequence[str] = ALGORITHMS,
           max_parents: int = 3, networks: int = 3, target_f1: float = 0.9,
           seed: int = 0, concentration: float = 1.0) -> Advice:
    """Simulate ``networks`` generated networks shaped like the schema and report the
    algorithms' expected skeleton F1 (module docstring). Public facts only.
    ``concentration``: the Dirichlet concentration of the generated conditional
    probability tables (smaller: more nearly deterministic tables)."""
    nodes = len(cardinalities)
    _check(nodes, rows, epsilons, max_parents, networks, target_f1)
    if isinstance(concentration, bool) or not isinstance(concentration, int | float) or not (
            math.isfinite(concentration) and concentration > 0):
        raise AlgorithmError(f"concentration: expected a number > 0, got {concentration!r}")
    lo, hi = cardinality_range(cardinalities)
    card = f"{lo}-{hi}" if hi > lo else f"{lo}"
    family = (f"random:nodes={nodes},max_parents={max_parents},card={card},seed={{s}},"
              f"conc={concentration:g}")
    t0, c0 = time.perf_counter(), time.process_time()
    runs: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
    for k in range(networks):
        net = load_network(family.format(s=seed * 1000 + k + 1))
        data = net.sample(rows, seed * 1000 + k + 1)
        truth = net.true_cpdag()
        for algo in algorithms:
            for eps in epsilons:
                res = discover_private(data, algo, epsilon=float(eps), delta=DELTA,
                                       noise_seed=seed * 1000 + k + 1)
                s = skeleton_scores(res.cpdag, truth)
                runs.setdefault((algo, float(eps)), []).append((s.f1, s.precision, s.recall))
    table: list[AdviceRow] = []
    for (algo, eps), vals in runs.items():
        f1s = [v[0] for v in vals]
        table.append(AdviceRow(algo, eps, statistics.fmean(f1s), min(f1s), max(f1s),
                               statistics.fmean(v[1] for v in vals),
                               statistics.fmean(v[2] for v in vals), len(vals)))
    needed = {algo: epsilon_for(target_f1, [(r.epsilon, r.f1) for r in table
                                            if r.algorithm == algo])
              for algo in algorithms}
    return Advice(nodes, rows, (lo, hi), max_parents, networks, float(target_f1),
                  tuple(table), needed, time.perf_counter() - t0,
                  family=family.replace("{s}", "S"),
                  extra={"cpu_seconds": time.process_time() - c0})

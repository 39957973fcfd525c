"""``dpcg bench pc``: non-private PC-stable with G^2 against causal-learn, side by side.

For each network (default sachs, child, alarm) one sample of ``--rows`` rows is drawn
and both implementations run on the same data in the same process:

* dpcg: :func:`dpcg.pc.pc_stable` with ``--test g2``, i.e.
  :class:`dpcg.citests.nonprivate.FastG2Test` (bitset tables; the statistic of
  :class:`dpcg.citests.nonprivate.G2Test`, bit for bit);
* causal-learn (the reference, an optional test-only dependency imported lazily):
  ``pc(data, alpha, "gsq", stable=True)``.

Reported: CPU seconds of the process (and wall-clock seconds), number of (unique) CI
tests, skeleton F1 and CPDAG SHD against the true CPDAG for both, whether the skeletons
agree, the engine's own overhead (time outside the CI tests), and the per-test cost at
``|S| = 0..3`` on one network. The section is written to ``docs/benchmarks/pc.md`` and
``docs/benchmarks.md`` is regenerated.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from dpcg.citests.nonprivate import FastG2Test, G2Test
from dpcg.data.dataset import Dataset
from dpcg.errors import DpcgError
from dpcg.graph import CPDAG
from dpcg.metrics import shd, skeleton_scores
from dpcg.pc import pc_stable
from dpcg.pc.engine import PCResult

DEFAULT_NETWORKS = ("sachs", "child", "alarm")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "pc",
        help="PC-stable + G^2 vs causal-learn (speed, tests, accuracy)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--networks", default=",".join(DEFAULT_NETWORKS),
                   help="comma-separated bundled networks (default sachs,child,alarm)")
    p.add_argument("--rows", type=int, default=100_000, help="rows per sample (default 1e5)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="CI test level (default 0.05)")
    p.add_argument("--repeats", type=int, default=3,
                   help="runs per implementation and network; the fastest counts (default 3)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip causal-learn (dpcg only)")
    p.add_argument("--cost-network", default="alarm",
                   help="network for the per-test cost table (default alarm; 'none' skips)")
    p.add_argument("--cost-queries", type=int, default=60,
                   help="CI tests timed per conditioning-set size (default 60)")
    p.add_argument("--no-write", action="store_true",
                   help="print the section instead of writing docs/benchmarks")
    p.add_argument("--docs-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- runs
@dataclass
class Side:
    """One implementation's run on one network."""

    seconds: float  # CPU seconds of the process (robust to other load on the machine)
    wall: float  # wall-clock seconds
    tests: int
    cpdag: CPDAG
    f1: float
    shd: int
    extra: dict[str, float]


def _g2(dataset: Dataset, alpha: float, bitsets: bool = True) -> Any:
    """The ``--test g2`` tester (bitset tables) or the plain bincount ``G2Test``."""
    if bitsets:
        return FastG2Test(dataset, alpha=alpha)
    return G2Test(dataset, alpha=alpha)


def run_dpcg(dataset: Dataset, alpha: float, truth: CPDAG) -> tuple[Side, PCResult]:
    c0, t0 = time.process_time(), time.perf_counter()
    tester = _g2(dataset, alpha)
    res = pc_stable(tester, dataset.names)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    sk = skeleton_scores(res.cpdag, truth)
    overhead = max(res.seconds - res.test_seconds, 0.0)
    side = Side(cpu, wall, res.n_tests, res.cpdag, sk.f1, shd(res.cpdag, truth),
                {"overhead_seconds": overhead,
                 "orient_and_engine_share": overhead / max(res.seconds, 1e-12)})
    return side, res


def _causallearn() -> Any:
    try:
        from causallearn.search.ConstraintBased.PC import pc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DpcgError(
            "causal-learn is not installed (pip install 'dpcg[oracle]'); "
            "or run with --no-reference"
        ) from exc
    return pc


def causallearn_cpdag(graph: np.ndarray[Any, Any], names: Sequence[str]) -> CPDAG:
    """Convert causal-learn's endpoint matrix to a :class:`CPDAG`.

    ``G[j, i] = 1, G[i, j] = -1`` is ``i -> j``; ``-1/-1`` is undirected; a ``1/1``
    (bi-directed, from conflicting colliders) is shown as undirected.
    """
    p = len(names)
    directed, undirected = [], []
    for i in range(p):
        for j in range(i + 1, p):
            a, b = int(graph[i, j]), int(graph[j, i])
            if a == 0 and b == 0:
                continue
            if a == -1 and b == 1:
                directed.append((names[i], names[j]))
            elif a == 1 and b == -1:
                directed.append((names[j], names[i]))
            else:
                undirected.append((names[i], names[j]))
    return CPDAG(names, directed, undirected)


def run_causallearn(dataset: Dataset, alpha: float, truth: CPDAG) -> Side:
    pc = _causallearn()
    data = np.ascontiguousarray(np.asarray(dataset.codes).T.astype(np.int64))
    c0, t0 = time.process_time(), time.perf_counter()
    cg = pc(data, alpha, "gsq", stable=True, show_progress=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    cache = getattr(cg.test, "pvalue_cache", {})
    tests = sum(1 for k in cache if k not in ("data_hash", "method_name", "parameters_hash"))
    cpdag = causallearn_cpdag(cg.G.graph, tuple(dataset.names))
    sk = skeleton_scores(cpdag, truth)
    return Side(cpu, wall, tests, cpdag, sk.f1, shd(cpdag, truth), {})


def cost_queries(res: PCResult, p: int, size: int, count: int) -> list[tuple[int, int, Sepset]]:
    """``count`` queries with ``|S| = size``: the PC run's own tests at that level first,
    then (if too few) a fixed stride through all ``(x, y, S)`` combinations."""
    out = [(r.x, r.y, r.S) for r in res.tests if len(r.S) == size][:count]
    seen = set(out)
    stride = 97
    for i, combo in enumerate(combinations(range(p), size + 2)):
        if len(out) >= count:
            break
        if i % stride:
            continue
        q = (combo[0], combo[1], tuple(combo[2:]))
        if q not in seen:
            out.append(q)
            seen.add(q)
    return out


Sepset = tuple[int, ...]


def _time_each(fn: Callable[[int, int, Sepset], object],
               queries: Sequence[tuple[int, int, Sepset]]) -> list[float]:
    times = []
    for x, y, S in queries:
        t0 = time.process_time()
        fn(x, y, S)
        times.append(time.process_time() - t0)
    return times


def per_test_cost(dataset: Dataset, res: PCResult, alpha: float, count: int, reference: bool
                  ) -> list[dict[str, float]]:
    rows = []
    data = np.ascontiguousarray(np.asarray(dataset.codes).T.astype(np.int64))
    for size in range(4):
        queries = cost_queries(res, len(dataset.names), size, count)
        ours = _g2(dataset, alpha)  # fresh objects: no cached answers
        t_ours = _time_each(ours.test, queries)
        plain = _g2(dataset, alpha, bitsets=False)
        t_plain = _time_each(plain.test, queries)
        row = {"size": size, "queries": len(queries),
               "dpcg_ms": 1e3 * statistics.median(t_ours),
               "dpcg_mean_ms": 1e3 * statistics.fmean(t_ours),
               "bincount_ms": 1e3 * statistics.median(t_plain)}
        if reference:
            from causallearn.utils.cit import CIT

            cit = CIT(data, "gsq")  # fresh cache

            def ref_test(x: int, y: int, S: Sepset, cit: Any = cit) -> object:
                return cit(x, y, list(S))

            t_ref = _time_each(ref_test, queries)
            row["ref_ms"] = 1e3 * statistics.median(t_ref)
            row["ref_mean_ms"] = 1e3 * statistics.fmean(t_ref)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------ report
def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def render(results: list[dict[str, Any]], cost: list[dict[str, float]] | None,
           cost_network: str, args: argparse.Namespace, machine: str,
           load: tuple[float, float] | None) -> str:
    nets = ",".join(r["network"] for r in results)
    cmd = (f"dpcg bench pc --networks {nets} --rows {args.rows} --seed {args.seed} "
           f"--alpha {args.alpha} --repeats {args.repeats}")
    if args.no_reference:
        cmd += " --no-reference"
    lines = [
        "## PC-stable with G² (non-private) vs causal-learn",
        "",
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on {machine}.",
    ]
    if load is not None:
        lines.append(
            f"Load average (1 min) at start / end of the run: {load[0]:.1f} / {load[1]:.1f} "
            "(a shared machine inflates every time; both implementations run in the same "
            "process, one after the other, on the same data, so the ratios are the fair part)."
        )
    lines += [
        "",
        "Reproduce:",
        "",
        "```",
        cmd,
        "```",
        "",
        "dpcg: `pc_stable` (textbook PC-stable: adjacency frozen per level, each unordered pair",
        "tested once per conditioning set, stop at the first separating set) with `--test g2`.",
        "causal-learn 0.1.4.8: `pc(data, alpha, \"gsq\", stable=True)`; its test count is the",
        "number of distinct (x, y, S) in its p-value cache. F1 is skeleton F1 and SHD is CPDAG",
        "SHD, both against the true CPDAG of the network (`dpcg.metrics`).",
        "",
        "Times are CPU seconds of the process (`time.process_time`), which time-sharing with",
        "other jobs does not inflate much, of the fastest of `--repeats` runs of each",
        "implementation (same data every time); wall-clock seconds of that run are in",
        "parentheses.",
        "",
        "| network | nodes | edges | rows | dpcg s | causal-learn s | speed-up | dpcg tests "
        "| causal-learn tests | dpcg F1 / SHD | causal-learn F1 / SHD | same skeleton | "
        "engine overhead |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ours: Side = r["dpcg"]
        ref: Side | None = r.get("reference")
        if ref is not None:
            ref_cols = (f"{_fmt(ref.seconds)} ({_fmt(ref.wall, 1)}) | "
                        f"{ref.seconds / ours.seconds:.1f}x | "
                        f"{ours.tests} | {ref.tests} | {ours.f1:.3f} / {ours.shd} | "
                        f"{ref.f1:.3f} / {ref.shd} | "
                        f"{'yes' if ref.cpdag.skeleton() == ours.cpdag.skeleton() else 'NO'}")
        else:
            ref_cols = (f"- | - | {ours.tests} | - | {ours.f1:.3f} / {ours.shd} | - | -")
        lines.append(
            f"| {r['network']} | {r['nodes']} | {r['edges']} | {r['rows']} | "
            f"{_fmt(ours.seconds)} ({_fmt(ours.wall, 1)}) | {ref_cols} | "
            f"{100 * ours.extra['orient_and_engine_share']:.1f} % |"
        )
    lines += [
        "",
        "*Engine overhead* is the share of dpcg's time spent outside the CI tests (candidate",
        "enumeration, bookkeeping, orientation).",
    ]
    if cost:
        has_ref = "ref_ms" in cost[0]
        lines += [
            "",
            f"### Cost of one G² test on {cost_network} ({args.rows} rows)",
            "",
            "Median CPU milliseconds per test over the listed number of (x, y, S)",
            "queries per conditioning-set size (the PC run's own tests at that size, topped up",
            "by a fixed stride through all combinations); each implementation starts with an",
            "empty cache.",
            "",
            "`dpcg` is `--test g2` (bitset tables, `dpcg.stats.bitset`); `bincount` is the",
            "same G² test with the one-`np.bincount` tables of `dpcg.stats.contingency`",
            "(identical results).",
            "",
            "| \\|S\\| | queries | dpcg ms | bincount ms | "
            + ("causal-learn ms | causal-learn / dpcg |" if has_ref else ""),
            "|---|---|---|---|" + ("---|---|" if has_ref else ""),
        ]
        for c in cost:
            row = (f"| {int(c['size'])} | {int(c['queries'])} | {c['dpcg_ms']:.3f} | "
                   f"{c['bincount_ms']:.3f} |")
            if has_ref:
                row += f" {c['ref_ms']:.3f} | {c['ref_ms'] / c['dpcg_ms']:.1f}x |"
            lines.append(row)
    return "\n".join(lines) + "\n"


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - platform dependent
        return None


def run(args: argparse.Namespace) -> int:
    from benchmarks.report import machine_description, write_section
    from dpcg.datasets import load_network

    networks = [n.strip() for n in args.networks.split(",") if n.strip()]
    if not networks:
        raise DpcgError("--networks: give at least one network name")
    if args.rows <= 0:
        raise DpcgError(f"--rows must be positive, got {args.rows}")
    if args.repeats <= 0:
        raise DpcgError(f"--repeats must be positive, got {args.repeats}")
    if not 0 < args.alpha < 1:
        raise DpcgError(f"--alpha must be in (0, 1), got {args.alpha}")
    reference = not args.no_reference
    if reference:
        _causallearn()
    load_start = _load()
    results: list[dict[str, Any]] = []
    cost: list[dict[str, float]] | None = None
    for name in networks:
        net = load_network(name)
        truth = CPDAG.from_dag(net.nodes, net.dag_edges)
        dataset = net.sample(args.rows, args.seed)
        ours, res = min((run_dpcg(dataset, args.alpha, truth) for _ in range(args.repeats)),
                        key=lambda run: run[0].seconds)
        entry: dict[str, Any] = {"network": name, "nodes": net.n_nodes, "edges": net.n_edges,
                                 "rows": args.rows, "dpcg": ours}
        msg = (f"{name}: dpcg {ours.seconds:.2f} CPU s ({ours.wall:.1f} wall), {ours.tests} "
               f"tests, F1 {ours.f1:.3f}")
        if reference:
            ref = min((run_causallearn(dataset, args.alpha, truth)
                       for _ in range(args.repeats)), key=lambda side: side.seconds)
            entry["reference"] = ref
            same = ref.cpdag.skeleton() == ours.cpdag.skeleton()
            msg += (f"; causal-learn {ref.seconds:.2f} CPU s ({ref.wall:.1f} wall), "
                    f"{ref.tests} tests, F1 {ref.f1:.3f}; "
                    f"speed-up {ref.seconds / ours.seconds:.1f}x; same skeleton: {same}")
        print(msg, file=sys.stderr, flush=True)
        results.append(entry)
        if name == args.cost_network:
            cost = per_test_cost(dataset, res, args.alpha, args.cost_queries, reference)
    if cost is None and args.cost_network not in ("none", ""):
        net = load_network(args.cost_network)
        dataset = net.sample(args.rows, args.seed)
        _, res = run_dpcg(dataset, args.alpha, CPDAG.from_dag(net.nodes, net.dag_edges))
        cost = per_test_cost(dataset, res, args.alpha, args.cost_queries, reference)
    load_end = _load()
    load = None if load_start is None or load_end is None else (load_start, load_end)
    text = render(results, cost, args.cost_network, args, machine_description(), load)
    if args.no_write:
        print(text)
    else:
        out = write_section("pc", text, docs_dir=args.docs_dir)
        print(f"wrote {out}", file=sys.stderr)
    return 0

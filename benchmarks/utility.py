"""``dpcg bench utility`` (issue 20): the G^2 decision-distance statistic against G^2,
kendall-split and cmi, on the bundled networks and on generated families.

Three sections, written to ``docs/benchmarks/utility.md`` (``--no-write`` prints it):

* **SNR**: for every test that non-private G^2 PC-stable runs on a network (``--rows``
  rows), each statistic's margin above its decision threshold in units of its
  sensitivity (``(score - T) / Delta``: "rows" for the distance, whose ``Delta`` is 1),
  divided by the per-test noise standard deviation at total ``eps`` (default 1,
  ``delta`` 1e-6) spread over the default plan of ``K`` tests (``16 x pairs``, ``4 x``
  below 10 variables; Gaussian noise under zCDP, the rule Laplace-PC picks above ~30
  tests). Reported per true edge at its weakest test (the one most likely to remove it)
  and per non-edge at the test that separated it in G^2 PC (the one that must come out
  independent).
* **Ceiling**: skeleton F1 of PC-stable with the noise off: G^2, the distance's own
  decision rule (``s > 1/2``), kendall-split (score ``<= z_{1-alpha/2}`` is independent).
* **Speed**: per-test time (table + statistic, and statistic alone) of G^2 and of the
  distance by cardinality ``cx = cy = c``.

The private algorithms are not run here (the score is wired into them after the
StatisticSource redesign). Run: ``python -m benchmarks.utility [--networks ...]``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import utility_f1
from dpcg.citests.base import CIResult, validate_query
from dpcg.datasets import list_networks, load_network
from dpcg.errors import MissingDependencyError
from dpcg.metrics import skeleton_scores
from dpcg.pc import pc_stable
from dpcg.stats.contingency import StrataTable, contingency_table, table_from_codes
from dpcg.stats.discrete import g2_test, n_cmi
from dpcg.stats.g2_distance import g2_distance, g2_distance_details
from dpcg.stats.kendall import split_kendall_z
from dpcg.stats.registry import g_increment

Z_975 = 1.959963984540054
DEFAULT_FAMILIES = (
    "random:nodes=20,max_parents=2,card=2-4,seed={s},conc=1",
    "random:nodes=50,max_parents=3,card=2-5,seed={s},conc=1",
    "random:nodes=50,max_parents=2,card=2-6,seed={s},conc=0.5",
    "random:nodes=100,max_parents=2,card=2-4,seed={s},conc=1",
)


def plan_size(p: int) -> int:
    """The project's default plan ``K`` (``dpcg.private.planning.default_plan_size``)."""
    return (4 if p < 10 else 16) * (p * (p - 1) // 2)


def gaussian_sd_units(eps: float, delta: float, k: int) -> float:
    """Per-test Gaussian noise sd in sensitivity units when total ``(eps, delta)`` is
    converted to zCDP (``eps = rho + 2 sqrt(rho ln 1/delta)``) and split over ``k``."""
    ld = math.log(1.0 / delta)
    rho = (math.sqrt(ld + eps) - math.sqrt(ld)) ** 2
    return 1.0 / math.sqrt(2.0 * rho / k)


class _Tester:
    """``test(x, y, S)`` from a decision function on the stratified table."""

    def __init__(self, data: Any, decide: Callable[[StrataTable], tuple[bool, float]]) -> None:
        self.codes = data.codes
        self.cards = tuple(int(c) for c in data.cardinalities if c is not None)
        self.p = len(self.cards)
        self.decide = decide

    def test(self, x: int, y: int, S: tuple[int, ...] = ()) -> CIResult:
        x, y, S = validate_query(x, y, S, self.p)
        t = contingency_table(self.codes, self.cards, x, y, S, check=False)
        independent, stat = self.decide(t)
        return CIResult(independent, stat, None)


def _g2_rule(alpha: float) -> Callable[[StrataTable], tuple[bool, float]]:
    def f(t: StrataTable) -> tuple[bool, float]:
        r = g2_test(t)
        return r.pvalue > alpha, r.statistic
    return f


def _distance_rule(alpha: float) -> Callable[[StrataTable], tuple[bool, float]]:
    def f(t: StrataTable) -> tuple[bool, float]:
        s = g2_distance(t, alpha)
        return s <= 0.5, float(s)
    return f


def _checked_g2_rule(alpha: float, counts: dict[str, int]
                     ) -> Callable[[StrataTable], tuple[bool, float]]:
    """The G-test's decision, with the distance computed on the same table: counts the
    tests (``counts["tests"]``) and those where the distance's sign is not the G-test's
    decision (``counts["differ"]``)."""
    g2, distance = _g2_rule(alpha), _distance_rule(alpha)

    def f(t: StrataTable) -> tuple[bool, float]:
        independent, statistic = g2(t)
        counts["tests"] += 1
        if independent != distance(t)[0]:
            counts["differ"] += 1
        return independent, statistic
    return f


def _split_rule(alpha: float) -> Callable[[StrataTable], tuple[bool, float]]:
    from scipy.stats import norm

    thr = float(norm.isf(alpha / 2.0))

    def f(t: StrataTable) -> tuple[bool, float]:
        z = split_kendall_z(t)
        return z <= thr, z
    return f


def _f1(net: Any, data: Any, rule: Callable[[StrataTable], tuple[bool, float]]) -> float:
    res = pc_stable(_Tester(data, rule), data.names)
    return skeleton_scores(res.cpdag, net.true_cpdag()).f1


# ------------------------------------------------------------------------------- SNR
@dataclass
class SnrRow:
    network: str
    nodes: int
    plan: int
    sd: float                       # noise sd in sensitivity units
    edges: int
    nonedges: int
    edge_median: dict[str, float]   # statistic -> median SNR of edges' weakest test
    edge_above: dict[str, float]    # fraction of edges with SNR > 1
    sep_median: dict[str, float]    # median SNR of non-edges' separating test
    sep_below: dict[str, float]     # fraction of separated non-edges with SNR < -1


STATS = ("g2-distance", "kendall-split", "cmi")


def snr(name: str, rows: int, seed: int, alpha: float, eps: float, delta: float) -> SnrRow:
    from scipy.stats import chi2

    net = load_network(name)
    data = net.sample(rows, seed)
    cards = tuple(int(c) for c in data.cardinalities if c is not None)
    res = pc_stable(_Tester(data, _g2_rule(alpha)), data.names)
    truth = {frozenset((net.index(a), net.index(b))) for a, b in net.dag_edges}
    n = data.n
    sens = {"g2-distance": 1.0, "kendall-split": 6.0 / math.sqrt(n),
            "cmi": 2.0 * g_increment(n - 1)}
    margins: dict[frozenset[int], list[dict[str, float]]] = {}
    last: dict[frozenset[int], dict[str, float]] = {}
    for rec in res.tests:
        S = tuple(rec.S)
        t = contingency_table(data.codes, cards, rec.x, rec.y, S, check=False)
        df_decl = (cards[rec.x] - 1) * (cards[rec.y] - 1) * math.prod(cards[s] for s in S)
        m = {
            "g2-distance": (g2_distance(t, alpha) - 0.5) / sens["g2-distance"],
            "kendall-split": (split_kendall_z(t) - Z_975) / sens["kendall-split"],
            "cmi": (n_cmi(t) - float(chi2.isf(alpha, df_decl)) / 2.0) / sens["cmi"],
        }
        key = frozenset((rec.x, rec.y))
        margins.setdefault(key, []).append(m)
        last[key] = m
    k = plan_size(net.n_nodes)
    sd = gaussian_sd_units(eps, delta, k)
    sep_keys = [kk for kk in res.sepsets if frozenset(kk) not in truth]
    edge_keys = [kk for kk in truth if kk in margins]
    out = SnrRow(name, net.n_nodes, k, sd, len(edge_keys), len(sep_keys), {}, {}, {}, {})
    for st in STATS:
        ew = [min(m[st] for m in margins[kk]) / sd for kk in edge_keys]
        sw = [last[frozenset(kk)][st] / sd for kk in sep_keys if frozenset(kk) in last]
        out.edge_median[st] = statistics.median(ew) if ew else math.nan
        out.edge_above[st] = float(np.mean(np.array(ew) > 1.0)) if ew else math.nan
        out.sep_median[st] = statistics.median(sw) if sw else math.nan
        out.sep_below[st] = float(np.mean(np.array(sw) < -1.0)) if sw else math.nan
    return out


# --------------------------------------------------------------------------- ceiling
@dataclass
class CeilingRow:
    network: str
    nodes: int
    g2: float
    distance: float
    split: float
    seconds: float
    tests: int = 0      # tests of G^2 PC
    differ: int = 0     # of them, those where the distance's sign is not G^2's decision


def ceiling(name: str, rows: int, seed: int, alpha: float) -> CeilingRow:
    """Skeleton F1 of PC-stable with G^2, the distance and kendall-split. G^2 PC runs
    once with the distance computed on every table it tests; when the distance's sign
    agrees with the G-test on every one of them, PC-stable with the distance makes the
    same decisions in the same order, hence the same graph, and is not run again (on
    deep networks such as hepar2 a PC run is hundreds of thousands of tests)."""
    net = load_network(name)
    data = net.sample(rows, seed)
    t0 = time.perf_counter()
    counts = {"tests": 0, "differ": 0}
    g2 = _f1(net, data, _checked_g2_rule(alpha, counts))
    dist = g2 if counts["differ"] == 0 else _f1(net, data, _distance_rule(alpha))
    split = _f1(net, data, _split_rule(alpha))
    return CeilingRow(name, net.n_nodes, g2, dist, split, time.perf_counter() - t0,
                      counts["tests"], counts["differ"])


# ----------------------------------------------------------------------------- speed
@dataclass
class SpeedRow:
    card: int
    strata: int
    g2_table_ms: float
    dist_table_ms: float
    g2_stat_us: float
    dist_stat_us: float
    dist_evals: float
    split_table_ms: float
    split_stat_us: float
    dist_ratio: float
    split_ratio: float


def _paired(fs: dict[str, Callable[[], object]], repeats: int, base: str
            ) -> tuple[dict[str, float], dict[str, float]]:
    """Best time of each function, and the median over ``repeats`` rounds of each one's
    time over ``base``'s in the same round. The functions run one after the other in
    every round, round ``r`` in the ``r``-th of their orders (cycling through all of
    them), so a slow spell of a shared machine affects both sides of a ratio and no
    function always runs after the same one (whatever ran before a call decides what is
    still in the caches)."""
    best = {k: math.inf for k in fs}
    ratios: dict[str, list[float]] = {k: [] for k in fs}
    for f in fs.values():
        f()  # warm caches (tabulated g, quantiles)
    orders = list(itertools.permutations(fs))
    for r in range(repeats):
        took = {}
        for k in orders[r % len(orders)]:
            t0 = time.perf_counter()
            fs[k]()
            took[k] = time.perf_counter() - t0
            best[k] = min(best[k], took[k])
        for k in fs:
            ratios[k].append(took[k] / took[base])
    return best, {k: statistics.median(v) for k, v in ratios.items()}


def speed(card: int, strata: int, rows: int, seed: int, repeats: int) -> SpeedRow:
    from dpcg.datasets.random_network import random_pair_codes

    x, y, s = random_pair_codes(rows, card, strata, seed, dependence=0.05)
    t = table_from_codes(x, y, s, card, card, strata)

    def table() -> StrataTable:
        return table_from_codes(x, y, s, card, card, strata)
    stat, _ = _paired({"g2": lambda: g2_test(t), "dist": lambda: g2_distance(t, 0.05),
                       "split": lambda: split_kendall_z(t)}, repeats, "g2")
    full, ratio = _paired({"g2": lambda: g2_test(table()),
                           "dist": lambda: g2_distance(table(), 0.05),
                           "split": lambda: split_kendall_z(table())}, repeats, "g2")
    evals = g2_distance_details(t, 0.05).evaluations
    return SpeedRow(card, strata, 1e3 * full["g2"], 1e3 * full["dist"], 1e6 * stat["g2"],
                    1e6 * stat["dist"], float(evals), 1e3 * full["split"], 1e6 * stat["split"],
                    ratio["dist"], ratio["split"])


@dataclass
class InstructionRow:
    """Instructions per test (callgrind), ``table+`` as in :class:`SpeedRow`."""

    card: int
    strata: int
    table: float
    g2_table: float
    dist_table: float
    split_table: float


#: The C functions of the standard library inside which the probe runs each batch
#: (``benchmarks._callgrind_probe``), in the order of :class:`InstructionRow`'s fields.
_MARKERS = ("starmap_next", "filterfalse_next", "functools_reduce", "dropwhile_next")


def parse_inclusive(annotated: str, names: Sequence[str]) -> dict[str, int]:
    """The largest inclusive instruction count of each function in ``names`` in the output
    of ``callgrind_annotate --inclusive=yes`` (lines ``COUNT (PCT%)  FILE:FUNCTION ...``)."""
    out: dict[str, int] = {}
    for line in annotated.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*?:(\w+)(?:\s|$)", line)
        if m and m.group(2) in names:
            count = int(m.group(1).replace(",", ""))
            out[m.group(2)] = max(out.get(m.group(2), 0), count)
    missing = [n for n in names if n not in out]
    if missing:
        raise ValueError(f"callgrind output has no line for {missing}")
    return out


def instructions(card: int, strata: int, rows: int, seed: int, repeats: int
                 ) -> InstructionRow:
    """Instructions per test, counted by callgrind (valgrind) in a child process: the
    same tables as :func:`speed`, ``repeats`` runs of each (deterministic for a given
    interpreter and NumPy build, unlike wall time on a shared machine)."""
    valgrind, annotate = shutil.which("valgrind"), shutil.which("callgrind_annotate")
    if valgrind is None or annotate is None:
        raise MissingDependencyError("--instructions needs valgrind (callgrind and "
                                     "callgrind_annotate) on the PATH")
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-m", "benchmarks._callgrind_probe", str(card),
                        str(strata), str(rows), str(seed), str(repeats)],
                       check=True, capture_output=True, env=env)
        text = subprocess.run([annotate, "--inclusive=yes", "--threshold=100", str(out)],
                              check=True, capture_output=True, text=True).stdout
    counts = parse_inclusive(text, _MARKERS)
    t, g, d, k = (counts[m] / repeats for m in _MARKERS)
    return InstructionRow(card, strata, t, g, d, k)


# ---------------------------------------------------------------------------- report
def _fmt(v: float, nd: int = 2) -> str:
    return "n/a" if not math.isfinite(v) else f"{v:.{nd}f}"


def render(snr_rows: Sequence[SnrRow], ceil_rows: Sequence[CeilingRow],
           speed_rows: Sequence[SpeedRow], args: argparse.Namespace,
           instr_rows: Sequence[InstructionRow] = ()) -> str:
    lines = [f"<!-- generated by python -m benchmarks.utility (rows {args.rows}, seed "
             f"{args.seed}, alpha {args.alpha}, eps {args.eps}, delta {args.delta}) -->", ""]
    if snr_rows:
        lines += [
            "### Signal-to-noise per test (non-private G^2 PC's tests)", "",
            f"SNR = (score - T) / Delta / sd, sd = per-test Gaussian sd (zCDP) at eps "
            f"{args.eps}, delta {args.delta}, plan K = 16 x pairs. Edges: weakest test; "
            "non-edges: separating test.", "",
            "| network | K | sd (x Delta) | edges: median SNR dist / split / cmi "
            "| edges SNR > 1: dist / split / cmi | non-edges: median SNR dist / split / cmi "
            "| non-edges SNR < -1: dist / split / cmi |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in snr_rows:
            def trio(d: dict[str, float], nd: int = 2) -> str:
                return " / ".join(_fmt(d[s], nd) for s in STATS)
            lines.append(f"| {r.network} ({r.nodes}) | {r.plan} | {r.sd:.0f} | "
                         f"{trio(r.edge_median)} | {trio(r.edge_above)} | "
                         f"{trio(r.sep_median)} | {trio(r.sep_below)} |")
        lines.append("")
    if ceil_rows:
        lines += ["### No-noise ceiling (skeleton F1, PC-stable)", "",
                  "| network | nodes | G^2 | g2-distance (s > 1/2) | kendall-split | "
                  "dist - G^2 |", "|---|---|---|---|---|---|"]
        for c in ceil_rows:
            lines.append(f"| {c.network} | {c.nodes} | {c.g2:.3f} | {c.distance:.3f} | "
                         f"{c.split:.3f} | {c.distance - c.g2:+.3f} |")
        lines += ["", "Tests of G^2 PC where the distance's sign was not the G-test's "
                  "decision (the distance was computed on every table G^2 PC tested; "
                  "where none differ, PC with the distance is the same run): " + ", ".join(
                      f"{c.network} {c.differ} of {c.tests:,}" for c in ceil_rows) + "."]
        lines.append("")
    if speed_rows:
        lines += ["### Per-test time by cardinality (cx = cy = c, weak dependence)", "",
                  f"{args.rows} rows; times are the best of {args.repeats} rounds; a ratio "
                  "is the median over the rounds of the two tests' times in the same round "
                  "(the three tests one after the other, cycling through their orders). "
                  "'table+' = building the stratified table from the codes and the "
                  "statistic.", "",
                  "| c | strata | G^2 table+ (ms) | distance table+ (ms) | ratio | "
                  "G^2 stat (us) | distance stat (us) | rate evaluations | "
                  "kendall-split table+ (ms) | ratio | kendall-split stat (us) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in speed_rows:
            lines.append(f"| {s.card} | {s.strata} | {s.g2_table_ms:.2f} | "
                         f"{s.dist_table_ms:.2f} | {s.dist_ratio:.2f} | "
                         f"{s.g2_stat_us:.0f} | {s.dist_stat_us:.0f} | {s.dist_evals:.0f} | "
                         f"{s.split_table_ms:.2f} | {s.split_ratio:.2f} | "
                         f"{s.split_stat_us:.0f} |")
        lines.append("")
    if instr_rows:
        lines += ["### Instructions per test by cardinality (callgrind)", "",
                  f"{args.rows} rows; instructions per call counted by callgrind over "
                  f"{args.repeats} calls of each (`--instructions`): deterministic for a "
                  "given interpreter and NumPy build. 'table+' = building the stratified "
                  "table and the statistic; a ratio is over G^2 table+.", "",
                  "| c | strata | table (M) | G^2 table+ (M) | distance table+ (M) | ratio | "
                  "kendall-split table+ (M) | ratio |", "|---|---|---|---|---|---|---|---|"]
        for i in instr_rows:
            lines.append(f"| {i.card} | {i.strata} | {i.table / 1e6:.2f} | "
                         f"{i.g2_table / 1e6:.2f} | {i.dist_table / 1e6:.2f} | "
                         f"{i.dist_table / i.g2_table:.2f} | {i.split_table / 1e6:.2f} | "
                         f"{i.split_table / i.g2_table:.2f} |")
        lines.append("")
    return "\n".join(lines)


def _networks(text: str, seeds: int) -> list[str]:
    if text == "bundled":
        return list(list_networks())
    if text == "families":
        return [f.format(s=s) for f in DEFAULT_FAMILIES for s in range(1, seeds + 1)]
    sep = ";" if "random:" in text else ","  # random specs contain commas
    return [t.strip() for t in text.split(sep) if t.strip()]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "utility", help="g2-decision-distance vs G^2 / kendall-split / cmi (SNR, ceiling, speed)",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    _arguments(p)
    p.set_defaults(func=run)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--snr", default="bundled",
                   help="networks for the SNR table: 'bundled', 'families', a comma-separated list "
                        "(';'-separated when it holds random: specs), or ''")
    p.add_argument("--ceiling", default="bundled",
                   help="networks for the ceiling table: 'bundled', 'families', a list, or ''")
    p.add_argument("--family-seeds", type=int, default=3, help="seeds per generated family")
    p.add_argument("--cards", default="2,3,5,10,20,50,100",
                   help="cardinalities for the speed table ('' skips)")
    p.add_argument("--strata", default="1,4,64",
                   help="numbers of strata for the speed table")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--instructions", action="store_true",
                   help="the per-test table in instructions counted by callgrind (needs "
                        "valgrind) instead of wall time")
    p.add_argument("--out", type=Path, default=None,
                   help="write the section to this file (default: print)")
    utility_f1.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    if args.f1_ratio:
        return utility_f1.run(args)
    snr_rows = []
    for name in _networks(args.snr, args.family_seeds):
        snr_rows.append(snr(name, args.rows, args.seed, args.alpha, args.eps, args.delta))
        print(render([snr_rows[-1]], [], [], args).splitlines()[-1],
              file=sys.stderr)
    ceil_rows = []
    for name in _networks(args.ceiling, args.family_seeds):
        ceil_rows.append(ceiling(name, args.rows, args.seed, args.alpha))
        c = ceil_rows[-1]
        print(f"ceiling {name}: g2 {c.g2:.3f} dist {c.distance:.3f} split {c.split:.3f} "
              f"({c.seconds:.0f} s)", file=sys.stderr)
    shapes = [(int(c), int(k)) for c in args.cards.split(",") if c
              for k in args.strata.split(",") if k]
    speed_rows: list[SpeedRow] = []
    instr_rows: list[InstructionRow] = []
    if args.instructions:
        # each row is one valgrind child process: run up to --processes of them at once
        with ThreadPoolExecutor(max_workers=max(1, args.processes)) as pool:
            instr_rows = list(pool.map(
                lambda shape: instructions(shape[0], shape[1], args.rows, args.seed,
                                           args.repeats),
                shapes))
    else:
        speed_rows = [speed(c, k, args.rows, args.seed, args.repeats) for c, k in shapes]
    text = render(snr_rows, ceil_rows, speed_rows, args, instr_rows)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.utility")
    _arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())

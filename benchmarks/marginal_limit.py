"""Where Marginal-PC's signal meets its noise (issue 57): the expected power of its tests
on a network's true edges at the per-table noise its plan gives.

For a network, ``n`` rows (data seed), ``eps`` and ``delta`` the script

1. runs ``marginal-pc`` once (noise seed ``1000 + seed``, default plan with
   ``level0 = "tables"``: one 2-way table per pair) and reads the
   per-cell noise standard deviation of its level-0 tables (the plan's ``level0_sigma``)
   and of its level-1 tables (the run's ``used_levels``; a function of the plan and of the
   released decisions), and the run's skeleton recall;
2. for every true edge ``x - y`` computes from the **exact** tables (an analysis of the
   mechanism on a sample, nothing released) the noncentrality of the noisy G-test,
   ``lambda(v) = sum (N - E)^2 / (E + v)`` over the cells (``E`` the independence fit of
   each stratum, ``v`` the per-cell noise variance: the noisy test scales every cell by
   ``E + v``), and the test's power ``P(chi2_df(lambda) > chi2_df^{-1}(1 - alpha))``
   (``df`` the declared degrees of freedom): at zero noise, at level 0's noise, and at the
   noise level 0 would have with the **whole** budget (``rho / pairs`` per table: the
   best any one-table-per-pair scheme can do);
3. for level 1, the power of each test ``x _||_ y | z`` for ``z`` a true neighbour of ``x``
   or ``y`` (the sets PC asks first on a sparse network) at level 1's noise; an edge
   survives level 1 with probability ``product over z`` of those powers (independence
   approximation).

The means over true edges are the expected recall of level 0 and after level 1, beside
the measured recall of the run and of G^2 PC. Run:
``python -m benchmarks.marginal_limit --networks insurance,water --epsilons 1,5``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class LimitRow:
    """One (network, eps): noise levels, expected and measured recall."""

    network: str
    nodes: int
    true_edges: int
    epsilon: float
    sigma0: float
    sigma0_all: float
    sigma1: float | None
    level0_power_exact: float
    level0_power_noisy: float
    level0_power_all: float
    level1_survival_exact: float
    level1_survival_noisy: float | None
    recall_marginal: float
    recall_g2: float
    median_lambda_exact: float
    median_lambda_noisy: float


def noisy_power(table: NDArray[np.int64], variance: float, alpha: float) -> tuple[float, float]:
    """Noncentrality ``sum (N - E)^2 / (E + v)`` of a ``(strata, cx, cy)`` table and the
    G-test's power at ``alpha`` with ``df = strata (cx - 1)(cy - 1)``."""
    from scipy.stats import chi2, ncx2

    t = np.asarray(table, dtype=np.float64)
    k, cx, cy = t.shape
    tot = t.sum(axis=(1, 2), keepdims=True)
    safe = np.where(tot > 0, tot, 1.0)
    e = t.sum(axis=2, keepdims=True) * t.sum(axis=1, keepdims=True) / safe
    den = e + variance
    ok = den > 0
    lam = float(np.sum(np.where(ok, (t - e) ** 2 / np.where(ok, den, 1.0), 0.0)))
    df = k * (cx - 1) * (cy - 1)
    crit = float(chi2.isf(alpha, df))
    return lam, float(ncx2.sf(crit, df, lam)) if lam > 0 else alpha


def limit_row(name: str, rows: int, seed: int, eps: float, delta: float,
              alpha: float = 0.05) -> LimitRow:
    from dpcg.datasets import load_network
    from dpcg.metrics import skeleton_scores
    from dpcg.pc.engine import pc_stable
    from dpcg.private.run import discover_private
    from dpcg.stats.contingency import contingency_table

    net = load_network(name)
    data = net.sample(rows, seed)
    truth = net.true_cpdag()
    from dpcg.private.marginal_pc import MarginalPCParams

    # the one-table-per-pair level 0 this analysis is about (auto may select instead)
    res = discover_private(data, "marginal-pc", epsilon=eps, delta=delta,
                           noise_seed=1000 + seed, alpha=alpha,
                           params=MarginalPCParams(level0="tables"))
    plan = res.to_json()["plan"]
    sigma0 = float(plan["level0_sigma"])
    share = float(plan["level0_share"])
    sigma_all = sigma0 * math.sqrt(share)
    lv1 = [lv for lv in plan.get("used_levels", []) if lv["level"] == 1 and lv.get("tables")]
    sigma1 = float(lv1[0]["sigma"]) if lv1 else None
    recall_m = skeleton_scores(res.cpdag, truth).recall
    from benchmarks.utility import _g2_rule, _Tester  # G^2 PC as `dpcg bench utility` runs it

    g2 = pc_stable(_Tester(data, _g2_rule(alpha)), data.names)
    recall_g = skeleton_scores(g2.cpdag, truth).recall
    codes = data.codes
    cards = [int(c) for c in data.cardinalities if c is not None]
    idx = {v: i for i, v in enumerate(data.names)}
    nbrs: dict[int, set[int]] = {i: set() for i in range(len(cards))}
    edges = [(idx[a], idx[b]) for a, b in net.dag_edges]
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    p0e, p0n, p0a, s1e, s1n, lam_e, lam_n = [], [], [], [], [], [], []
    for x, y in edges:
        t0 = contingency_table(codes, cards, x, y, (), check=False).counts
        le, pe = noisy_power(t0, 0.0, alpha)
        ln, pn = noisy_power(t0, sigma0 ** 2, alpha)
        _, pa = noisy_power(t0, sigma_all ** 2, alpha)
        p0e.append(pe)
        p0n.append(pn)
        p0a.append(pa)
        lam_e.append(le)
        lam_n.append(ln)
        surv_e, surv_n = pe, pn
        for z in sorted((nbrs[x] | nbrs[y]) - {x, y}):
            tz = contingency_table(codes, cards, x, y, (z,), check=False).counts
            surv_e *= noisy_power(tz, 0.0, alpha)[1]
            if sigma1 is not None:
                surv_n *= noisy_power(tz, sigma1 ** 2, alpha)[1]
        s1e.append(surv_e)
        s1n.append(surv_n)
    short = Path(name).name.removesuffix(".gz").removesuffix(".bif")
    return LimitRow(short, len(cards), len(edges), eps, sigma0, sigma_all, sigma1,
                    float(np.mean(p0e)), float(np.mean(p0n)), float(np.mean(p0a)),
                    float(np.mean(s1e)), float(np.mean(s1n)) if sigma1 is not None else None,
                    recall_m, recall_g, float(np.median(lam_e)), float(np.median(lam_n)))


def render(rows: list[LimitRow]) -> str:
    out = ["| network | eps | true edges | sigma level 0 (all rho) | sigma level 1 | "
           "median lambda exact / noisy | level-0 power exact / noisy / all rho | "
           "after level 1 exact / noisy | recall G^2 / marginal-pc |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s1 = "-" if r.sigma1 is None else f"{r.sigma1:.0f}"
        n1 = "-" if r.level1_survival_noisy is None else f"{r.level1_survival_noisy:.2f}"
        out.append(f"| {r.network} ({r.nodes}) | {r.epsilon:g} | {r.true_edges} | "
                   f"{r.sigma0:.0f} ({r.sigma0_all:.0f}) | {s1} | "
                   f"{r.median_lambda_exact:,.0f} / {r.median_lambda_noisy:,.1f} | "
                   f"{r.level0_power_exact:.2f} / {r.level0_power_noisy:.2f} / "
                   f"{r.level0_power_all:.2f} | {r.level1_survival_exact:.2f} / {n1} | "
                   f"{r.recall_g2:.2f} / {r.recall_marginal:.2f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.marginal_limit")
    ap.add_argument("--networks", default="insurance,water")
    ap.add_argument("--epsilons", default="1,5")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for name in (n for n in args.networks.split(",") if n):
        for eps in (float(e) for e in args.epsilons.split(",")):
            rows.append(limit_row(name, args.rows, args.seed, eps, args.delta))
            if args.json:
                rec: dict[str, Any] = asdict(rows[-1])
                print(json.dumps(rec), flush=True)
    sys.stdout.write(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

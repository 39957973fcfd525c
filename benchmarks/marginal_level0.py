"""Marginal-PC's level 0: tables of every pair vs a private selection (issue 57).

For each network (bundled name, ``random:...`` spec or BIF file), data seed and epsilon,
the script samples ``rows`` rows, runs ``marginal-pc`` once per variant (noise seed
``1000 + seed``, delta 1e-6) and prints one JSON line per run: the variant's options,
skeleton F1 / precision / recall, the edges lost per level (true edges removed at level 0
and at levels >= 1), the admitted mechanisms (``releases``), tables, tests and the run's
CPU seconds (``time.process_time``, this process). With ``--g2`` it also runs G^2
PC-stable (alpha 0.05, no noise) on the same rows and adds the F1 ratio. Run::

    python -m benchmarks.marginal_level0 --networks 'insurance;water' --seeds 11 \\
        --epsilons 1 --variants 'tables;select;select,kept_tables=0'

(``;`` separates networks and variants; a variant is ``,``-separated ``field=value``
options of :class:`dpcg.private.marginal_pc.MarginalPCParams`, its first item the
``level0`` value.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def parse_variant(spec: str) -> dict[str, Any]:
    """``select,select_by=nodes,kept_tables=0`` -> MarginalPCParams fields."""
    out: dict[str, Any] = {}
    for i, item in enumerate(x for x in spec.split(",") if x):
        if "=" not in item:
            if i:
                raise SystemExit(f"variant {spec!r}: {item!r} is not field=value")
            out["level0"] = item
            continue
        key, value = item.split("=", 1)
        num: Any
        try:
            num = int(value)
        except ValueError:
            try:
                num = float(value)
            except ValueError:
                num = value
        out[key] = num
    return out


def lost_edges(res: Any, names: list[str], truth: set[frozenset[str]]) -> dict[str, int]:
    """True edges removed at level 0 / at levels >= 1 (from the removal records), and
    of level 0's those the selection did not keep (a record without a statistic)."""
    lost = {"lost_level0": 0, "lost_deeper": 0, "lost_unselected": 0}
    for rec in res.pc.tests:
        pair = frozenset((names[rec.x], names[rec.y]))
        if pair in truth and rec.independent and rec.statistic is None:
            lost["lost_unselected"] += 1  # not kept by the level-0 selection
        if pair in truth and rec.independent:
            key = "lost_level0" if len(rec.S) == 0 else "lost_deeper"
            lost[key] += 1
    return lost


def run_cell(network: str, rows: int, seed: int, eps: float,
             variants: list[str], g2: bool, g2_depth: int | None = None
             ) -> list[dict[str, Any]]:
    from dpcg.datasets import load_network
    from dpcg.metrics import skeleton_scores
    from dpcg.private.marginal_pc import MarginalPCParams
    from dpcg.private.run import discover_private

    net = load_network(network)
    data = net.sample(rows, seed)
    truth_cpdag = net.true_cpdag()
    truth = {frozenset(e) for e in truth_cpdag.skeleton()}
    short = Path(network).name.removesuffix(".gz").removesuffix(".bif")
    g2_f1 = None
    if g2:
        from dpcg.api import discover
        g2_f1 = skeleton_scores(discover(data, algorithm="pc", test="g2", ledger=None,
                                         max_depth=g2_depth).cpdag, truth_cpdag).f1
    out = []
    for spec in variants:
        opts = parse_variant(spec)
        t0 = time.process_time()
        res = discover_private(data, "marginal-pc", epsilon=eps, delta=1e-6,
                               noise_seed=1000 + seed, params=MarginalPCParams(**opts))
        cpu = time.process_time() - t0
        sk = skeleton_scores(res.cpdag, truth_cpdag)
        row = {"network": short, "nodes": len(data.names), "rows": rows, "seed": seed,
               "epsilon": eps, "variant": spec, "level0": res.plan.get("level0"),
               "f1": sk.f1, "precision": sk.precision, "recall": sk.recall,
               "releases": sum(res.mechanisms.values()),
               "tables": res.plan.get("used_tables"), "tests": res.pc.n_tests,
               "levels": [{k: lv.get(k) for k in ("level", "pairs", "selected", "tables",
                                                  "tests", "sigma")}
                          for lv in res.plan.get("used_levels", [])],
               **lost_edges(res, list(data.names), truth), "cpu_s": round(cpu, 2)}
        if g2_f1 is not None:
            row["g2_f1"] = g2_f1
            row["ratio"] = sk.f1 / g2_f1 if g2_f1 else None
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.marginal_level0")
    ap.add_argument("--networks", default="insurance", help="';'-separated networks")
    ap.add_argument("--variants", default="tables;select", help="';'-separated variants")
    ap.add_argument("--epsilons", default="1")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seeds", default="11")
    ap.add_argument("--g2", action="store_true", help="also run G^2 PC (the ratio's base)")
    ap.add_argument("--g2-depth", type=int, default=None, help="G^2 PC's depth cap")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(";") if v]
    for name in (n for n in args.networks.split(";") if n):  # specs hold commas
        for seed in (int(s) for s in args.seeds.split(",") if s):
            for eps in (float(e) for e in args.epsilons.split(",") if e):
                for row in run_cell(name, args.rows, seed, eps, variants, args.g2,
                                    args.g2_depth):
                    sys.stdout.write(json.dumps(row) + "\n")
                    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

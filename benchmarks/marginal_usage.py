"""Releases per run, tests per release and CPU of Marginal-PC (issue 57).

For each network (bundled name, ``random:...`` spec or BIF file) the script samples
``rows`` rows (data seed ``seed``), runs ``marginal-pc`` once (noise seed ``1000 + seed``,
delta 1e-6, the default plan) and prints one JSON line: the admitted mechanisms
(``releases``: one per level that released tables), the tables inside them, the test
records, tests per release, the skeleton F1 / precision / recall and the run's CPU
seconds (``time.process_time``, this process only). Run::

    python -m benchmarks.marginal_usage --epsilon 1 \\
        --networks 'child;random:nodes=100,max_parents=3,card=2-4,seed=1,conc=1'

(networks separated by ``;``: a ``random:`` spec holds commas).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def usage_row(network: str, rows: int, seed: int, eps: float,
              algorithm: str = "marginal-pc") -> dict[str, Any]:
    from dpcg.datasets import load_network
    from dpcg.metrics import skeleton_scores
    from dpcg.private.run import discover_private

    net = load_network(network)
    data = net.sample(rows, seed)
    t0 = time.process_time()
    res = discover_private(data, algorithm, epsilon=eps, delta=1e-6,
                           noise_seed=1000 + seed)
    cpu = time.process_time() - t0
    sk = skeleton_scores(res.cpdag, net.true_cpdag())
    releases = sum(res.mechanisms.values())
    tests = res.pc.n_tests
    short = Path(network).name.removesuffix(".gz").removesuffix(".bif")
    return {"network": short, "nodes": len(data.names), "epsilon": eps,
            "algorithm": algorithm, "releases": releases,
            "tables": res.plan.get("used_tables"), "tests": tests,
            "tests_per_release": tests / releases if releases else 0.0,
            "f1": sk.f1, "precision": sk.precision, "recall": sk.recall,
            "cpu_s": cpu}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.marginal_usage")
    ap.add_argument("--networks", default="child", help="';'-separated networks")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for name in (n for n in args.networks.split(";") if n):  # specs hold commas
        sys.stdout.write(json.dumps(usage_row(name, args.rows, args.seed, args.epsilon))
                         + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

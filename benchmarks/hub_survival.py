"""Do the hub edges of the 60-node hub network survive PC's deep levels? (issue 59)

For the two largest hubs of ``benchmarks.scale.hub_network(60)`` (100,000 rows, data
seed 0) and four of each hub's true neighbours ``y``, a random sample of conditioning
sets of size ``L`` drawn from the hub's other true neighbours (the sets PC-stable asks at
level ``L`` once the learned skeleton is the true one, which the 2,400 s run of
``docs/benchmarks/scale.md`` reached by level 5) is G-tested with the default rule. A
rejection keeps the edge, so when every sampled set rejects, PC asks nearly all
``C(deg - 1, L)`` sets of that edge at level ``L``: a measured lower bound on the run's
size. One JSON line per edge: ``python -m benchmarks.hub_survival L SAMPLES``."""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np


def survival(level: int, samples: int, seed: int = 0) -> list[dict[str, object]]:
    from benchmarks.scale import hub_network
    from dpcg.citests.nonprivate import FastG2Test
    from dpcg.datasets import load_network

    net = load_network(hub_network(60))
    ds = net.sample(100_000, 0)
    index = {name: i for i, name in enumerate(ds.names)}
    adj: dict[int, set[int]] = {i: set() for i in range(len(ds.names))}
    for a, b in net.dag_edges:
        adj[index[a]].add(index[b])
        adj[index[b]].add(index[a])
    hubs = sorted(adj, key=lambda v: (-len(adj[v]), v))[:2]
    test = FastG2Test(ds)
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for h in hubs:
        for y in sorted(adj[h])[:4]:
            others = sorted(adj[h] - {y})
            c0 = time.process_time()
            rejected = 0
            for _ in range(samples):
                S = tuple(sorted(int(v) for v in rng.choice(others, level, replace=False)))
                rejected += not test(h, y, S).independent
            out.append({"hub": ds.names[h], "degree": len(adj[h]), "y": ds.names[y],
                        "level": level, "sampled": samples, "rejected": rejected,
                        "sets_at_level": math.comb(len(others), level),
                        "cpu_ms_per_test": round(1000 * (time.process_time() - c0)
                                                 / samples, 2)})
    return out


def main(argv: list[str]) -> int:
    level, samples = (int(argv[0]), int(argv[1])) if len(argv) >= 2 else (6, 40)
    for row in survival(level, samples):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))

"""Private utility on hub networks (issue 59, item 5): ``python -m benchmarks.hubs_private``.

One process per call; each cell is a network (``hub-P``: the scale-free family of
``benchmarks.scale.hub_network(P, seed=S)``, or any dataset name with ``{seed}``), a data
seed ``S`` (sample seed ``S``, noise seed ``1000 + S``, delta ``1e-6``) and an algorithm
label ``NAME`` or ``NAME:opt=value;opt=value`` (e.g. ``priv-pc:hub_mode=off``, Priv-PC's
default before its hub switch, or ``priv-pc:node_select=4``; the
algorithm's options, plus ``depth`` for the run's ``max_depth`` and ``test`` for its
score, e.g. ``hub-pc:neighbours=6;depth=2``); ``g2`` is non-private G^2 PC
(``--g2-depth``, default 3; ``0`` or less: no depth cap). Prints one JSON line per run (skeleton
F1, precision, recall, edges, CPU seconds); ``--table FILE...`` renders JSON-line files as
the Markdown table of ``docs/benchmarks/hubs-private.md``. Not registered in ``dpcg
bench``: a measurement driver for that page.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "ratio_table", "render", "run_cell"]

DELTA = 1e-6


def _network(spec: str, seed: int) -> str:
    from benchmarks.scale import hub_network

    return hub_network(int(spec[4:]), seed=seed) if spec.startswith("hub-") else \
        spec.format(seed=seed)


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _params(label: str) -> tuple[str, dict[str, int | float | str]]:
    name, _, opts = label.partition(":")
    return name, {k: _value(v) for k, v in (kv.split("=", 1) for kv in opts.split(";") if kv)}


def run_cell(spec: str, seed: int, labels: Sequence[str], epsilons: Sequence[float],
             rows: int = 100_000, g2_depth: int = 3) -> list[dict[str, Any]]:
    """Every algorithm label and epsilon on one network and seed (one shared sample and
    score cache)."""
    from dpcg.api import discover
    from dpcg.datasets import load_network
    from dpcg.metrics import skeleton_scores
    from dpcg.private.registry import get_algorithm
    from dpcg.private.run import discover_private

    net = load_network(_network(spec, seed))
    data = net.sample(rows, seed)
    truth = net.true_cpdag()
    caches: dict[str, dict[tuple[int, int, tuple[int, ...]], float]] = {}
    out: list[dict[str, Any]] = []
    for label in labels:
        name, opts = _params(label)
        depth = opts.pop("depth", None)
        test = opts.pop("test", None)
        for eps in ([None] if name == "g2" else list(epsilons)):
            t0 = time.process_time()
            hub = None
            if name == "g2":
                cpdag = discover(data, algorithm="pc", test="g2", ledger=None,
                                 max_depth=g2_depth if g2_depth > 0 else None).cpdag
                exhausted = False
                label_out = f"g2 (depth {g2_depth})" if g2_depth > 0 else "g2"
            else:
                assert eps is not None
                res = discover_private(
                    data, name, epsilon=eps, delta=DELTA, noise_seed=1000 + seed,
                    cache=caches.setdefault(str(test), {}),
                    test=None if test is None else str(test),
                    max_depth=None if depth is None else int(depth),
                    params=get_algorithm(name).params(**opts))
                cpdag, exhausted, label_out = res.cpdag, bool(res.budget_exhausted), label
                hub = res.plan.get("used_hub_switch")
            s = skeleton_scores(cpdag, truth)
            row = {"net": spec, "seed": seed, "algo": label_out, "eps": eps,
                   "f1": round(s.f1, 3), "P": round(s.precision, 3), "R": round(s.recall, 3),
                   "edges": cpdag.n_edges, "true": truth.n_edges, "exh": exhausted,
                   "cpu": round(time.process_time() - t0, 1)}
            if hub is not None:  # Priv-PC's hub switch: whether the run took it
                row["hub"] = bool(hub)
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def render(rows: Sequence[dict[str, Any]]) -> str:
    """Mean skeleton F1 (per-seed values), precision and recall per network, eps and
    algorithm."""
    cells: dict[tuple[str, str, float | None], list[dict[str, Any]]] = defaultdict(list)
    nets: list[str] = []
    algos: list[str] = []
    for r in rows:
        cells[(r["net"], r["algo"], r["eps"])].append(r)
        if r["net"] not in nets:
            nets.append(r["net"])
        if r["algo"] not in algos:
            algos.append(r["algo"])
    lines = ["| network | eps | " + " | ".join(algos) + " |",
             "|---|---|" + "---|" * len(algos)]
    for n in nets:
        for eps in sorted({r["eps"] for r in rows if r["net"] == n and r["eps"] is not None}):
            row = []
            for a in algos:
                got = cells.get((n, a, eps)) or cells.get((n, a, None))
                if not got:
                    row.append("-")
                    continue
                f1 = [g["f1"] for g in got]
                row.append(f"{statistics.mean(f1):.3f} ({', '.join(f'{v:.2f}' for v in f1)}) "
                           f"P {statistics.mean(g['P'] for g in got):.2f} "
                           f"R {statistics.mean(g['R'] for g in got):.2f}")
            lines.append(f"| {n} | {eps:g} | " + " | ".join(row) + " |")
    ratio = ratio_table(rows)
    return "\n".join(lines) + ("\n\n" + ratio if ratio else "")


def ratio_table(rows: Sequence[dict[str, Any]]) -> str:
    """Per network and eps, each private algorithm's F1 over G^2 PC's F1 on the same
    network and seed (mean over the seeds that have both; per-seed values), the best
    algorithm and Priv-PC's gap to it; empty without G^2 rows."""
    g2 = {(r["net"], r["seed"]): r["f1"] for r in rows if str(r["algo"]).startswith("g2")}
    if not g2:
        return ""
    algos = [a for a in dict.fromkeys(r["algo"] for r in rows)
             if not str(a).startswith("g2")]
    lines = ["| network | eps | " + " | ".join(algos) + " | best | Priv-PC gap |",
             "|---|---|" + "---|" * (len(algos) + 2)]
    for n in dict.fromkeys(r["net"] for r in rows):
        for eps in sorted({r["eps"] for r in rows if r["net"] == n and r["eps"] is not None}):
            means: dict[str, float] = {}
            cells = []
            for a in algos:
                got = [r["f1"] / g2[(n, r["seed"])] for r in rows
                       if (r["net"], r["algo"], r["eps"]) == (n, a, eps)
                       and (n, r["seed"]) in g2 and g2[(n, r["seed"])] > 0]
                if not got:
                    cells.append("-")
                    continue
                means[a] = statistics.mean(got)
                cells.append(f"{means[a]:.3f} ({', '.join(f'{v:.2f}' for v in got)})")
            if not means:
                continue
            best = max(means, key=lambda a: means[a])
            gap = f"{means[best] - means['priv-pc']:.3f}" if "priv-pc" in means else "-"
            lines.append(f"| {n} | {eps:g} | " + " | ".join(cells)
                         + f" | {best} {means[best]:.3f} | {gap} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.hubs_private",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--network", default="hub-50", help="hub-P or a dataset name with {seed}")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--epsilons", default="1,5")
    ap.add_argument("--algorithms", default="priv-pc,priv-pc:hub_mode=off,hub-pc,laplace-pc")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--g2-depth", type=int, default=3)
    ap.add_argument("--table", nargs="+", metavar="FILE", help="render JSON-line files")
    a = ap.parse_args(argv)
    if a.table:
        rows: list[dict[str, Any]] = []
        for f in a.table:
            with open(f, encoding="utf-8") as fh:
                rows += [json.loads(line) for line in fh if line.strip()]
        print(render(rows))
        return 0
    for seed in (int(s) for s in a.seeds.split(",")):
        run_cell(a.network, seed, a.algorithms.split(","),
                 [float(e) for e in a.epsilons.split(",")], a.rows, a.g2_depth)
    return 0


if __name__ == "__main__":
    sys.exit(main())

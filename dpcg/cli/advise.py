"""``dpcg advise``: the private algorithms' skeleton F1 predicted from public facts alone.

Example::

    dpcg advise --schema survey.schema.json --rows 100000 --epsilon 1 --epsilon 5

Reads the schema (its columns' cardinalities, public), never a data file, and charges
nothing: every run is on synthetic data from networks drawn from the advisor's prior
(:mod:`dpcg.advise`). ``--like NETWORK`` takes a bundled network's cardinalities only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpcg.errors import DpcgError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "advise",
        help="predict the private algorithms' skeleton F1 from public facts (no data read, "
             "nothing charged)",
        description="Simulate networks drawn from the advisor's prior (the schema's "
                    "cardinalities, n rows, a range of densities, shapes and dependence "
                    "strengths unless you give them), run the private algorithms on "
                    "synthetic data and report the median skeleton F1 with a 5-95 %% "
                    "band, precision, recall, and the epsilon needed for a target F1. "
                    "Reads no data and charges no budget.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--schema", type=Path, metavar="SCHEMA.json",
                     help="a declared schema (all discrete)")
    src.add_argument("--like", metavar="NETWORK",
                     help="use the cardinalities of a bundled network (nothing else of it)")
    p.add_argument("--rows", type=int, required=True, metavar="N", help="rows n (public)")
    p.add_argument("--epsilon", type=float, action="append", default=None, metavar="E",
                   help="a budget to consider (repeatable; default 0.5, 1, 2, 5)")
    p.add_argument("--algorithms", default=None,
                   help="comma-separated private algorithms (default laplace-pc, priv-pc)")
    p.add_argument("--max-parents", type=int, default=None, metavar="K",
                   help="the network's maximum in-degree, if known (default: the prior's "
                        "range, 2-4 uniform, 1-3 scale-free)")
    p.add_argument("--shape", choices=("uniform", "scale-free"), default=None,
                   help="the network's shape, if known (default: both)")
    p.add_argument("--networks", type=int, default=None, metavar="M",
                   help="networks simulated (default: 8-24 by a cost model of the schema's "
                        "sizes, cut to what --seconds allows, at least 4; the count used "
                        "is printed, and passing it back reproduces the advice)")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="time budget of the advice without --networks: wall seconds on 2 "
                        "idle cores (default 60)")
    p.add_argument("--workers", type=int, default=None, metavar="W",
                   help="processes (default: up to 2)")
    p.add_argument("--target-f1", type=float, default=0.9, metavar="F")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_advise)


def _cardinalities(args: argparse.Namespace) -> list[int]:
    if args.like is not None:
        from dpcg.datasets import load_network

        net = load_network(args.like)
        return [int(c) for c in net.cardinalities]
    from dpcg.data.schema import Schema

    schema = Schema.from_json(args.schema)
    cards = [getattr(col, "cardinality", None) for col in schema]
    if any(c is None for c in cards):
        raise DpcgError("schema: the advisor simulates discrete networks; every column "
                        "must be categorical or ordinal")
    return [int(c) for c in cards if c is not None]


def _advise(args: argparse.Namespace) -> int:
    from dpcg.advise import ALGORITHMS, EPSILONS, SECONDS, advise

    algos = (tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
             if args.algorithms else ALGORITHMS)
    advice = advise(_cardinalities(args), args.rows,
                    epsilons=tuple(args.epsilon) if args.epsilon else EPSILONS,
                    algorithms=algos, max_parents=args.max_parents, shape=args.shape,
                    networks=args.networks, target_f1=args.target_f1, seed=args.seed,
                    workers=args.workers,
                    seconds=SECONDS if args.seconds is None else args.seconds)
    if args.json:
        json.dump(advice.to_json(), sys.stdout, indent=2)
        print()
        return 0
    lo, hi = advice.band
    print(f"{advice.note}.")
    print(f"simulated: {advice.networks} networks, {advice.family}, {advice.rows:,} rows; "
          f"{advice.seconds:.0f} s ({advice.extra['cpu_seconds']:.0f} CPU s, "
          f"{advice.extra['workers']} processes)")
    print(f"F1 = median over the simulated networks; band = their {lo:.0%}-{hi:.0%} "
          "quantiles (widened to a prediction interval below 8 networks): where one "
          "real network of this schema is expected to fall (docs/advise.md)")
    budget = advice.extra.get("seconds_budget")
    if budget is not None:
        print(f"time budget {budget:g} s on 2 cores: {advice.networks} networks simulated "
              f"(--networks {advice.networks} reproduces this advice)")
    print(f"{'algorithm':<12} {'eps':>5} {'F1':>6} {'band':>15} {'prec':>6} {'recall':>6}")
    for r in sorted(advice.rows_table, key=lambda r: (r.algorithm, r.epsilon)):
        print(f"{r.algorithm:<12} {r.epsilon:>5g} {r.f1:>6.3f} "
              f"[{r.f1_low:.3f}, {r.f1_high:.3f}] {r.precision:>6.3f} {r.recall:>6.3f}")
    for algo, eps in advice.epsilon_for_target.items():
        need = "not reached on the grid" if eps is None else f"reached at eps ~ {eps:.2g}"
        print(f"{algo}: median F1 >= {advice.target_f1:g} {need}")
    return 0

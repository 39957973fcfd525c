"""``dpcg advise``: expected skeleton F1 of the private algorithms from public facts alone.

Example::

    dpcg advise --schema survey.schema.json --rows 100000 --epsilon 1 --epsilon 5

Reads the schema (its column count and cardinalities, public), never a data file, and
charges nothing: every run is on synthetic data from generated networks
(:mod:`dpcg.advise`). A schema with continuous columns, or a bundled network's name via
``--like`` (its schema only), is accepted as described in ``--help``.
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
        description="Simulate generated networks shaped like the schema (columns, "
                    "cardinalities), n rows and an expected density, run the private "
                    "algorithms on synthetic data and report the expected skeleton F1, "
                    "precision and recall with a band, and the epsilon needed for a "
                    "target F1. Reads no data and charges no budget.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--schema", type=Path, metavar="SCHEMA.json",
                     help="a declared schema (all discrete)")
    src.add_argument("--like", metavar="NETWORK",
                     help="use the schema of a bundled network (its cardinalities only)")
    p.add_argument("--rows", type=int, required=True, metavar="N", help="rows n (public)")
    p.add_argument("--epsilon", type=float, action="append", default=None, metavar="E",
                   help="a budget to consider (repeatable; default 0.5, 1, 2, 5)")
    p.add_argument("--algorithms", default=None,
                   help="comma-separated private algorithms (default laplace-pc, priv-pc, "
                        "marginal-pc)")
    p.add_argument("--max-parents", type=int, default=3, metavar="K",
                   help="expected density: parents per node of the generated networks")
    p.add_argument("--concentration", type=float, default=1.0, metavar="C",
                   help="Dirichlet concentration of the generated networks' tables "
                        "(default 1; smaller: more nearly deterministic, weaker-looking "
                        "real networks are often better matched)")
    p.add_argument("--networks", type=int, default=3, metavar="M",
                   help="generated networks simulated (default 3)")
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
    from dpcg.advise import ALGORITHMS, EPSILONS, advise

    algos = (tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
             if args.algorithms else ALGORITHMS)
    advice = advise(_cardinalities(args), args.rows,
                    epsilons=tuple(args.epsilon) if args.epsilon else EPSILONS,
                    algorithms=algos, max_parents=args.max_parents,
                    networks=args.networks, target_f1=args.target_f1, seed=args.seed,
                    concentration=args.concentration)
    if args.json:
        json.dump(advice.to_json(), sys.stdout, indent=2)
        print()
        return 0
    print(f"{advice.note}.")
    print(f"simulated: {advice.networks} networks {advice.family} (S = seeds), "
          f"{advice.rows:,} rows, {advice.seconds:.0f} s "
          f"({advice.extra['cpu_seconds']:.0f} CPU s)")
    print(f"{'algorithm':<12} {'eps':>5} {'F1':>6} {'band':>13} {'prec':>6} {'recall':>6}")
    for r in sorted(advice.rows_table, key=lambda r: (r.algorithm, r.epsilon)):
        print(f"{r.algorithm:<12} {r.epsilon:>5g} {r.f1:>6.3f} "
              f"[{r.f1_low:.3f}, {r.f1_high:.3f}] {r.precision:>6.3f} {r.recall:>6.3f}")
    for algo, eps in advice.epsilon_for_target.items():
        need = "not reached on the grid" if eps is None else f"eps ~ {eps:.2g}"
        print(f"{algo}: mean F1 >= {advice.target_f1:g} at {need}")
    return 0

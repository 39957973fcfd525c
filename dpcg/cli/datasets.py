"""``dpcg datasets``: list, inspect and sample the bundled bnlearn networks, and generate
random ones.

Examples::

    dpcg datasets list
    dpcg datasets show asia
    dpcg datasets random --nodes 50 --max-parents 3 --cardinality 2-5 --seed 1 --out r.bif
    dpcg datasets random --nodes 20 --seed 1 --continuous-share 0.5 --rows 100000 \
        --out mixed.csv        # + mixed.schema.json and mixed.truth.json (true DAG)
    dpcg discover --dataset random:nodes=50,max_parents=3,card=2-5,seed=1,conc=1 --test g2
    dpcg datasets sample alarm --rows 100000 --out alarm.csv   # seed 0; alarm.schema.json
    dpcg discover --data alarm.csv --schema alarm.schema.json --test g2 --out result.json

The sampled CSV has a header line with the node names (BIF order) and the BIF state
names as values; the schema JSON declares every column categorical with the states in
BIF order, so ``dpcg discover --data FILE --schema FILE`` reads it back unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from dpcg.errors import DataValidationError

#: Rows of `dpcg datasets sample` when --rows is not given.
SAMPLE_ROWS = 10_000


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "datasets",
        help="list, show and sample the bundled benchmark networks",
        description="List, show and sample the bundled bnlearn networks (BIF); generate "
                    "random networks (usable everywhere as --dataset random:...). A BIF "
                    "file of yours (FILE.bif or FILE.bif.gz) is accepted wherever a "
                    "network name is.",
    )
    sub = parser.add_subparsers(dest="datasets_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: _usage(parser))

    p_list = sub.add_parser("list", help="bundled networks with node/edge counts")
    p_list.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p_list.set_defaults(func=_list)

    p_show = sub.add_parser("show", help="nodes (with states) and edges of a network")
    p_show.add_argument("name", help="network name (see `dpcg datasets list`), random:... "
                                     "spec or BIF file")
    p_show.add_argument("--json", action="store_true", help="print JSON instead of text")
    p_show.set_defaults(func=_show)

    p_sample = sub.add_parser(
        "sample", help="forward-sample a network to a CSV file (and its schema beside it)",
        description="Forward-sample a bundled network to FILE, and write its declared "
                    "schema beside it (FILE with the suffix .schema.json) for "
                    "`dpcg discover --data FILE --schema ...`.")
    p_sample.add_argument("name", help="network name (see `dpcg datasets list`), random:... "
                                       "spec or BIF file")
    p_sample.add_argument("--rows", type=int, default=SAMPLE_ROWS, metavar="N",
                          help=f"number of rows (default {SAMPLE_ROWS})")
    p_sample.add_argument("--seed", type=int, default=0, metavar="S",
                          help="random seed (default 0; the sample is a deterministic "
                               "function of it)")
    p_sample.add_argument("--out", type=Path, required=True, metavar="FILE",
                          help="CSV file to write (header = node names)")
    p_sample.add_argument("--schema-out", type=Path, metavar="FILE",
                          help="where to write the schema JSON (all columns categorical; "
                               "default: beside --out, FILE.schema.json)")
    p_sample.add_argument("--no-schema", action="store_true",
                          help="write the CSV only")
    p_sample.add_argument("--format", choices=("csv", "parquet"), default=None,
                          help="output format (default: parquet for --out *.parquet, else "
                               "csv); parquet is streamed in chunks")
    p_sample.set_defaults(func=_sample)

    p_random = sub.add_parser(
        "random", help="generate a random network: print its summary and dataset name",
        description="Generate a random discrete Bayesian network (random DAG with at most "
                    "K parents per node, cardinalities uniform in LO..HI, Dirichlet(A) CPT "
                    "rows), deterministic from the seed. Prints the dataset name to use with "
                    "--dataset (and in `datasets show|sample`) and a summary; --out also "
                    "writes the network as BIF. With --continuous-share F: a mixed network "
                    "(a share F of continuous nodes) sampled to the CSV --out, with its "
                    "schema (FILE.schema.json) and true DAG (FILE.truth.json).")
    p_random.add_argument("--nodes", type=int, required=True, metavar="P",
                          help="number of nodes")
    p_random.add_argument("--max-parents", type=int, default=3, metavar="K",
                          help="at most K parents per node (default 3)")
    p_random.add_argument("--cardinality", default="2-4", metavar="LO-HI",
                          help="states per node, uniform in LO..HI, or one number (default 2-4)")
    p_random.add_argument("--seed", type=int, required=True, metavar="S",
                          help="random seed (the network is a deterministic function of it)")
    p_random.add_argument("--concentration", type=float, default=1.0, metavar="A",
                          help="Dirichlet concentration of the CPT rows: small = strong "
                               "dependences, large = weak (default 1)")
    p_random.add_argument("--shape", choices=("uniform", "scale-free"), default="uniform",
                          help="DAG shape: 'uniform' (default; parents uniform among earlier "
                               "nodes) or 'scale-free' (preferential attachment: 1..K parents "
                               "each, hubs with many children)")
    p_random.add_argument("--exponent", type=float, default=None, metavar="G",
                          help="scale-free only: attachment weight (1 + out-degree)^G "
                               "(default 1; 0 = uniform attachment, larger = bigger hubs)")
    p_random.add_argument("--out", type=Path, metavar="FILE",
                          help="also write the network as BIF (.bif, or gzip if FILE ends in "
                               ".gz); with --continuous-share, the sampled CSV")
    p_random.add_argument("--continuous-share", type=float, default=None, metavar="F",
                          help="generate a MIXED network instead: a share F in [0, 1] of "
                               "continuous nodes (linear and non-linear conditional means "
                               "shifted by categorical parents; discrete nodes with a "
                               "softmax link), sampled to --out CSV with its schema "
                               "(declared bounds [-B, B] from the design) and true DAG")
    p_random.add_argument("--rows", type=int, default=SAMPLE_ROWS, metavar="N",
                          help=f"mixed networks: rows to sample (default {SAMPLE_ROWS})")
    p_random.add_argument("--sample-seed", type=int, default=0, metavar="S",
                          help="mixed networks: seed of the sample (default 0)")
    p_random.add_argument("--nonlinear", type=float, default=0.5, metavar="Q",
                          help="mixed networks: probability that a continuous parent enters "
                               "a continuous child through a non-linear link (default 0.5)")
    p_random.add_argument("--strength", type=float, default=1.0, metavar="K",
                          help="mixed networks: standard deviation of the softmax effects on "
                               "discrete nodes (larger = stronger; default 1; "
                               "--concentration is for discrete networks)")
    p_random.add_argument("--bound", type=float, default=5.0, metavar="B",
                          help="mixed networks: declared bounds [-B, B] of every continuous "
                               "node (unit variance by design; default 5)")
    p_random.add_argument("--json", action="store_true", help="print the summary as JSON")
    p_random.set_defaults(func=_random)


def schema_path_for(out: Path) -> Path:
    """Where ``dpcg datasets sample --out FILE`` writes the schema: ``FILE.schema.json``
    (``asia.csv`` -> ``asia.schema.json``)."""
    return out.with_name(out.stem + ".schema.json")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _card_range(cards: tuple[int, ...]) -> str:
    lo, hi = min(cards), max(cards)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _list(args: argparse.Namespace) -> int:
    from dpcg.datasets import list_networks, load_network

    rows = []
    for name in list_networks():
        net = load_network(name)
        rows.append({
            "name": name,
            "nodes": net.n_nodes,
            "edges": net.n_edges,
            "cardinalities": _card_range(net.cardinalities),
            "max_parents": max(len(p) for p in net.parents.values()),
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = ("name", "nodes", "edges", "cardinalities", "max_parents")
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in header]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(str(r[h]).ljust(w) for h, w in zip(header, widths, strict=True)))
    return 0


def _show(args: argparse.Namespace) -> int:
    from dpcg.datasets import load_network

    net = load_network(args.name)
    if args.json:
        doc = {
            "name": net.name,
            "nodes": [{"name": v, "states": list(net.states[v]), "parents": list(net.parents[v])}
                      for v in net.nodes],
            "edges": [list(e) for e in net.dag_edges],
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{net.name}: {net.n_nodes} nodes, {net.n_edges} edges")
    print("nodes (BIF order = column order of sampled data):")
    width = max(len(v) for v in net.nodes)
    for v in net.nodes:
        print(f"  {v.ljust(width)}  {{{', '.join(net.states[v])}}}")
    print("edges (parent -> child):")
    for a, b in net.dag_edges:
        print(f"  {a} -> {b}")
    return 0


def _sample(args: argparse.Namespace) -> int:
    from dpcg.cli.sample_parquet import sample_format, sample_parquet
    from dpcg.datasets import load_network

    if args.rows < 1:
        raise DataValidationError(f"--rows must be a positive integer, got {args.rows}")
    if sample_format(args) == "parquet":  # streamed in chunks (dpcg.cli.sample_parquet)
        return sample_parquet(args)
    net = load_network(args.name)
    t0 = time.perf_counter()
    data = net.sample(args.rows, args.seed)
    t1 = time.perf_counter()
    if args.no_schema and args.schema_out is not None:
        raise DataValidationError("--no-schema and --schema-out contradict each other; "
                                  "drop one")
    schema_out = None if args.no_schema else (
        args.schema_out if args.schema_out is not None else schema_path_for(args.out))
    data.to_csv(args.out)
    if schema_out is not None:
        data.schema.to_json(schema_out)
    t2 = time.perf_counter()
    extra = f" and its schema to {schema_out}" if schema_out is not None else ""
    print(
        f"sampled {args.rows} rows of {net.name} (seed {args.seed}) in {t1 - t0:.2f} s; "
        f"wrote {args.out}{extra} in {t2 - t1:.2f} s",
        file=sys.stderr,
    )
    return 0


def _random(args: argparse.Namespace) -> int:
    from dpcg.datasets import RandomSpec, load_network

    lo_text, dash, hi_text = str(args.cardinality).strip().partition("-")
    try:
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
    except ValueError:
        raise DataValidationError(
            f"--cardinality must be LO-HI or one integer (e.g. 2-5), got {args.cardinality!r}"
        ) from None
    if args.exponent is not None and args.shape != "scale-free":
        raise DataValidationError("--exponent applies to --shape scale-free only")
    if args.continuous_share is not None:
        return _random_mixed(args, lo, hi)
    spec = RandomSpec(nodes=args.nodes, max_parents=args.max_parents, card_lo=lo, card_hi=hi,
                      seed=args.seed, conc=args.concentration, shape=args.shape,
                      exponent=1.0 if args.exponent is None else args.exponent)
    net = load_network(spec.name)
    summary = {
        "name": net.name,
        "nodes": net.n_nodes,
        "edges": net.n_edges,
        "cardinalities": _card_range(net.cardinalities),
        "max_parents": max(len(p) for p in net.parents.values()),
    }
    if spec.shape != "uniform":
        children: dict[str, int] = {}
        for ps in net.parents.values():
            for v in ps:
                children[v] = children.get(v, 0) + 1
        summary["max_children"] = max(children.values(), default=0)
    if args.out is not None:
        import gzip

        text = net.to_bif()
        if str(args.out).endswith(".gz"):
            with gzip.open(args.out, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            args.out.write_text(text, encoding="utf-8")
        summary["bif"] = str(args.out)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(net.name)
    print(f"{summary['nodes']} nodes, {summary['edges']} edges, cardinalities "
          f"{summary['cardinalities']}, at most {summary['max_parents']} parents per node")
    if args.out is not None:
        print(f"wrote {args.out}")
    print(f"use it as: dpcg discover --dataset {net.name} ...  "
          f"(or dpcg datasets show|sample {net.name})")
    return 0


def _random_mixed(args: argparse.Namespace, lo: int, hi: int) -> int:
    """``dpcg datasets random --continuous-share F``: a generated mixed network sampled to
    a CSV, its declared schema beside it and its true DAG as JSON
    (:mod:`dpcg.datasets.mixed_network`)."""
    from dpcg.datasets.mixed_network import MixedSpec, mixed_network

    if args.out is None:
        raise DataValidationError("--continuous-share writes a sample: give --out FILE.csv")
    if args.rows < 1:
        raise DataValidationError(f"--rows must be a positive integer, got {args.rows}")
    if str(args.out).lower().endswith((".bif", ".bif.gz")):
        raise DataValidationError("--continuous-share: a mixed network has no BIF form; "
                                  "--out names the CSV sample")
    spec = MixedSpec(nodes=args.nodes, continuous_share=args.continuous_share,
                     max_parents=args.max_parents, card_lo=lo, card_hi=hi,
                     nonlinear=args.nonlinear, strength=args.strength,
                     seed=args.seed, bound=args.bound)
    net = mixed_network(spec)
    t0 = time.perf_counter()
    data = net.sample(args.rows, args.sample_seed)
    data.to_csv(args.out)
    schema_out = schema_path_for(args.out)
    data.schema.to_json(schema_out)
    truth_out = args.out.with_name(args.out.stem + ".truth.json")
    truth = {"name": net.name, "nodes": list(net.names), "continuous": list(net.continuous),
             "edges": [list(e) for e in net.dag_edges], "rows": args.rows,
             "sample_seed": args.sample_seed}
    truth_out.write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    summary = {"name": net.name, "nodes": len(net.names), "edges": len(net.dag_edges),
               "continuous": len(net.continuous), "csv": str(args.out),
               "schema": str(schema_out), "truth": str(truth_out),
               "seconds": round(time.perf_counter() - t0, 3)}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(net.name)
    print(f"{summary['nodes']} nodes ({summary['continuous']} continuous), "
          f"{summary['edges']} edges; wrote {args.rows} rows (sample seed "
          f"{args.sample_seed}) to {args.out}, the schema to {schema_out} and the true DAG "
          f"to {truth_out}")
    print(f"use it as: dpcg discover --data {args.out} --schema {schema_out} --test dg-lrt")
    return 0

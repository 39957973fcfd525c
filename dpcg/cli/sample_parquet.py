"""``dpcg datasets sample NAME --rows N --format parquet --out FILE``: a sample streamed
to Parquet in chunks (:func:`dpcg.datasets.parquet_sample.write_sample_parquet`), so a
10^8-row sample never holds 10^8 rows in memory (docs/scale.md)."""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["sample_format", "sample_parquet"]


def sample_format(args: argparse.Namespace) -> str:
    """``--format``, or ``parquet`` for an ``--out`` ending in ``.parquet``, else ``csv``."""
    fmt = getattr(args, "format", None)
    if fmt is not None:
        return str(fmt)
    return "parquet" if str(args.out).lower().endswith((".parquet", ".pq")) else "csv"


def sample_parquet(args: argparse.Namespace) -> int:
    """Stream the sample to ``args.out`` (and the schema to ``--schema-out``)."""
    from dpcg.datasets import load_network
    from dpcg.datasets.parquet_sample import write_sample_parquet

    t0 = time.perf_counter()
    written = write_sample_parquet(args.name, args.rows, args.out, seed=args.seed)
    if args.schema_out is not None:
        load_network(args.name).schema().to_json(args.schema_out)
    extra = f" and schema to {args.schema_out}" if args.schema_out is not None else ""
    print(f"sampled {written} rows of {args.name} (seed {args.seed}) to Parquet {args.out}"
          f"{extra} in {time.perf_counter() - t0:.2f} s (streamed in chunks)", file=sys.stderr)
    return 0

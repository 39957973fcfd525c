"""``dpcg bench engines``: the table engines side by side (issue 18).

alarm (37 nodes) sampled to Parquet (streamed, :mod:`dpcg.datasets.parquet_sample`) at
each row count; on each engine two workloads: Laplace-PC (``epsilon = 1``, seeded noise,
in-memory ledger) and non-private PC with the G-test (the ``cmi`` score ``n CMI = G^2/2``
against ``chi2_{1-alpha}(df)/2``, alpha 0.05). Every measurement runs in a fresh Python
process (``python -m benchmarks.engines --one ...``) so that its peak RSS
(``VmHWM``) is its own; the Spark measurement also reads the JVM's peak RSS
(``VmHWM`` of the gateway process, local mode). Reported: wall and CPU time (the numpy
engine's includes loading the Parquet file into memory; DuckDB and Spark include building
the engine, i.e. schema validation and counting ``n``), peak RSS, the engine's
scans/jobs and queries, and the growth exponent in rows (slope of log wall time against
log rows between consecutive row counts).

Sizes: 10^6 and 10^7 by default; ``--rows`` takes any list (10^8 is for a big machine,
never CI). Spark runs ``local[2]``. Results: docs/benchmarks/engines.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["measure_one", "register"]

ENGINES = ("numpy", "duckdb", "spark")
WORKLOADS = ("laplace-pc", "pc-g2")


def _peak_kib(pid: int | str) -> int | None:
    """``VmHWM`` of a process (its own peak RSS; ``ru_maxrss`` would include the parent's
    peak at fork time on Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _jvm_peak_kib(engine: Any) -> int | None:
    try:
        pid = int(engine._spark.sparkContext._gateway.proc.pid)
    except Exception:  # best effort (not local mode)
        return None
    return _peak_kib(pid)


def measure_one(engine_name: str, workload: str, parquet: str, schema_path: str,
                memory_limit: str | None = None) -> dict[str, Any]:
    """One run in this process; returns the measurements."""
    from dpcg.citests.private import ThresholdCITest, source_for_dataset
    from dpcg.data.schema import Schema
    from dpcg.engines.resolve import resolve_engine
    from dpcg.pc.engine import pc_stable
    from dpcg.private.run import discover_private

    schema = Schema.from_json(Path(schema_path))
    t0, c0 = time.perf_counter(), time.process_time()
    data = resolve_engine(parquet, engine_name, schema=schema,
                          spark_master="local[2]" if engine_name == "spark" else None,
                          memory_limit=memory_limit if engine_name == "duckdb" else None)
    load = time.perf_counter() - t0
    names = tuple(str(v) for v in data.names)
    if workload == "laplace-pc":
        res = discover_private(data, "laplace-pc", epsilon=1.0, noise_seed=0)
        edges = res.pc.cpdag.n_edges if hasattr(res.pc.cpdag, "n_edges") else None
        n_tests = res.n_tests
    else:
        src = source_for_dataset(data, "cmi", alpha=0.05)
        pcr = pc_stable(ThresholdCITest(src), names)
        edges = pcr.cpdag.n_edges if hasattr(pcr.cpdag, "n_edges") else None
        n_tests = pcr.n_tests
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    own = _peak_kib("self")
    peak = own / 1024.0 if own is not None else (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    out: dict[str, Any] = {
        "engine": engine_name, "workload": workload, "rows": int(data.n),
        "wall_s": wall, "cpu_s": cpu, "load_s": load,
        "peak_rss_mib": peak, "tests": int(n_tests), "edges": edges,
        "scans": getattr(data, "scans", None), "queries": getattr(data, "queries", None),
    }
    if engine_name == "spark":
        jvm = _jvm_peak_kib(data)
        out["jvm_peak_rss_mib"] = None if jvm is None else jvm / 1024.0
    return out


def _child(engine: str, workload: str, parquet: str, schema: str, timeout: float,
           memory_limit: str | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.engines", "--one", engine, workload, parquet,
           schema]
    if memory_limit:
        cmd += ["--memory-limit", memory_limit]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"engine": engine, "workload": workload, "error": f"timeout {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            parsed: dict[str, Any] = json.loads(line)
            return parsed
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"engine": engine, "workload": workload, "error": tail[:200]}


def _fmt(v: Any, spec: str = ".1f") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _markdown(results: list[dict[str, Any]], rows_list: list[int], cpus: int) -> str:
    lines = [
        "Engines side by side (`dpcg bench engines`): alarm sampled to Parquet, Laplace-PC "
        "(eps 1, seeded) and non-private PC with the G-test; each cell is one fresh process. "
        "numpy's time includes loading the Parquet file into memory; duckdb/spark include "
        "building the engine (schema validation, n). Spark runs local[2]. "
        f"Machine: {cpus} cores, shared with other jobs while measured (numbers are noisy).",
        "",
        "| rows | workload | engine | wall s | CPU s | load s | peak RSS MiB | JVM peak "
        "MiB | scans/jobs | queries | tests |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r.get('rows_requested', '-')} | {r['workload']} | "
                         f"{r['engine']} | {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {r['rows']:,} | {r['workload']} | {r['engine']} | {_fmt(r['wall_s'])} | "
            f"{_fmt(r['cpu_s'])} | {_fmt(r['load_s'])} | {_fmt(r['peak_rss_mib'], '.0f')} | "
            f"{_fmt(r.get('jvm_peak_rss_mib'), '.0f')} | {_fmt(r.get('scans'))} | "
            f"{_fmt(r.get('queries'))} | {r['tests']} |")
    lines += ["", "Growth exponent in rows (slope of log time vs log rows; on a loaded "
              "machine the CPU exponent is the comparable one):", ""]
    done = False
    for engine in ENGINES:
        for workload in WORKLOADS:
            pts = sorted((r["rows"], r["wall_s"], r["cpu_s"]) for r in results
                         if r.get("engine") == engine and r.get("workload") == workload
                         and "error" not in r)
            if len(pts) >= 2:
                (n0, w0, c0), (n1, w1, c1) = pts[0], pts[-1]
                k = math.log(w1 / w0) / math.log(n1 / n0)
                kc = math.log(c1 / c0) / math.log(n1 / n0)
                lines.append(f"* {engine} / {workload}: wall {k:.2f}, CPU {kc:.2f} "
                             f"({n0:,} -> {n1:,} rows)")
                done = True
    if not done:
        lines.append(f"* not measured: only one row count ({rows_list}) completed per engine")
    return "\n".join(lines) + "\n"


def _main(args: argparse.Namespace) -> int:
    from benchmarks.report import write_section
    from dpcg.datasets import load_network
    from dpcg.datasets.parquet_sample import write_sample_parquet

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    schema = work / "alarm.schema.json"
    load_network("alarm").schema().to_json(schema)
    rows_list = [int(float(v)) for v in args.rows.split(",")]
    engines = args.engines.split(",")
    results: list[dict[str, Any]] = []
    for rows in rows_list:
        pq_path = work / f"alarm-{rows}.parquet"
        if not pq_path.exists():
            write_sample_parquet("alarm", rows, pq_path, seed=1)
        for engine in engines:
            cap = {"numpy": args.numpy_max, "spark": args.spark_max}.get(engine)
            if cap is not None and rows > cap:
                results.append({"engine": engine, "workload": "*", "rows_requested": rows,
                                "error": f"not run (--{engine}-max {cap:,})"})
                continue
            for workload in WORKLOADS:
                r = _child(engine, workload, str(pq_path), str(schema), args.timeout,
                           args.memory_limit)
                r.setdefault("rows_requested", rows)
                print(json.dumps(r), file=sys.stderr, flush=True)
                results.append(r)
    md = _markdown(results, rows_list, os.cpu_count() or 1)
    if args.out:
        Path(args.out).write_text(md)
    if not args.no_docs:
        write_section("engines", md)
    print(md)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "engines", help="numpy / duckdb / spark engines on alarm Parquet (issue 18)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="1e6,1e7",
                   help="comma-separated row counts (default 1e6,1e7; 1e8 only on a big "
                        "machine, never in CI)")
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    p.add_argument("--numpy-max", type=int, default=10**7,
                   help="largest row count run on the in-memory numpy engine")
    p.add_argument("--spark-max", type=int, default=10**8,
                   help="largest row count run on the spark engine")
    p.add_argument("--memory-limit", default="2GB", help="DuckDB memory_limit")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per measurement")
    p.add_argument("--workdir", default=".bench-engines", help="where the Parquet files go")
    p.add_argument("--out", help="also write the markdown here")
    p.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks")
    p.set_defaults(func=_main)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=4, metavar=("ENGINE", "WORKLOAD", "PARQUET", "SCHEMA"))
    ap.add_argument("--memory-limit", default=None)
    ns = ap.parse_args()
    e, w, f, s = ns.one
    print(json.dumps(measure_one(e, w, f, s, ns.memory_limit)))

"""``dpcg bench ledger``: reservations per second on the SQLite and PostgreSQL ledgers.

A reservation is :meth:`open_run` (the admission check re-derives the dataset's charge
from the chain under the write lock, then appends the run-open entry, durably), followed
(untimed in the sequential part) by the run's close. Measured on a fresh ledger per
backend and dataset of lifetime eps 1e6 (never exhausted: every run closes without a
mechanism and charges nothing):

* **sequential**: one process, ``--reservations`` reservations; the rate over the first
  and the last tenth shows how the check grows with the chain (SQLite folds the whole
  chain per reservation; PostgreSQL scans the dataset's chain rows);
* **concurrent**: ``--processes`` processes, each opening its own connection and doing
  ``--reservations / processes`` reserve+close cycles at once; the rate is all
  reservations over the wall time from the common start to the last finish.

PostgreSQL: ``--postgres URL`` (an analyst role of a ledger installed with ``dpcg ledger
pg-install --analysts-register``; a fresh database is best), or ``--start-server`` for a
throwaway cluster from Debian's binaries on 127.0.0.1 (``tests/ledger/pgcluster.py``;
fsync off, like the tests: the rates are for the ledger's own work, not the disk's).

With history: ``--history-runs`` runs on a third dataset each record
``--history-entries`` Laplace entries (untimed) and close with a refund, so later
reservations re-derive the mechanism sums of every closed basic run before them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dpcg.errors import DpcgError

ROOT = Path(__file__).resolve().parents[1]

_WORKER = """
import sys, time
from accounting.costs import Budget
from accounting.ledger import open_ledger
where, ds, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
import os
led = open_ledger(where, timeout=600)
while not os.path.exists(go):
    time.sleep(0.001)
for _ in range(n):
    led.open_run(ds, Budget(1.0), "basic", seed_explicit=False).close()
led.close()
print(time.time(), flush=True)
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "ledger",
        help="reservations per second on the SQLite and PostgreSQL ledgers",
        description="Time Ledger.open_run (admission re-derived from the chain, durable "
                    "append) on a fresh SQLite file and a fresh PostgreSQL ledger, "
                    "sequentially and from concurrent processes.",
    )
    p.add_argument("--reservations", type=int, default=400,
                   help="reservations per backend and part (default 400)")
    p.add_argument("--processes", type=int, default=4,
                   help="concurrent processes (default 4)")
    p.add_argument("--history-runs", type=int, default=100,
                   help="runs of the 'with history' part (default 100)")
    p.add_argument("--history-entries", type=int, default=100,
                   help="mechanism entries recorded by each of those runs (default 100)")
    p.add_argument("--postgres", metavar="URL",
                   help="an installed PostgreSQL ledger (analyst role's URL)")
    p.add_argument("--start-server", action="store_true",
                   help="start a throwaway PostgreSQL cluster (Debian's binaries)")
    p.add_argument("--no-write", action="store_true",
                   help="print the section instead of writing docs/benchmarks/ledger.md")
    p.add_argument("--docs-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _sequential(where: str, dataset: str, n: int, entries: int = 0) -> dict[str, float]:
    from accounting.costs import Budget
    from accounting.entries import EntryDraft
    from accounting.ledger import open_ledger
    from accounting.mechanisms import Laplace
    from accounting.relations import Relation

    mech = Laplace(sensitivity=1.0, epsilon=1.0 / 1024)
    draft = EntryDraft(mech.kind, mech.public_params(), mech.sensitivity,
                       Relation.REPLACE_ONE, mech.cost(Relation.REPLACE_ONE), "bench", False)
    times = []
    with open_ledger(where, create=True) as led:
        led.ensure_dataset(dataset, Budget(1e6))
        for _ in range(n):
            t0 = time.perf_counter()
            run = led.open_run(dataset, Budget(1.0), "basic", seed_explicit=False)
            times.append(time.perf_counter() - t0)
            if entries:  # untimed: history that later reservations re-derive (refunds)
                run.record_many([draft] * entries)
            run.close()
        entries = led.entry_count()
    tenth = max(1, n // 10)
    return {"rate": n / sum(times), "first": tenth / sum(times[:tenth]),
            "last": tenth / sum(times[-tenth:]), "median_ms": 1e3 * statistics.median(times),
            "entries": float(entries)}


def _concurrent(where: str, dataset: str, n: int, processes: int) -> float:
    from accounting.costs import Budget
    from accounting.ledger import open_ledger

    with open_ledger(where, create=True) as led:
        led.ensure_dataset(dataset, Budget(1e6))
    per = max(1, n // processes)
    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / "go"
        procs = [subprocess.Popen([sys.executable, "-c", _WORKER, where, dataset, str(per),
                                   str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(processes)]
        time.sleep(2.0)  # every worker connected and waiting
        start = time.time()
        go.touch()
        ends = []
        for proc in procs:
            out, err = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                raise DpcgError(f"bench ledger: a worker failed: {err.strip()[-400:]}")
            ends.append(float(out.strip().splitlines()[-1]))
    return per * processes / (max(ends) - start)


def run(args: argparse.Namespace) -> int:
    from benchmarks.report import machine_description, write_section

    if args.reservations <= 0 or args.processes <= 0:
        raise DpcgError("--reservations and --processes must be positive")
    cluster: Any = None
    pg_url = args.postgres
    if pg_url is None and args.start_server:
        sys.path.insert(0, str(ROOT))
        from accounting.ledger.postgres import install_schema
        from tests.ledger.pgcluster import Cluster, pg_bin

        bindir = pg_bin()
        if bindir is None:
            raise DpcgError("--start-server: no PostgreSQL binaries (apt-get install postgresql)")
        cluster = Cluster(bindir)
        db = cluster.new_database()
        install_schema(cluster.url(db), analysts_register=True)
        pg_url = cluster.url(db, "dpcg_analyst")
    rows: list[tuple[str, dict[str, float], float, dict[str, float]]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = str(Path(tmp) / "bench.sqlite")
            backends = [("SQLite (WAL file)", sqlite)]
            if pg_url is not None:
                backends.append(("PostgreSQL", pg_url))
            for name, where in backends:
                seq = _sequential(where, "bench-seq", args.reservations)
                conc = _concurrent(where, "bench-conc", args.reservations, args.processes)
                hist = _sequential(where, "bench-hist", args.history_runs,
                                   args.history_entries)
                rows.append((name, seq, conc, hist))
                print(f"{name}: {seq['rate']:.0f}/s sequential (first tenth "
                      f"{seq['first']:.0f}/s, last {seq['last']:.0f}/s), {conc:.0f}/s with "
                      f"{args.processes} processes; with history last tenth "
                      f"{hist['last']:.1f}/s", file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
    cmd = (f"dpcg bench ledger --reservations {args.reservations} --processes "
           f"{args.processes} --history-runs {args.history_runs} --history-entries "
           f"{args.history_entries}" + (" --start-server" if args.start_server else "")
           + (" --postgres URL" if args.postgres else ""))
    lines = [
        "# Ledger: reservations per second (SQLite and PostgreSQL)",
        "",
        f"Generated by `{cmd}` on {machine_description()}.",
        "",
        "A reservation is `open_run`: under the backend's write lock the dataset's charge is "
        "re-derived from the hash chain (SQLite: the whole chain re-hashed and folded; "
        "PostgreSQL: the `reserve` function scans the dataset's chain rows in exact "
        "rationals), then the run-open entry is appended durably (SQLite "
        "`synchronous=FULL`; PostgreSQL commit). Sequential: one process, reservations "
        "only timed (each run is closed untimed, charging nothing), on a fresh ledger; the "
        "first and last tenth show the growth with the chain. Concurrent: "
        f"{args.processes} processes doing reserve+close cycles at once on another "
        "dataset of the same ledger (all cycles over the wall time).",
        "",
        "| backend | sequential /s | first tenth /s | last tenth /s | median ms | "
        f"entries after | concurrent ({args.processes} proc) /s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, seq, conc, _ in rows:
        lines.append(f"| {name} | {seq['rate']:.0f} | {seq['first']:.0f} | {seq['last']:.0f} "
                     f"| {seq['median_ms']:.2f} | {int(seq['entries'])} | {conc:.0f} |")
    lines += [
        "",
        f"With history: {args.history_runs} runs on a third dataset, each recording "
        f"{args.history_entries} Laplace entries (one batch, untimed) and closing with a "
        "refund, so every reservation re-derives the mechanism sums of all closed basic "
        "runs before it (what real analyses leave behind).",
        "",
        "| backend | reservations /s | first tenth /s | last tenth /s | last tenth ms each | "
        "entries after |",
        "|---|---|---|---|---|---|",
    ]
    for name, _, _, hist in rows:
        lines.append(f"| {name} | {hist['rate']:.1f} | {hist['first']:.1f} | "
                     f"{hist['last']:.1f} | {1e3 / hist['last']:.0f} | "
                     f"{int(hist['entries'])} |")
    if pg_url is None:
        lines += ["", "PostgreSQL was not measured (pass --postgres URL or --start-server)."]
    lines += ["", "The throwaway PostgreSQL server of `--start-server` runs with fsync off "
              "(as in the tests); a production server's commit waits for its WAL flush."]
    text = "\n".join(lines) + "\n"
    if args.no_write:
        print(text)
    else:
        out = write_section("ledger", text, docs_dir=args.docs_dir)
        print(f"wrote docs/benchmarks/ledger.md and {out}")
    return 0

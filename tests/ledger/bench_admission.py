"""Time full verification against the check made before every reservation.

    python -m tests.ledger.bench_admission [--runs 200] [--entries 2000] [--no-verify]
                                           [--signed] [--lifetime-rule zcdp]

Builds a ledger of ``--runs`` closed runs of ``--entries`` Laplace entries each (one
dataset, plus an output and a close per run) in a temporary directory, then times
``Ledger.verify()`` (the whole chain, every cost re-derived), the check made before a
reservation alone (``accounting/ledger/_admission.py``: the whole chain re-hashed and
folded, the tables compared) and ``open_run`` + ``close`` (which include it, and on a
``--signed`` ledger the head's signature check and two signatures). The numbers are
quoted in ``docs/ledger.md`` ("Cost of the check"). ``--lifetime-rule zcdp`` registers
the dataset with a zcdp lifetime (the fold then also re-derives every rho).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from accounting.costs import Budget
from accounting.ledger import Ledger
from accounting.ledger._admission import chain_state, check_admission_rows
from accounting.ledger.signing import generate_keypair

from .conftest import laplace_draft

DATASET = "big"


def build(path: Path, runs: int, entries: int, key: Path | None = None,
          lifetime_rule: str = "basic") -> None:
    with Ledger.open(path, create=True, signing_key=key) as led:
        led.register_dataset(DATASET, Budget(float(runs + 10),
                                             1e-5 if lifetime_rule == "zcdp" else 0.0),
                             lifetime_rule=lifetime_rule)
        draft = laplace_draft(1 / 4096, purpose="count")
        for _ in range(runs):
            run = led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
            seqs: list[int] = []
            for done in range(0, entries, 500):
                seqs = run.record_many([draft] * min(500, entries - done))
            if seqs:
                run.record_output(seqs[-1], 1.5)
            run.close()


def median_ms(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def check(led: Ledger) -> None:
    conn = led._conn
    conn.execute("BEGIN")
    try:
        state = chain_state(conn, led.path, led._genesis)
        row = conn.execute("SELECT * FROM datasets WHERE dataset_id=?", (DATASET,)).fetchone()
        check_admission_rows(conn, led.path, state, DATASET, row)
    finally:
        conn.execute("ROLLBACK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--signed", action="store_true")
    parser.add_argument("--lifetime-rule", choices=["basic", "zcdp"], default="basic")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        key = generate_keypair(Path(tmp) / "k")[0] if args.signed else None
        t = time.perf_counter()
        build(path, args.runs, args.entries, key, args.lifetime_rule)
        print(f"built {args.runs} runs x {args.entries} entries in "
              f"{time.perf_counter() - t:.1f} s ({path.stat().st_size / 1e6:.0f} MB)")
        with Ledger.open(path, signing_key=key) as led:
            print(f"entries: {led.entry_count()}")
            if not args.no_verify:
                t = time.perf_counter()
                ok = led.verify().ok
                print(f"verify: {time.perf_counter() - t:.2f} s (ok={ok})")
            print(f"check at open: {median_ms(lambda: check(led)):.1f} ms (median of 5)")

            def reserve() -> None:
                led.open_run(DATASET, Budget(0.001), "basic", seed_explicit=False).close()
            print(f"open_run + close: {median_ms(reserve):.1f} ms (median of 5)")


if __name__ == "__main__":
    main()

"""``python -m audits.mutate [--only ID ...] [--out FILE] [--no-baseline] [--list]``.

Runs every mutant of :data:`audits.mutate.MUTANTS` against a temporary copy of the
tree and prints the Markdown table (mutant, file:line, what it breaks, the check that
killed it, seconds); ``--out`` also writes it to a file. Exit status 0 only if every
mutant was killed and the baseline (all checks on the unmutated copy) passed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from audits.mutate.catalogue import MUTANTS
from audits.mutate.runner import REPO, check_anchors, run_all, table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m audits.mutate", description=__doc__)
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these mutant ids")
    p.add_argument("--out", type=Path, help="also write the Markdown table here")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip running every check on the unmutated copy first")
    p.add_argument("--list", action="store_true", help="list mutants and anchors, run nothing")
    a = p.parse_args(argv)
    mutants = MUTANTS
    if a.only:
        unknown = set(a.only) - {m.id for m in MUTANTS}
        if unknown:
            p.error(f"unknown mutant ids: {sorted(unknown)}")
        mutants = tuple(m for m in MUTANTS if m.id in a.only)
    lines = check_anchors(REPO, mutants)
    if a.list:
        for m in mutants:
            print(f"{m.id}\t{m.file}:{lines[m.id]}\t{m.breaks}\t{' -> '.join(m.checks())}")
        return 0
    t0 = time.perf_counter()
    outcomes, base_fail, base_s = run_all(
        mutants, with_baseline=not a.no_baseline,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    if base_fail:
        print("baseline FAILED (unmutated copy):\n" + "\n".join(base_fail), file=sys.stderr)
        return 1
    text = table(outcomes)
    killed = sum(o.killed for o in outcomes)
    summary = (f"{killed}/{len(outcomes)} mutants killed; baseline {base_s:.0f} s; "
               f"total {time.perf_counter() - t0:.0f} s wall clock")
    print(text)
    print(summary)
    if a.out is not None:
        a.out.write_text(text + "\n\n" + summary + "\n")
    return 0 if killed == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

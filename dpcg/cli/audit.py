"""``dpcg audit [--quick|--full] --out DIR``: run the privacy audits and write a report.

The audits live in the ``audits`` package, which sits *above* ``dpcg`` in the layering
(it imports both ``accounting`` and ``dpcg``). This command is an entry point, so it
loads ``audits`` lazily through :func:`importlib.import_module` when it runs; nothing
in ``dpcg`` depends on ``audits`` at import time.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "audit",
        help="run the privacy audits (sensitivities, empirical privacy loss, mutants)",
        description=(
            "Run the audit suite: sensitivity property tests of every registered "
            "statistic, Clopper-Pearson empirical privacy-loss bounds for every primitive "
            "and algorithm on worst-case neighbouring inputs, deliberately broken "
            "mutants that must be caught, and metamorphic checks of the accountant. "
            "Writes a Markdown report with PNG plots (plots need matplotlib)."
        ),
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="profile", const="quick",
                      help="fast profile (default; part of the test suite)")
    mode.add_argument("--full", action="store_const", dest="profile", const="full",
                      help="10^7-release profile used for docs/audit-report.md")
    mode.add_argument("--mutate", action="store_const", dest="profile", const="mutate",
                      help="mutation testing of the real code (python -m audits.mutate): "
                           "writes OUT/mutation-table.md; offline, tens of minutes")
    p.add_argument("--out", required=True, type=Path, help="directory for the report")
    p.add_argument("--seed", type=int, default=20261122, help="seed of the audit (default: "
                   "%(default)s)")
    p.add_argument("--name", default="audit-report",
                   help="report file stem (default: %(default)s)")
    p.set_defaults(func=run, profile="quick")


def run(args: argparse.Namespace) -> int:
    if args.profile == "mutate":
        args.out.mkdir(parents=True, exist_ok=True)
        mutate = importlib.import_module("audits.mutate.__main__")
        return int(mutate.main(["--out", str(args.out / "mutation-table.md")]))
    suite = importlib.import_module("audits.suite")
    report = importlib.import_module("audits.report")
    profile = suite.full_profile() if args.profile == "full" else suite.quick_profile()
    start = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    result = suite.run_suite(profile, seed=args.seed, progress=progress)
    path = report.write_report(result, args.out, args.name)
    bad = [r for r in result.rows if not r.ok]
    print(f"audit report: {path} ({'PASS' if not bad else 'FAIL'}, {len(result.rows)} checks, "
          f"{result.seconds:.0f} s)", file=sys.stderr)
    for r in bad:
        what = "mutant not flagged" if r.expect_flag else "check failed"
        print(f"  {what}: {r.section} / {r.name}: {r.detail}", file=sys.stderr)
    return 0 if not bad else 1

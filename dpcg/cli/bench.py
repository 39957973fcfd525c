"""``dpcg bench SUITE``: reproducible speed and utility benchmarks.

Each suite is a module ``dpcg.bench.<suite>`` exposing ``register(subparsers)``, which
adds the suite's parser (with a ``func`` default, like the top-level subcommands).
Suites write their results with :func:`dpcg.bench.report.write_section`, which
regenerates ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import sys

from dpcg.bench import SUITES, continuous, engines, pc, private, process, real, scale, utility

__all__ = ["SUITES", "register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="run a benchmark suite and write its section of docs/benchmarks.md",
        description="Reproducible benchmarks; each suite writes docs/benchmarks/<suite>.md "
                    "and regenerates docs/benchmarks.md.",
    )
    sub = parser.add_subparsers(dest="suite", metavar="SUITE")
    for suite in (pc, process, private, continuous, utility, engines, real, scale):  # SUITES order
        suite.register(sub)

    def no_suite(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=no_suite)

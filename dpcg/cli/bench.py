"""``dpcg bench SUITE``: reproducible speed and utility benchmarks.

The suites live in the top-level ``benchmarks/`` package of the source checkout, outside
the installed ``dpcg`` package (they import causal-learn and write into ``docs/``): each
is a module ``benchmarks.<suite>`` exposing ``register(subparsers)``, which adds the
suite's parser (with a ``func`` default, like the top-level subcommands). Suites write
their pages with :func:`benchmarks.report.write_section`, which rebuilds the index
``docs/benchmarks.md``. From an installed wheel (no checkout beside it) ``dpcg bench``
says where to get them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from dpcg.errors import DpcgError

__all__ = ["checkout", "register"]


def checkout() -> Path | None:
    """The source checkout holding ``benchmarks/`` beside the ``dpcg`` package, if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "benchmarks" / "__init__.py").is_file() else None


def _suites() -> tuple[str, ...]:
    root = checkout()
    if root is None:
        raise DpcgError("dpcg bench: the benchmark suites live in benchmarks/ of the dpcg "
                        "source checkout, not in the installed package; run it from a "
                        "checkout (`bash .ci/setup --dev`)")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    suites: tuple[str, ...] = importlib.import_module("benchmarks").SUITES
    return suites


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="run a benchmark suite and write its page under docs/benchmarks/",
        description="Reproducible benchmarks (the benchmarks/ package of the source "
                    "checkout); each suite writes docs/benchmarks/<suite>.md and rebuilds "
                    "the index docs/benchmarks.md.",
    )
    sub = parser.add_subparsers(dest="suite", metavar="SUITE")
    try:
        names = _suites()
    except DpcgError as exc:
        message = str(exc)

        def unavailable(args: argparse.Namespace) -> int:
            print(message, file=sys.stderr)
            return 2

        parser.set_defaults(func=unavailable)
        return
    for name in names:  # SUITES order
        importlib.import_module(f"benchmarks.{name}").register(sub)

    def no_suite(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=no_suite)

"""The ``dpcg`` command line.

Each subcommand lives in its own module ``dpcg.cli.<name>`` exposing
``register(subparsers)``, which adds a parser whose ``func`` default is the handler
``(argparse.Namespace) -> int``. Handlers return the process exit code; errors of the
project's own types are printed as one line and give exit code 2. The argparse
namespace stays in this package: handlers turn it into typed values (the private
algorithms' ``Params``, the tests' options) before calling below the CLI.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from accounting.errors import AccountingError
from dpcg import __version__
from dpcg.cli import audit, bench, datasets, discover, ledger, plot, report, schema
from dpcg.errors import DpcgError

#: Subcommand modules, in the order they appear in ``dpcg --help``.
SUBCOMMANDS = (discover, datasets, ledger, audit, bench, schema, plot, report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpcg",
        description="Differentially private causal graph discovery with an auditable ledger.",
    )
    parser.add_argument("--version", action="version", version=f"dpcg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = func(args)
        sys.stdout.flush()
    except (DpcgError, AccountingError) as exc:
        print(f"dpcg {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

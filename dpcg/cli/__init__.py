"""The ``dpcg`` command line.

Each subcommand lives in its own module ``dpcg.cli.<name>`` exposing
``register(subparsers)``, which adds a parser whose ``func`` default is the handler
``(argparse.Namespace) -> int`` (or whose ``handler`` default names it as
``"module:function"``, imported only when the command runs). Handlers return the
process exit code; errors of the project's own types are printed as one line and give
exit code 2. The argparse namespace stays in this package: handlers turn it into typed
values (the private algorithms' ``Params``, the tests' options) before calling below the
CLI.

The CLI answers at once: :data:`SUBCOMMANDS` names each subcommand's module and one-line
help, and only the module of the subcommand being run is imported (``dpcg --help``
imports none; ``dpcg discover`` imports the light parser module
:mod:`dpcg.cli.discover_args`, and the run :mod:`dpcg.cli.discover` only when it runs).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from dpcg import __version__
from dpcg.errors import DpcgError

#: Subcommands in the order of ``dpcg --help``: (name, module with ``register``, help).
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("discover", "dpcg.cli.discover_args", "learn a causal graph (CPDAG) from data"),
    ("datasets", "dpcg.cli.datasets", "list, show and sample the bundled benchmark networks"),
    ("ledger", "dpcg.cli.ledger", "create, show, verify and export privacy ledgers"),
    ("audit", "dpcg.cli.audit",
     "run the privacy audits (sensitivities, empirical privacy loss, mutants)"),
    ("bench", "dpcg.cli.bench", "run a benchmark suite and write its section of "
                                "docs/benchmarks.md"),
    ("schema", "dpcg.cli.schema", "draft a schema from a data file (for the data owner to "
                                  "review)"),
    ("advise", "dpcg.cli.advise", "predict the private algorithms' skeleton F1 from public "
                                  "facts (no data read, nothing charged)"),
    ("plot", "dpcg.cli.plot", "draw the CPDAG of a result.json (SVG or PNG)"),
    ("report", "dpcg.cli.report",
     "write a self-contained HTML report of a run (graph, guarantee, ledger)"),
)

EPILOG = """\
start here:
  dpcg discover --dataset asia --out result.json        non-private PC on a bundled network
  dpcg schema draft table.csv --out schema.json         draft a schema for your own CSV
  dpcg discover --data table.csv --schema schema.json   learn its graph
  dpcg plot result.json --out graph.svg                 draw it
`dpcg COMMAND --help` explains each command."""


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (its first non-option word), if any."""
    names = {name for name, _, _ in SUBCOMMANDS}
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in names else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. With ``argv``, only the subcommand it names is fully built (the others
    get their one-line help), so nothing heavy is imported for another command; without,
    every subcommand is built."""
    parser = argparse.ArgumentParser(
        prog="dpcg",
        description="Differentially private causal graph discovery with an auditable ledger.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dpcg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else _chosen(argv)
    help_only = argv is not None and ("-h" in argv or "--help" in argv)
    for name, module_name, help_text in SUBCOMMANDS:
        if argv is not None and name != chosen:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        if module_name == "dpcg.cli.discover_args":
            module.register(sub, help_only=help_only, argv=argv)
        else:
            module.register(sub)
    return parser


def _is_project_error(exc: BaseException) -> bool:
    if isinstance(exc, DpcgError):
        return True
    if "accounting.errors" not in sys.modules:  # nothing of accounting ran
        return False
    from accounting.errors import AccountingError

    return isinstance(exc, AccountingError)


def handler_of(args: argparse.Namespace) -> Callable[[argparse.Namespace], int] | None:
    """The handler of the parsed command: its ``func``, or the ``"module:function"`` its
    ``handler`` names (imported only now); ``None`` when no command was given."""
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    handler = getattr(args, "handler", None)
    if func is None and isinstance(handler, str):  # "module:function", imported lazily
        module_name, _, name = handler.partition(":")
        func = getattr(importlib.import_module(module_name), name)
    return func


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(args_list)
    except DpcgError as exc:  # a plugin declares a clashing option
        print(f"dpcg: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(args_list)
    func = handler_of(args)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:
        if not _is_project_error(exc):
            raise
        print(f"dpcg {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""``dpcg plot`` and ``dpcg ledger plot``: pictures of a result's CPDAG and a ledger's spending.

Examples::

    dpcg plot result.json --out graph.svg          # or graph.png
    dpcg ledger plot runs.db --out spend.png

``dpcg plot`` draws the CPDAG of a ``dpcg discover`` result; for a bundled network it
compares with the true CPDAG (missing / extra / reversed edges in distinct styles).
``dpcg ledger plot`` verifies the ledger first and refuses one that does not verify.
Both need the optional extra ``plot`` (matplotlib). See ``docs/guide.md`` ("Pictures").
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plot",
        help="draw the CPDAG of a result.json (SVG or PNG)",
        description="Draw the CPDAG of a `dpcg discover` result. For a bundled network the "
                    "edges are compared with the true CPDAG.",
    )
    p.add_argument("result", type=Path, metavar="RESULT.json", help="written by dpcg discover")
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="picture to write: .svg or .png")
    p.add_argument("--no-truth", action="store_true",
                   help="do not compare with the true graph of a bundled network")
    p.add_argument("--title", metavar="TEXT", help="title (default: algorithm and data)")
    p.set_defaults(func=_plot)


def register_ledger_plot(ledger_subparsers: Any) -> None:
    """Add ``plot`` to ``dpcg ledger``'s actions (called from :mod:`dpcg.cli.ledger`)."""
    p = ledger_subparsers.add_parser(
        "plot", help="plot a verified ledger's spending per dataset over time",
        description="Verify a ledger, then plot each dataset's reserved epsilon over time "
                    "against its lifetime.")
    p.add_argument("path", type=Path, metavar="LEDGER", help="ledger file (SQLite)")
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="picture to write: .png or .svg")
    p.set_defaults(func=_ledger_plot)


def _plot(args: argparse.Namespace) -> int:
    from dpcg.viz.graph import write_picture
    from dpcg.viz.result import load_result

    result = load_result(args.result)
    truth = None if args.no_truth else result.truth()
    title = args.title if args.title is not None else result.title()
    write_picture(result.cpdag, args.out, truth, title=title)
    compared = " (compared with the true CPDAG)" if truth is not None else ""
    print(f"wrote {args.out}{compared}")
    return 0


def _ledger_plot(args: argparse.Namespace) -> int:
    from dpcg.viz.spending import plot_spending

    plot_spending(args.path, args.out)
    print(f"ledger {args.path} verifies; wrote {args.out}")
    return 0

"""``dpcg report``: one self-contained HTML page about a run, for a privacy reviewer.

Example::

    dpcg report result.json --ledger runs.db --out report.html

The page shows the graph (inline SVG), the guarantee, the plan, every ledger entry of
the run, the ledger's verification status and links to the proof notes; it loads no
external resource and needs no script. See ``docs/guide.md`` ("Pictures and reports").
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a run (graph, guarantee, ledger)",
        description="Write one self-contained HTML page about a `dpcg discover` run: the "
                    "graph, the guarantee, the plan, the run's ledger entries, the ledger's "
                    "verification status and links to the proof notes.",
    )
    p.add_argument("result", type=Path, metavar="RESULT.json", help="written by dpcg discover")
    p.add_argument("--ledger", type=Path, metavar="FILE",
                   help="the run's ledger (default: the path recorded in the result)")
    p.add_argument("--out", type=Path, required=True, metavar="report.html",
                   help="HTML file to write")
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from dpcg.viz.report import write_report

    write_report(args.result, args.out, args.ledger)
    print(f"wrote {args.out}")
    return 0

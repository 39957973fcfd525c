"""``dpcg schema draft``: draft a schema from a data file for the data owner to review.

Example::

    dpcg schema draft survey.csv --out survey.schema.json

The draft lists the categories and bounds seen in the data, so it is *not* public: the
file carries a ``"_draft"`` header (and the terminal a warning) saying it must be
reviewed and declared by the data owner; ``dpcg`` refuses to load it until the
``"_draft"`` field is deleted. Nothing printed names a row or a count. Columns with
blank/NA cells get a drafted missing policy for the owner to review; ``--bins K``
declares every continuous column cut into K equal-width bins of its declared bounds.
See ``docs/guide.md`` ("Drafting a schema").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dpcg.errors import DpcgError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="draft a schema from a data file (for the data owner to review)",
        description="Schema tools. `dpcg schema draft FILE` drafts a schema from a data file.",
    )
    sub = parser.add_subparsers(dest="schema_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: _usage(parser))
    p = sub.add_parser(
        "draft",
        help="draft a schema from a CSV/TSV/Parquet file (owner-only: review before use)",
        description="Draft a schema from a data file. The draft is computed from the data: "
                    "review it, widen bounds and categories to what the domain allows, then "
                    'delete its "_draft" field to declare it.',
    )
    p.add_argument("file", type=Path, metavar="FILE", help="data file (.csv, .tsv, .parquet)")
    p.add_argument("--out", type=Path, metavar="SCHEMA.json",
                   help="write the draft here (default: print it to stdout)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--ordinal", action="append", default=[], metavar="COLUMN",
                   help="draft this column as ordinal (repeatable); check the drafted order")
    p.add_argument("--max-categories", type=int, default=30, metavar="K",
                   help="text columns with more distinct values are left TODO (default 30)")
    p.add_argument("--max-integer-levels", type=int, default=10, metavar="K",
                   help="integer columns with at most K distinct values are drafted as "
                        "categorical, others as continuous (default 10)")
    p.add_argument("--bins", type=int, default=None, metavar="K",
                   help="declare every continuous column cut into K equal-width bins of its "
                        "declared bounds (edges from the bounds at load time, never from "
                        "data quantiles)")
    p.add_argument("--min-count", type=int, default=5, metavar="K",
                   help="name the columns with a category seen fewer than K times "
                        "(default 5)")
    p.set_defaults(func=_draft)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _draft(args: argparse.Namespace) -> int:
    from dpcg.data.draft import draft_schema

    if args.out is not None and args.out.exists() and not args.force:
        raise DpcgError(f"{args.out} exists; choose another --out or pass --force "
                        "(a reviewed schema would be overwritten by a fresh draft)")
    draft = draft_schema(args.file, ordinal=args.ordinal, max_categories=args.max_categories,
                         max_integer_levels=args.max_integer_levels, min_count=args.min_count,
                         bins=args.bins)
    text = draft.to_json()
    if args.out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise DpcgError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    for line in draft.terminal_lines():
        print(line, file=sys.stderr)
    if args.out is not None:
        print(f"  wrote the draft to {args.out}", file=sys.stderr)
    return 0

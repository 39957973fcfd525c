"""Shared helpers of the hardening tests (issue 19): CLI runs captured in-process and the
row counts of a ledger."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpcg.cli import main
from dpcg.datasets.sem import random_sem

#: The six private algorithms of the registry (a test-only algorithm is not released).
PRIVATE = ("curate", "em-pc", "laplace-pc", "marginal-pc", "priv-pc", "private-ci-pc",
           "svt-pc")


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    capsys.readouterr()
    code = main(argv)
    got = capsys.readouterr()
    return Outcome(code, got.out, got.err)


def continuous_table(tmp: Path) -> tuple[Path, Path]:
    """A 4-variable continuous CSV and its schema (declared bounds)."""
    tmp.mkdir(parents=True, exist_ok=True)
    data, schema = tmp / "sem4.csv", tmp / "sem4.schema.json"
    if not data.exists():
        ds = random_sem(4, seed=7).sample(300, 0)
        ds.to_csv(data)
        schema.write_text(ds.schema.to_json())
    return data, schema


def source_args(name: str, tmp: Path) -> list[str]:
    if name == "private-ci-pc":
        data, schema = continuous_table(tmp / "shared")
        return ["--data", str(data), "--schema", str(schema), "--dataset-id", "sem4"]
    return ["--dataset", "asia", "--rows", "2000"]


def row_counts(path: Path) -> dict[str, int]:
    """Rows of ``entries``, ``runs`` and ``datasets`` (all 0 when there is no file)."""
    if not path.exists():
        return {"entries": 0, "runs": 0, "datasets": 0}
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: int(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("entries", "runs", "datasets")}
    finally:
        con.close()


def raw(argv: list[str]) -> int:
    """Run a subcommand's handler without ``main``'s error printing (to see the type)."""
    from dpcg.cli import build_parser, handler_of

    args = build_parser(argv).parse_args(argv)
    func = handler_of(args)
    assert func is not None, argv
    return int(func(args))

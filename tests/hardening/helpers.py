"""Shared helpers of the hardening tests (issue 19): CLI runs captured in-process and the
row counts of a ledger."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpcg.cli import main
from dpcg.datasets.sem import random_sem


def _released_algorithms() -> tuple[str, ...]:
    """Every private algorithm of the registry that ships in dpcg (a test-only toy
    algorithm registered by another test is not released): the registry drives the
    hardening tests, so a new algorithm is covered with no edit here."""
    from dpcg.private.registry import algorithms

    return tuple(name for name, a in algorithms().items()
                 if type(a).__module__.startswith("dpcg."))


PRIVATE = _released_algorithms()


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


def mixed_table(tmp: Path) -> tuple[Path, Path]:
    """A mixed CSV (two continuous columns, one ordinal) and its schema."""
    import json

    import numpy as np

    tmp.mkdir(parents=True, exist_ok=True)
    data, schema = tmp / "mixed3.csv", tmp / "mixed3.schema.json"
    if not data.exists():
        rng = np.random.default_rng(3)
        z = rng.integers(0, 3, 400)
        x = np.clip(0.5 * (z - 1) + 0.4 * rng.standard_normal(400), -3, 3)
        y = np.clip(0.8 * x + 0.4 * rng.standard_normal(400), -3, 3)
        data.write_text("x,y,z\n" + "".join(f"{a:.6f},{b:.6f},{c}\n"
                                              for a, b, c in zip(x, y, z, strict=True)))
        schema.write_text(json.dumps({"columns": [
            {"name": "x", "type": "continuous", "lower": -3, "upper": 3},
            {"name": "y", "type": "continuous", "lower": -3, "upper": 3},
            {"name": "z", "type": "ordinal", "order": ["0", "1", "2"]}]}))
    return data, schema


def source_args(name: str, tmp: Path) -> list[str]:
    """The data a private algorithm of the registry runs on (by the data its default
    test takes)."""
    from audits.algorithms import data_kind

    kind = data_kind(name)
    if kind == "continuous":
        data, schema = continuous_table(tmp / "shared")
        return ["--data", str(data), "--schema", str(schema), "--dataset-id", "sem4"]
    if kind == "mixed":
        data, schema = mixed_table(tmp / "shared")
        return ["--data", str(data), "--schema", str(schema), "--dataset-id", "mixed3"]
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

"""Bad continuous and mixed input through ``dpcg discover`` (issues 54 and 56): NaN
without a policy, inf, out-of-bounds without --clip, a drop_rows policy in a private run,
a one-row file, a header that differs from the schema. Each is the project's error
naming the column and the rule (never a value, a row or a count) and nothing is charged:
the ledger's rows are unchanged. A schema with missing policies and bins runs private
end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpcg.data import Categorical, Continuous, Dataset, Schema, refuse_degenerate
from dpcg.data.checks import degenerate_columns
from dpcg.errors import DataValidationError
from tests.cli.refusals import refused_cli, used_ledger
from tests.hardening.helpers import cli, row_counts

VALUES = ["0.8125", "1.4375", "-2.6875"]  # distinctive values that must never be quoted


def table(tmp: Path, rows: list[str], header: str = "g,x,y") -> Path:
    path = tmp / "t.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def schema_file(tmp: Path, schema: Schema) -> Path:
    path = tmp / "s.json"
    path.write_text(schema.to_json())
    return path


PLAIN = Schema([Categorical("g", ["a", "b"]), Continuous("x", -3, 3), Continuous("y", -3, 3)])


def good_rows(n: int = 40) -> list[str]:
    rng = np.random.default_rng(3)
    g = rng.choice(["a", "b"], n)
    x = np.round(rng.uniform(-2, 2, n), 3)
    y = np.round(x / 2 + rng.uniform(-0.5, 0.5, n), 3)
    return [f"{a},{b!r},{c!r}" for a, b, c in zip(g, x.tolist(), y.tolist(), strict=True)]


def private(data: Path, schema: Path, led: Path) -> list[str]:
    return ["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
            "laplace-pc", "--epsilon", "1", "--dataset-id", "asia", "--quiet",
            "--ledger", str(led)]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("a,,0.8125", "'x': a value is missing"),
        ("a,NaN,0.8125", "'x': a value is missing"),
        ("a,inf,1.4375", "'x': a value is infinite"),
        ("a,-inf,1.4375", "'x': a value is infinite"),
        ("b,1.4375,7.5", "'y': a value is outside the declared bounds"),
        ("b,abc,0.8125", "'x': a value is not a number"),
    ],
)
def test_bad_continuous_values_charge_nothing(bad: str, fragment: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    rows = good_rows()
    rows[7] = bad
    data = table(tmp_path, rows)
    refused_cli(private(data, schema_file(tmp_path, PLAIN), led), led, DataValidationError,
                capsys, fragment=fragment, absent=[*VALUES, "7.5", "abc", "row", "line 9"])


def test_drop_rows_is_refused_in_a_private_run(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    s = Schema([Categorical("g", ["a", "b"]),
                Continuous("x", -3, 3, missing={"policy": "drop_rows"}),
                Continuous("y", -3, 3)])
    refused_cli(private(table(tmp_path, good_rows()), schema_file(tmp_path, s), led), led,
                DataValidationError, capsys, fragment="drop_rows")


def test_one_row_and_header_mismatch(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    s = schema_file(tmp_path, PLAIN)
    refused_cli(private(table(tmp_path, good_rows()[:1]), s, led), led, DataValidationError,
                capsys, fragment="fewer than 2 rows")
    err = refused_cli(private(table(tmp_path, good_rows(), header="g,X,y_cm"), s, led), led,
                      DataValidationError, capsys, fragment="header does not match")
    assert "['x', 'y'] are missing" in err
    assert "['X', 'y_cm']" in err
    assert "'x' for 'X'" in err


def test_policies_and_bins_run_private_end_to_end(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Blanks imputed (with an indicator) and continuous columns binned from their
    declared bounds: the loaded table is all-discrete and a private discrete algorithm
    runs on it; n is the file's row count (public)."""
    s = Schema([
        Categorical("g", ["a", "b"], missing={"policy": "category"}),
        Continuous("x", -3, 3, bins=3, missing={"policy": "impute", "value": 0,
                                                "indicator": "x_na"}),
        Continuous("y", -3, 3, bins=3, missing={"policy": "category"}),
    ], missing_tokens=["", "NA"])
    rows = good_rows(400)
    for i in range(0, 400, 17):
        rows[i] = ",".join("" if k == i % 3 else cell for k, cell in
                           enumerate(rows[i].split(",")))
    data = table(tmp_path, rows)
    led = tmp_path / "fresh.sqlite"
    out = tmp_path / "r.json"
    got = cli([*private(data, schema_file(tmp_path, s), led), "--lifetime-epsilon", "5",
               "--out", str(out), "--noise-seed", "1"], capsys)
    assert got.code == 0, got.err
    result = json.loads(out.read_text())
    assert result["data"]["rows"] == 400
    assert row_counts(led)["runs"] == 1


def test_degenerate_columns_are_named_for_non_private_runs() -> None:
    n = 12
    s = Schema([Categorical("id", [str(k) for k in range(20)]), Categorical("c", ["u", "v"]),
                Continuous("k", 0, 100), Continuous("row", 0, 100), Continuous("z", 0, 1)])
    rng = np.random.default_rng(0)
    arr = np.empty((n, 5), dtype=object)
    arr[:, 0] = [str(k) for k in range(n)]
    arr[:, 1] = "u"
    arr[:, 2] = 42.0
    arr[:, 3] = rng.permutation(np.arange(5, 5 + n)).astype(float)
    arr[:, 4] = rng.uniform(0, 1, n)
    data = Dataset.from_numpy(arr, s)
    assert degenerate_columns(data) == [("id", "identifier"), ("c", "constant"),
                                        ("k", "constant"), ("row", "row_number")]
    with pytest.raises(DataValidationError) as info:
        refuse_degenerate(data)
    text = str(info.value)
    for name in ("'id'", "'c'", "'k'", "'row'"):
        assert name in text
    assert "'z'" not in text
    assert "42" not in text
    assert "non-private" in text
    assert degenerate_columns(data.select(["z"])) == []
    assert degenerate_columns(data.select(["id"]).subset_rows(np.arange(9))) == []


def test_policies_and_bins_give_the_same_run_on_every_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same seeded private run on the in-memory table and on DuckDB reading the raw
    CSV (blanks, tokens, bins translated to SQL): the same graph and the same tests."""
    pytest.importorskip("duckdb")
    s = Schema([
        Categorical("g", ["a", "b"], missing={"policy": "category"}),
        Continuous("x", -3, 3, bins=3, missing={"policy": "impute", "value": 0,
                                                "indicator": "x_na"}),
        Continuous("y", -3, 3, bins=4, missing={"policy": "category", "tokens": ["?"]}),
    ], missing_tokens=["", "NA"])
    rows = good_rows(300)
    for i in range(0, 300, 13):
        cells = rows[i].split(",")
        cells[i % 3] = "?" if i % 3 == 2 else ("NA" if i % 2 else "")
        rows[i] = ",".join(cells)
    data = table(tmp_path, rows)
    results = {}
    for engine in ("numpy", "duckdb"):
        out = tmp_path / f"{engine}.json"
        got = cli(["discover", "--data", str(data), "--schema",
                   str(schema_file(tmp_path, s)), "--algorithm", "laplace-pc", "--epsilon",
                   "2", "--no-ledger", "--quiet", "--noise-seed", "4", "--include-tests",
                   "--engine", engine, "--out", str(out)], capsys)
        assert got.code == 0, got.err
        results[engine] = json.loads(out.read_text())
    assert results["duckdb"]["edges"] == results["numpy"]["edges"]
    assert results["duckdb"]["tests"] == results["numpy"]["tests"]
    assert results["numpy"]["tests"]

"""Pre-flight, then charge (issue 19 item 2: "engine reachable"; issue 18): every engine
error that is knowable without spending fails before the run is reserved. For each error
class -- an unreachable Spark master, a missing DuckDB table (or database file), a Parquet
glob that matches nothing, an invalid ``--memory-limit`` -- exit status 2, the project's
exception type, a message naming the problem, and no new row in ``entries``, ``runs`` or
``datasets`` of a ledger that already holds a run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dpcg.errors import DataValidationError, DpcgError, StatisticInputError
from tests.hardening.helpers import cli, raw, row_counts

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

PRIVATE = ["--algorithm", "laplace-pc", "--epsilon", "1", "--noise-seed", "1", "--max-depth",
           "1", "--quiet", "--dataset-id", "lake"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A Parquet sample, its schema, a DuckDB database holding it, and a ledger that
    already records one run on it."""
    import duckdb

    from dpcg.cli import main

    base = tmp_path_factory.mktemp("preflight-lake")
    pq_path, schema = base / "asia.parquet", base / "asia.schema.json"
    assert main(["datasets", "sample", "asia", "--rows", "2000", "--seed", "3", "--format",
                 "parquet", "--out", str(pq_path), "--schema-out", str(schema)]) == 0
    db = base / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE events AS SELECT * FROM read_parquet('{pq_path}')")
    con.close()
    ledger = base / "ledger.sqlite"
    assert main(["discover", "--data", str(pq_path), "--schema", str(schema), "--engine",
                 "duckdb", "--ledger", str(ledger), *PRIVATE]) == 0
    assert row_counts(ledger)["runs"] == 1
    return {"parquet": pq_path, "schema": schema, "db": db, "ledger": ledger, "base": base}


def _refused(argv: list[str], ledger: Path, error: type[Exception], fragments: list[str],
             capsys: pytest.CaptureFixture[str]) -> str:
    before = row_counts(ledger)
    got = cli(argv, capsys)
    assert got.code == 2, got.err
    assert got.err.startswith("dpcg discover: error: "), got.err
    for fragment in fragments:
        assert fragment in got.err, (fragment, got.err)
    with pytest.raises(error):
        raw(argv)
    assert issubclass(error, DpcgError)
    assert row_counts(ledger) == before
    return got.err


def _argv(lake: dict[str, Path], data: str, *extra: str) -> list[str]:
    return ["discover", "--data", data, "--schema", str(lake["schema"]), "--ledger",
            str(lake["ledger"]), *PRIVATE, *extra]


def test_unreachable_spark_master(lake: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.setenv("DPCG_SPARK_CONNECT_TIMEOUT", "2")
    url = "spark://127.0.0.1:1"
    t0 = time.monotonic()
    err = _refused(_argv(lake, str(lake["parquet"]), "--engine", "spark", "--spark-master",
                         url), lake["ledger"], DataValidationError,
                   [url, "unreachable"], capsys)
    assert "nothing was run or charged" in err
    assert time.monotonic() - t0 < 30  # no JVM was started, no retry loop


def test_unreachable_spark_master_nonprivate(lake: dict[str, Path],
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.setenv("DPCG_SPARK_CONNECT_TIMEOUT", "2")
    got = cli(["discover", "--data", str(lake["parquet"]), "--schema", str(lake["schema"]),
               "--algorithm", "pc", "--engine", "spark", "--spark-master",
               "spark://127.0.0.1:1", "--quiet"], capsys)
    assert got.code == 2
    assert "unreachable" in got.err


def test_missing_duckdb_table(lake: dict[str, Path], capsys: pytest.CaptureFixture[str]
                              ) -> None:
    _refused(_argv(lake, str(lake["db"]), "--engine", "duckdb", "--duckdb-table", "nope"),
             lake["ledger"], DataValidationError, ["nope", "no such table"], capsys)
    _refused(_argv(lake, f"{lake['db']}:nope"), lake["ledger"], DataValidationError,
             ["nope", "no such table"], capsys)


def test_missing_duckdb_database(lake: dict[str, Path], capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    missing = lake["base"] / "absent.duckdb"
    _refused(_argv(lake, f"{missing}:events"), lake["ledger"], DataValidationError,
             [str(missing), "no such DuckDB database"], capsys)
    assert not missing.exists()  # not created by the attempt


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_missing_parquet_glob(lake: dict[str, Path], capsys: pytest.CaptureFixture[str],
                              engine: str) -> None:
    if engine == "spark":
        pytest.importorskip("pyspark")
    glob = str(lake["base"] / "nothere" / "*.parquet")
    _refused(_argv(lake, glob, "--engine", engine), lake["ledger"], DataValidationError,
             [glob], capsys)


@pytest.mark.parametrize("limit", ["banana", "2XB"])
def test_invalid_memory_limit(lake: dict[str, Path], capsys: pytest.CaptureFixture[str],
                              limit: str) -> None:
    _refused(_argv(lake, str(lake["parquet"]), "--engine", "duckdb", "--memory-limit", limit),
             lake["ledger"], StatisticInputError, ["memory_limit", limit], capsys)


def test_the_ledger_still_verifies(lake: dict[str, Path], capsys: pytest.CaptureFixture[str]
                                   ) -> None:
    assert cli(["ledger", "verify", str(lake["ledger"])], capsys).code == 0
    assert json.loads(lake["schema"].read_text())["columns"]

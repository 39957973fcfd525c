"""``dpcg.discover(..., engine=...)``: the Python API on the table engines (issue 18 item 4).

A Parquet glob with ``engine="duckdb"``, a DuckDB relation (of the default connection or
of a given one), a DuckDB connection with ``table=``, a DuckDB database file and a Spark
DataFrame give the numpy engine's graph, the same result document (apart from the data
description) and the same ledger policy; bad data are refused by the engine's schema
validation with the project's error (column and rule named, no value, row or count),
nothing charged, no ledger row."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpcg
from accounting.ledger import Ledger
from dpcg.data import Categorical, Dataset, Schema
from dpcg.errors import AlgorithmError, CITestError, DataValidationError, MissingDependencyError

duckdb = pytest.importorskip("duckdb")

SCHEMA = Schema([Categorical("a", ["x", "w"]), Categorical("b", ["y", "v", "u"]),
                 Categorical("c", ["p", "q"]), Categorical("d", ["k", "l"])])
LABELS = [["x", "w"], ["y", "v", "u"], ["p", "q"], ["k", "l"]]


def _codes(n: int = 3000, seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)  # synthetic test data, not privacy noise
    codes = np.empty((4, n), dtype=np.int64)
    codes[0] = rng.integers(0, 2, n)
    codes[1] = np.where(rng.random(n) < 0.7, codes[0], rng.integers(0, 3, n))
    codes[2] = np.where(rng.random(n) < 0.7, codes[1] % 2, rng.integers(0, 2, n))
    codes[3] = rng.integers(0, 2, n)
    return codes


CODES = _codes()


def _frame(codes: np.ndarray = CODES) -> pa.Table:
    return pa.table({name: pa.array(np.asarray(LABELS[j])[codes[j]])
                     for j, name in enumerate(SCHEMA.names)})


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two Parquet files (the lake) and a DuckDB database holding the same rows."""
    base = tmp_path_factory.mktemp("lake")
    table = _frame()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), base / "part-0.parquet")
    pq.write_table(table.slice(half), base / "part-1.parquet")
    con = duckdb.connect(str(base / "wh.duckdb"))
    con.register("t", table)
    con.execute("CREATE TABLE events AS SELECT * FROM t")
    con.close()
    return base


def _dataset() -> Dataset:
    return Dataset.from_codes(CODES.astype(np.uint8), SCHEMA)


def _same_graph(a: dpcg.DiscoveryResult, b: dpcg.DiscoveryResult) -> None:
    ja, jb = a.to_json(), b.to_json()
    assert ja["edges"] == jb["edges"]
    assert ja["tests"]["count"] == jb["tests"]["count"]
    assert a.pc.sepsets == b.pc.sepsets


def _rows(path: Path) -> dict[str, int]:
    if not path.exists():
        return {"entries": 0, "runs": 0, "datasets": 0}
    con = sqlite3.connect(path)
    try:
        return {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
                for t in ("entries", "runs", "datasets")}
    finally:
        con.close()


def test_nonprivate_pc_on_duckdb_sources_equals_numpy(lake: Path) -> None:
    ref = dpcg.discover(_dataset(), test="g2")
    con = duckdb.connect(str(lake / "wh.duckdb"), read_only=True)
    try:
        runs = {
            "glob": dpcg.discover(str(lake / "*.parquet"), schema=SCHEMA, test="g2"),
            "glob-explicit": dpcg.discover(str(lake / "*.parquet"), engine="duckdb",
                                           schema=SCHEMA.to_dict(), memory_limit="1GB"),
            "relation": dpcg.discover(duckdb.sql(f"SELECT * FROM '{lake}/*.parquet'"),
                                      schema=SCHEMA),
            "relation-of-con": dpcg.discover(con.sql("SELECT * FROM events"), engine=con,
                                             schema=SCHEMA),
            "connection+table": dpcg.discover(con, table="events", schema=SCHEMA),
            "file+table": dpcg.discover(str(lake / "wh.duckdb"), table="events",
                                        schema=SCHEMA),
            "file:table": dpcg.discover(f"{lake}/wh.duckdb:events", schema=SCHEMA),
        }
    finally:
        con.close()
    for tag, res in runs.items():
        _same_graph(ref, res)
        assert res.document["data"]["engine"] == "duckdb", tag
        assert res.document["data"]["rows"] == CODES.shape[1]
        assert res.guarantee is None
        assert res.ledger is None
    assert runs["relation"].document["data"]["source"] == "duckdb-relation"
    assert runs["connection+table"].document["data"]["table"] == "events"
    # the score tests run on the engine too (batched exact threshold rule)
    _same_graph(dpcg.discover(_dataset(), test="cmi"),
                dpcg.discover(str(lake / "*.parquet"), schema=SCHEMA, test="cmi"))


def test_private_run_on_duckdb_same_result_and_ledger_policy(lake: Path, tmp_path: Path
                                                             ) -> None:
    kw: dict[str, Any] = dict(algorithm="laplace-pc", epsilon=1.0, noise_seed=3,
                              dataset_id="lake", max_depth=2)
    ref = dpcg.discover(_dataset(), ledger=tmp_path / "np.sqlite", **kw)
    led = tmp_path / "dd.sqlite"
    got = dpcg.discover(str(lake / "*.parquet"), schema=SCHEMA, ledger=led, **kw)
    _same_graph(ref, got)
    assert got.guarantee == ref.guarantee
    assert got.ledger is not None
    assert got.ledger["path"] == str(led)
    for key in ("privacy", "spent"):
        assert got.to_json().get(key) == ref.to_json().get(key)
    assert Ledger.open(led).verify().ok
    con = sqlite3.connect(led)
    try:
        (desc,) = con.execute("SELECT description FROM runs").fetchone()
    finally:
        con.close()
    assert str(desc).endswith("engine=duckdb")
    # in-memory ledger: nothing durable
    mem = dpcg.discover(duckdb.sql(f"SELECT * FROM '{lake}/*.parquet'"), schema=SCHEMA,
                        ledger=dpcg.NO_LEDGER, **{k: v for k, v in kw.items()
                                                  if k != "dataset_id"})
    _same_graph(ref, mem)
    assert mem.ledger is None


@pytest.mark.parametrize(("sql", "rule"), [
    ("SELECT * REPLACE (CASE WHEN rowid = 2500 THEN 'zz' ELSE b END AS b) FROM t",
     "category"),
    ("SELECT * REPLACE (CASE WHEN rowid = 2500 THEN NULL ELSE b END AS b) FROM t", "NULL"),
    ("SELECT * REPLACE ([rowid] AS b) FROM t", "type"),
    ("SELECT * EXCLUDE (b) FROM t", "missing"),
])
def test_bad_data_refused_uncharged(tmp_path: Path, sql: str, rule: str) -> None:
    con = duckdb.connect()
    con.register("src", _frame())
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    led = tmp_path / "l.sqlite"
    dpcg.discover(_dataset(), algorithm="laplace-pc", epsilon=0.5, noise_seed=1, ledger=led,
                  dataset_id="lake", max_depth=0)
    before = _rows(led)
    with pytest.raises(DataValidationError) as err:
        dpcg.discover(con.sql(sql), engine=con, schema=SCHEMA, algorithm="laplace-pc",
                      epsilon=1.0, ledger=led, dataset_id="lake")
    msg = str(err.value)
    assert "'b'" in msg, msg
    assert rule.lower() in msg.lower(), msg
    assert "zz" not in msg
    assert "2500" not in msg
    assert "3000" not in msg
    assert _rows(led) == before
    with pytest.raises(DataValidationError):  # non-private runs validate the same way
        dpcg.discover(con.sql(sql), engine=con, schema=SCHEMA)


def test_api_engine_errors_are_the_projects(lake: Path, tmp_path: Path) -> None:
    glob = str(lake / "*.parquet")
    with pytest.raises(dpcg.errors.SchemaError, match="schema"):
        dpcg.discover(glob, engine="duckdb")
    with pytest.raises(AlgorithmError, match="table"):
        dpcg.discover(duckdb.connect(), schema=SCHEMA)
    with pytest.raises(AlgorithmError, match="clip"):
        dpcg.discover(glob, schema=SCHEMA, clip=True)
    with pytest.raises(AlgorithmError, match="numpy"):
        dpcg.discover(glob, engine="numpy", schema=SCHEMA, memory_limit="1GB")
    with pytest.raises(CITestError, match="in memory"):
        dpcg.discover(glob, schema=SCHEMA, test="kendall")
    with pytest.raises(dpcg.errors.StatisticInputError, match="memory_limit"):
        dpcg.discover(glob, schema=SCHEMA, memory_limit="lots")
    with pytest.raises(DataValidationError, match="no Parquet file"):
        dpcg.discover(str(tmp_path / "none" / "*.parquet"), schema=SCHEMA)
    with pytest.raises(DataValidationError, match="no such table"):
        dpcg.discover(str(lake / "wh.duckdb"), table="nope", schema=SCHEMA)
    other = duckdb.connect()
    with pytest.raises(dpcg.errors.StatisticInputError, match="connection"):
        dpcg.discover(other.sql("SELECT 1 AS a"), schema=SCHEMA)


def test_missing_duckdb_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, lake: Path) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # as if the extra were not installed
    with pytest.raises(MissingDependencyError, match=r"dpcg\[duckdb\]"):
        dpcg.discover(str(lake / "*.parquet"), schema=SCHEMA)


def test_spark_dataframe_equals_numpy(local_spark_session: Any, tmp_path: Path) -> None:
    spark = local_spark_session
    df = spark.createDataFrame(_frame()).coalesce(1)
    ref = dpcg.discover(_dataset(), test="g2")
    got = dpcg.discover(df, schema=SCHEMA, test="g2")
    _same_graph(ref, got)
    assert got.document["data"] == {"source": "spark-dataframe", "rows": CODES.shape[1],
                                    "engine": "spark"}
    kw: dict[str, Any] = dict(algorithm="laplace-pc", epsilon=1.0, noise_seed=3,
                              dataset_id="lake", max_depth=1)
    led = tmp_path / "sp.sqlite"
    priv = dpcg.discover(df, schema=SCHEMA, ledger=led, **kw)
    _same_graph(dpcg.discover(_dataset(), ledger=tmp_path / "np.sqlite", **kw), priv)
    before = _rows(led)
    bad = spark.createDataFrame(_frame()).selectExpr(
        "a", "CASE WHEN d = 'l' AND c = 'q' THEN 'zz' ELSE b END AS b", "c", "d")
    with pytest.raises(DataValidationError) as err:
        dpcg.discover(bad, schema=SCHEMA, ledger=led, **kw)
    assert "'b'" in str(err.value)
    assert "zz" not in str(err.value)
    assert _rows(led) == before

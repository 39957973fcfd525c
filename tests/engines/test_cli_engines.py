"""``dpcg discover --engine`` and ``dpcg datasets sample --format parquet`` end to end
(DuckDB; the Spark engine's equality is tests/private/test_engine_equality.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dpcg.cli import main
from dpcg.engines.resolve import default_engine_name

pytest.importorskip("duckdb")


def _discover(tmp: Path, data: str, schema: Path, engine: str, tag: str,
              ledger: Path | None = None) -> dict[str, object]:
    out = tmp / f"{tag}.json"
    led = ["--no-ledger"] if ledger is None else ["--ledger", str(ledger), "--dataset-id",
                                                  "lake"]
    code = main(["discover", "--data", data, "--schema", str(schema), "--engine", engine,
                 "--algorithm", "laplace-pc", "--epsilon", "1", "--noise-seed", "3",
                 "--quiet", "--out", str(out), *led])
    assert code == 0
    doc: dict[str, object] = json.loads(out.read_text())
    return doc


def test_parquet_sample_and_discover_on_duckdb_equal_numpy(tmp_path: Path) -> None:
    pq_path = tmp_path / "asia.parquet"
    schema = tmp_path / "asia.schema.json"
    assert main(["datasets", "sample", "asia", "--rows", "5000", "--seed", "2", "--format",
                 "parquet", "--out", str(pq_path), "--schema-out", str(schema)]) == 0
    assert pq.ParquetFile(pq_path).metadata.num_rows == 5000
    a = _discover(tmp_path, str(pq_path), schema, "numpy", "np")
    b = _discover(tmp_path, str(pq_path), schema, "duckdb", "dd")
    assert b["data"]["engine"] == "duckdb"  # type: ignore[index]
    for key in ("edges", "spent", "privacy", "n_tests"):
        if key in a:
            assert a[key] == b[key]


def test_bad_value_on_duckdb_is_refused_before_any_budget(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b\n" + "x,y\n" * 50 + "x,zzz\n")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"columns": [
        {"name": "a", "type": "categorical", "categories": ["x", "w"]},
        {"name": "b", "type": "categorical", "categories": ["y", "v"]}]}))
    ledger = tmp_path / "l.sqlite"
    code = main(["discover", "--data", str(csv), "--schema", str(schema), "--engine",
                 "duckdb", "--algorithm", "laplace-pc", "--epsilon", "1", "--quiet",
                 "--ledger", str(ledger), "--dataset-id", "lake"])
    assert code == 2
    err = capsys.readouterr().err
    assert "column 'b'" in err
    assert "category" in err
    assert "zzz" not in err
    if ledger.exists():
        con = sqlite3.connect(ledger)
        try:
            assert con.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
        finally:
            con.close()


def test_default_engine_is_a_public_decision(tmp_path: Path) -> None:
    assert default_engine_name("lake/*.parquet") == "duckdb"
    assert default_engine_name("wh.duckdb:events") == "duckdb"
    small = tmp_path / "t.csv"
    small.write_text("a\n1\n")
    assert default_engine_name(small) == "numpy"
    assert default_engine_name(small, ram_share=1e-12) == "duckdb"


def test_nonprivate_pc_on_duckdb_equals_numpy(tmp_path: Path) -> None:
    """``dpcg discover --algorithm pc --test g2 --engine duckdb --data 'x/*.parquet'``: the
    numpy engine's graph, sepsets and test count (one engine call per PC round)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    schema = tmp_path / "asia.schema.json"
    assert main(["datasets", "sample", "asia", "--rows", "4000", "--seed", "5", "--format",
                 "parquet", "--out", str(lake / "part-0.parquet"), "--schema-out",
                 str(schema)]) == 0
    docs = {}
    for engine, data in (("numpy", str(lake / "part-0.parquet")),
                         ("duckdb", str(lake / "*.parquet"))):
        for test in ("g2", "chi2", "cmi"):
            out = tmp_path / f"{engine}-{test}.json"
            assert main(["discover", "--data", data, "--schema", str(schema), "--algorithm",
                         "pc", "--test", test, "--engine", engine, "--quiet",
                         "--include-tests", "--out", str(out)]) == 0
            docs[engine, test] = json.loads(out.read_text())
    for test in ("g2", "chi2", "cmi"):
        a, b = docs["numpy", test], docs["duckdb", test]
        assert b["data"]["engine"] == "duckdb"
        assert a["privacy"] is None
        assert b["privacy"] is None
        for key in ("edges", "sepsets"):
            assert a[key] == b[key], (test, key)
        assert a["tests"]["count"] == b["tests"]["count"]
        assert sorted(map(json.dumps, a["tests"]["records"])) == sorted(
            map(json.dumps, b["tests"]["records"]))


def test_nonprivate_pc_on_an_engine_refuses_a_row_test(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq_path = tmp_path / "asia.parquet"
    schema = tmp_path / "asia.schema.json"
    assert main(["datasets", "sample", "asia", "--rows", "500", "--format", "parquet",
                 "--out", str(pq_path), "--schema-out", str(schema)]) == 0
    capsys.readouterr()
    code = main(["discover", "--data", str(pq_path), "--schema", str(schema), "--algorithm",
                 "pc", "--test", "spearman", "--engine", "duckdb", "--quiet"])
    assert code == 2
    assert "--test spearman reads the rows in memory" in capsys.readouterr().err

"""The SQL engines read missing tokens, missing policies, bins and integer-valued floats
exactly as the in-memory loaders do: the same contingency tables of the loaded schema,
from a CSV file (text columns) and from Parquet (typed columns with nulls and NaN)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpcg.data import Categorical, Continuous, Dataset, Ordinal, Schema  # noqa: E402
from dpcg.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from dpcg.errors import DataValidationError  # noqa: E402
from dpcg.stats.contingency import contingency_table  # noqa: E402

N = 600


def schema() -> Schema:
    return Schema([
        Categorical("colour", ["red", "green", "blue"],
                    missing={"policy": "category", "label": "none"}),
        Categorical("flag", [0, 1], missing={"policy": "impute", "value": "0",
                                             "indicator": "flag_na"}),
        Ordinal("size", ["S", "M", "L"], missing={"policy": "category", "tokens": ["?"]}),
        Continuous("bmi", 10, 60, bins=4, missing={"policy": "category"}),
        Continuous("age", 0, 100, bins=3, missing={"policy": "impute", "value": 50,
                                                   "indicator": "age_na",
                                                   "tokens": ["-999", ""]}),
    ], missing_tokens=["", "NA"])


def raw_table(seed: int) -> dict[str, list[Any]]:
    """Python values with None for a null: text labels, 0/1 as floats, numbers."""
    rng = np.random.default_rng(seed)
    miss = rng.random((5, N)) < 0.15
    colour = rng.choice(["red", "green", "blue"], N).tolist()
    flag = rng.integers(0, 2, N).astype(float).tolist()
    size = rng.choice(["S", "M", "L"], N).tolist()
    bmi = np.round(rng.uniform(10, 60, N), 1)
    bmi[:4] = [10.0, 22.5, 47.5, 60.0]  # on the edges
    age = np.round(rng.uniform(0, 100, N), 2)
    cols: dict[str, list[Any]] = {"colour": colour, "flag": flag, "size": size,
                                  "bmi": bmi.tolist(), "age": age.tolist()}
    for k, name in enumerate(cols):
        for i in np.flatnonzero(miss[k]).tolist():
            cols[name][i] = None
    return cols


def write_csv(path: Path, cols: dict[str, list[Any]]) -> None:
    tokens = {"colour": ["", "NA"], "flag": ["", "NA"], "size": ["?"], "bmi": ["", "NA"],
              "age": ["-999", ""]}
    lines = [",".join(cols)]
    for i in range(N):
        cells = []
        for name, values in cols.items():
            v = values[i]
            if v is None:
                cells.append(tokens[name][i % len(tokens[name])])
            else:
                cells.append(repr(v) if isinstance(v, float) else str(v))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def write_parquet(path: Path, cols: dict[str, list[Any]]) -> None:
    arrays = {
        "colour": pa.array(cols["colour"], type=pa.string()),
        "flag": pa.array(cols["flag"], type=pa.float64()),
        "size": pa.array(["?" if v is None else v for v in cols["size"]], type=pa.string()),
        # a NaN (not a null) in a float column is missing too
        "bmi": pa.array([float("nan") if v is None else v for v in cols["bmi"]],
                        type=pa.float64()),
        "age": pa.array([-999.0 if (v is None and i % 2) else v
                         for i, v in enumerate(cols["age"])], type=pa.float64()),
    }
    pq.write_table(pa.table(arrays), path)


def queries(p: int) -> list[tuple[int, int, tuple[int, ...]]]:
    out: list[tuple[int, int, tuple[int, ...]]] = []
    for x, y in itertools.combinations(range(p), 2):
        out.append((x, y, ()))
        rest = [k for k in range(p) if k not in (x, y)]
        if rest:
            out.append((x, y, (rest[0],)))
        if len(rest) > 1:
            out.append((x, y, tuple(rest[:2])))
    return out


def assert_engine_matches(engine: Any, data: Dataset) -> None:
    assert engine.schema == data.schema
    assert engine.n == data.n
    cards = list(data.cardinalities)
    qs = queries(data.p)
    for q, got in zip(qs, engine.tables(qs), strict=True):
        ref = contingency_table(data.codes, cards, *q)
        assert np.array_equal(got.counts, ref.counts), q


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duckdb_reads_missing_values_like_memory(tmp_path: Path, fmt: str) -> None:
    cols = raw_table(7)
    path = tmp_path / f"t.{fmt}"
    (write_csv if fmt == "csv" else write_parquet)(path, cols)
    data = Dataset.from_csv(path, schema()) if fmt == "csv" else \
        Dataset.from_parquet(path, schema())
    assert data.is_discrete
    assert data.names == ("colour", "flag", "flag_na", "size", "bmi", "age", "age_na")
    engine = DuckDBEngine.from_csv(path, schema()) if fmt == "csv" else \
        DuckDBEngine.from_parquet(str(path), schema())
    assert_engine_matches(engine, data)
    assert_engine_matches(engine.subset(np.arange(0, N, 3)), data.subset_rows(
        np.arange(0, N, 3)))


def test_duckdb_reads_integer_valued_float_text(tmp_path: Path) -> None:
    s = Schema([Categorical("flag", [0, 1]), Ordinal("level", ["1", "2", "10"])])
    path = tmp_path / "t.csv"
    path.write_text("flag,level\n1.0,10.00\n0.0,2\n1,1.0\n0,1\n")
    data = Dataset.from_csv(path, s)
    assert_engine_matches(DuckDBEngine.from_csv(path, s), data)
    bad = tmp_path / "bad.csv"
    bad.write_text("flag,level\n1.5,1\n0,1\n")
    with pytest.raises(DataValidationError, match=r"'flag'.*'category'"):
        DuckDBEngine.from_csv(bad, s)


def test_duckdb_refusals_name_column_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,0.5\n,0.25\nx,\n")
    plain = Schema([Categorical("a", ["x"]), Continuous("b", 0, 1)])
    with pytest.raises(DataValidationError) as info:
        DuckDBEngine.from_csv(path, plain)
    text = str(info.value)
    assert "'b'" in text
    assert "'null'" in text or "'type'" in text
    dropping = Schema([Categorical("a", ["x"], missing={"policy": "drop_rows"}),
                       Continuous("b", 0, 1, missing={"policy": "impute", "value": 0})])
    with pytest.raises(DataValidationError, match=r"\['a'\].*drop_rows.*never delete rows"):
        DuckDBEngine.from_csv(path, dropping)
    inf = tmp_path / "inf.csv"
    inf.write_text("a,b\nx,inf\nx,0.5\n")
    accepting = Schema([Categorical("a", ["x"]),
                        Continuous("b", 0, 1, missing={"policy": "impute", "value": 0})])
    with pytest.raises(DataValidationError, match=r"'b'.*'non_finite'"):
        DuckDBEngine.from_csv(inf, accepting)
    with pytest.raises(DataValidationError, match=r"'b'.*infinite"):
        Dataset.from_csv(inf, accepting)


@pytest.mark.slow
def test_spark_reads_missing_values_like_memory(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from dpcg.engines.spark_engine import SparkEngine
    from dpcg.engines.specs import local_spark
    from tests.engines.spark_cluster import java_home

    home = java_home()
    if home is None:  # pragma: no cover - CI has Java 17
        pytest.skip("Spark needs Java 17")
    os.environ.setdefault("JAVA_HOME", home)
    cols = raw_table(11)
    path = tmp_path / "t.parquet"
    write_parquet(path, cols)
    data = Dataset.from_parquet(path, schema())
    engine = SparkEngine.from_parquet(local_spark(), str(path), schema())
    assert_engine_matches(engine, data)
    csv = tmp_path / "t.csv"
    write_csv(csv, cols)
    text = local_spark().read.csv(str(csv), header=True, inferSchema=False,
                                  nullValue="\u0000", emptyValue="")
    frame = SparkEngine.from_dataframe(text, schema())
    assert_engine_matches(frame, Dataset.from_csv(csv, schema()))

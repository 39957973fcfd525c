"""Declared missing tokens, per-column missing policies, bins and integer-valued floats:
the same loaded data from CSV, NumPy, pandas and Parquet; errors that name the column
and the rule only; the row-wise property the proof note rests on
(docs/privacy/missing-values.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcg.data import (
    MIN_ROWS,
    Categorical,
    Continuous,
    Dataset,
    Ordinal,
    Schema,
    load_table,
    require_public_n,
)
from dpcg.data.readers import unsafe_debug_errors
from dpcg.data.schema import bin_edges
from dpcg.errors import DataValidationError, SchemaError

SCHEMA_DICT: dict[str, Any] = {
    "missing_tokens": ["", "NA"],
    "columns": [
        {"name": "smoker", "type": "categorical", "categories": ["0", "1"],
         "missing": {"policy": "category", "label": "unknown"}},
        {"name": "age", "type": "continuous", "lower": 0, "upper": 120,
         "missing": {"policy": "impute", "value": 40, "indicator": "age_missing"}},
        {"name": "bmi", "type": "continuous", "lower": 10, "upper": 60, "bins": 5,
         "missing": {"policy": "category"}},
        {"name": "stage", "type": "ordinal", "order": ["I", "II", "III"],
         "missing": {"policy": "impute", "value": "II", "tokens": ["?"]}},
    ],
}

CSV = "smoker,age,bmi,stage\n1.0,,22,I\n0,33,NA,?\n,50,60,III\nNA,120,10,II\n"

EXPECTED = {
    "smoker": [1, 0, 2, 2],
    "age": [40.0, 33.0, 50.0, 120.0],
    "age_missing": [1, 0, 0, 0],
    "bmi": [1, 5, 4, 0],
    "stage": [0, 1, 2, 1],
}


def schema() -> Schema:
    return Schema.from_dict(SCHEMA_DICT)


def check(data: Dataset) -> None:
    assert data.names == ("smoker", "age", "age_missing", "bmi", "stage")
    for name, want in EXPECTED.items():
        np.testing.assert_array_equal(data.column(name), want, err_msg=name)
    assert data.n_public


# -- schema -----------------------------------------------------------------------------


def test_json_round_trip_and_loaded_schema() -> None:
    s = schema()
    assert Schema.from_json(s.to_json()) == s
    written = json.loads(s.to_json())
    assert written["missing_tokens"] == ["", "NA"]
    assert written["columns"][1]["missing"] == {"policy": "impute", "value": 40,
                                                "indicator": "age_missing"}
    assert written["columns"][2]["bins"] == 5
    assert written["columns"][2]["missing"] == {"policy": "category", "label": "(missing)"}
    loaded = s.loaded()
    assert loaded.names == ("smoker", "age", "age_missing", "bmi", "stage")
    assert loaded["smoker"] == Categorical("smoker", ["0", "1", "unknown"])
    assert loaded["age_missing"] == Categorical("age_missing", ["0", "1"])
    assert loaded["bmi"] == Ordinal("bmi", ["[10, 20)", "[20, 30)", "[30, 40)", "[40, 50)",
                                            "[50, 60]", "(missing)"])
    assert loaded["stage"] == Ordinal("stage", ["I", "II", "III"])
    assert not loaded.has_transforms
    assert s.has_transforms


def test_a_schema_without_the_new_fields_is_unchanged() -> None:
    plain = Schema([Categorical("a", ["x"]), Continuous("b", 0, 1)])
    assert plain.loaded() is plain
    assert not plain.has_transforms
    assert plain.to_dict() == {"columns": [
        {"name": "a", "type": "categorical", "categories": ["x"]},
        {"name": "b", "type": "continuous", "lower": 0.0, "upper": 1.0}]}


def test_bin_edges_come_from_the_declared_bounds() -> None:
    assert bin_edges(0.0, 10.0, 4) == (0.0, 2.5, 5.0, 7.5, 10.0)
    col = Continuous("x", -1, 1, bins=2)
    assert col.edges == (-1.0, 0.0, 1.0)
    data = Dataset.from_numpy(np.array([[-1.0], [-1e-9], [0.0], [0.5], [1.0]]),
                              Schema([col]))
    np.testing.assert_array_equal(data.column("x"), [0, 0, 1, 1, 1])


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "sometimes"}}, "unknown missing policy"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "category", "label": "x"}}, "already a declared label"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "impute", "value": "y"}}, "not a declared label"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "impute"}}, "needs a public \"value\""),
        ({"name": "a", "type": "categorical", "categories": ["x", "NA"],
          "missing": {"policy": "category", "tokens": ["NA"]}}, "also declared labels"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "category", "indicator": "b"}}, "indicator"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "category", "typo": 1}}, "unknown key(s) ['typo']"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "category", "tokens": []}}, "must not be empty"),
        ({"name": "a", "type": "categorical", "categories": ["x"],
          "missing": {"policy": "category", "tokens": [None]}}, "must be strings"),
        ({"name": "a", "type": "continuous", "lower": 0, "upper": 1,
          "missing": {"policy": "category"}}, "needs a discrete column"),
        ({"name": "a", "type": "continuous", "lower": 0, "upper": 1,
          "missing": {"policy": "impute", "value": 2}}, "within the declared bounds"),
        ({"name": "a", "type": "continuous", "lower": 0, "upper": 1,
          "missing": {"policy": "impute", "value": "0.5"}}, "within the declared bounds"),
        ({"name": "a", "type": "continuous", "lower": -1000, "upper": 1,
          "missing": {"policy": "impute", "value": 0, "tokens": ["-999"]}},
         "sentinel outside the bounds"),
        ({"name": "a", "type": "continuous", "lower": 0, "upper": 1, "bins": 1}, "bins"),
        ({"name": "a", "type": "continuous", "lower": 0, "upper": 1, "bins": True}, "bins"),
        ({"name": "a", "type": "continuous", "lower": 1e15, "upper": 1e15 + 1, "bins": 60000},
         "float spacing"),
    ],
)
def test_bad_declarations(spec: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SchemaError, match="'a'") as info:
        Schema.from_dict({"columns": [spec]})
    assert fragment in str(info.value)


def test_indicator_name_clash_and_schema_wide_sentinel() -> None:
    with pytest.raises(SchemaError, match=r"\['b'\]"):
        Schema([Continuous("a", 0, 1, missing={"policy": "impute", "value": 0,
                                               "indicator": "b"}),
                Categorical("b", ["x"])])
    with pytest.raises(SchemaError, match=r"'a'.*within the declared bounds"):
        Schema([Continuous("a", -10, 10)], missing_tokens=["-9"])
    with pytest.raises(SchemaError, match="unknown top-level"):
        Schema.from_dict({"columns": [{"name": "a", "type": "categorical",
                                       "categories": ["x"]}], "missing": [""]})


def test_schema_wide_token_yields_to_a_declared_label() -> None:
    s = Schema([Categorical("region", ["NA", "EU"], missing={"policy": "category"}),
                Categorical("b", ["x"], missing={"policy": "category"})],
               missing_tokens=["NA", ""])
    data = Dataset.from_numpy(np.array([["NA", "NA"], ["", "x"], ["EU", ""]]), s)
    np.testing.assert_array_equal(data.column("region"), [0, 2, 1])
    np.testing.assert_array_equal(data.column("b"), [1, 0, 1])


# -- the same loaded data from every source ------------------------------------------------


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(CSV)
    check(Dataset.from_csv(path, schema()))
    check(load_table(path, schema()))


def test_numpy_object_array() -> None:
    table = np.array([[1.0, None, 22, "I"], ["0", 33, np.nan, "?"], [None, 50.0, 60, "III"],
                      ["NA", 120, 10, "II"]], dtype=object)
    check(Dataset.from_numpy(table, schema()))


def test_pandas_nan_none_and_pd_na(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "smoker": [1.0, 0.0, np.nan, np.nan],          # a 0/1 column after a NaN: floats
        "age": [np.nan, 33, 50, 120],
        "bmi": [22, None, 60, 10],
        "stage": ["I", "?", "III", "II"],
    })
    check(Dataset.from_pandas(frame, schema()))
    frame["smoker"] = pd.array([1, 0, None, pd.NA], dtype="Int64")
    frame["stage"] = pd.array(["I", "?", "III", "II"], dtype="string")
    check(Dataset.from_pandas(frame, schema()))
    path = tmp_path / "t.parquet"
    pytest.importorskip("pyarrow")
    frame.to_parquet(path)
    check(Dataset.from_parquet(path, schema()))
    check(load_table(path, schema()))


def test_integer_valued_floats_match_integer_labels(tmp_path: Path) -> None:
    s = Schema([Categorical("flag", [0, 1]), Ordinal("level", ["1", "2", "10"])])
    path = tmp_path / "t.csv"
    path.write_text("flag,level\n1.0,10.00\n0.0,2\n1,1.0\n")
    data = Dataset.from_csv(path, s)
    np.testing.assert_array_equal(data.column("flag"), [1, 0, 1])
    np.testing.assert_array_equal(data.column("level"), [2, 1, 0])
    floats = Dataset.from_numpy(np.array([[1.0, 10.0], [0.0, 2.0], [1.0, 1.0]]), s)
    np.testing.assert_array_equal(floats.codes, data.codes)
    objects = Dataset.from_numpy(np.array([[1.0, "10.0"], [0, 2], ["1", 1.0]], dtype=object), s)
    np.testing.assert_array_equal(objects.codes, data.codes)


@pytest.mark.parametrize("cell", ["1.5", "01.0", "+1.0", "1e0", "1.", "-0.0"])
def test_non_integer_or_non_canonical_floats_are_refused(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"flag\n0\n{cell}\n")
    with pytest.raises(DataValidationError, match=r"'flag'.*not one of the declared"):
        Dataset.from_csv(path, Schema([Categorical("flag", [0, 1])]))
    with pytest.raises(DataValidationError, match=r"'flag'.*not one of the declared"):
        Dataset.from_numpy(np.array([[0.0], [1.5]]), Schema([Categorical("flag", [0, 1])]))


def test_numeric_sentinel_matches_text_and_numbers(tmp_path: Path) -> None:
    s = Schema([Continuous("x", 0, 10, missing={"policy": "impute", "value": 5,
                                                "tokens": ["-999", ""]})])
    path = tmp_path / "t.csv"
    path.write_text("x\n1\n-999\n-999.0\n\n2.5\n")
    want = [1.0, 5.0, 5.0, 5.0, 2.5]
    np.testing.assert_array_equal(Dataset.from_csv(path, s).column("x"), want)
    np.testing.assert_array_equal(
        Dataset.from_numpy(np.array([[1], [-999], [-999.0], [np.nan], [2.5]]), s).column("x"),
        want)


# -- refusals: name the column and the rule, never a value, a row or a count -----------


def test_refuse_names_column_and_rule_only(tmp_path: Path) -> None:
    s = Schema([Categorical("a", ["x", "y"]),
                Continuous("b", 0, 1, missing={"policy": "refuse", "tokens": ["?"]})])
    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,0.5\ny,?\nx,0.25\n")
    with unsafe_debug_errors(False), pytest.raises(DataValidationError) as info:
        Dataset.from_csv(path, s)
    text = str(info.value)
    assert "'b'" in text
    assert "missing" in text
    assert "'?'" not in text
    assert "row" not in text
    assert "line" not in text
    path.write_text("a,b\nx,0.5\n,0.5\nx,0.25\n")
    with unsafe_debug_errors(False), pytest.raises(DataValidationError, match=r"'a'.*missing"):
        Dataset.from_csv(path, s)


def test_a_token_outside_the_declared_tokens_is_not_missing(tmp_path: Path) -> None:
    s = Schema([Categorical("a", ["x"], missing={"policy": "category", "tokens": ["?"]})])
    path = tmp_path / "t.csv"
    path.write_text("a\nx\n?\nNA\n")
    with pytest.raises(DataValidationError, match=r"'a'.*missing"):
        Dataset.from_csv(path, s)


def test_drop_rows_needs_explicit_permission_decided_from_the_schema(tmp_path: Path) -> None:
    s = Schema([Categorical("a", ["x", "y"]),
                Continuous("b", 0, 1, missing={"policy": "drop_rows"})])
    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,0.5\ny,\nx,0.25\ny,NA\n")
    clean = tmp_path / "clean.csv"
    clean.write_text("a,b\nx,0.5\ny,0.75\n")
    for target in (path, clean):  # refused whether or not a value is missing
        with pytest.raises(DataValidationError) as info:
            Dataset.from_csv(target, s)
        assert "'b'" in str(info.value)
        assert "drop_rows" in str(info.value)
        assert "n depend on the data" in str(info.value)
    data = Dataset.from_csv(path, s, allow_row_deletion=True)
    assert data.n == 2
    assert not data.n_public
    np.testing.assert_array_equal(data.labels("a"), ["x", "x"])
    assert not data.select(["a"]).n_public
    assert not data.subset_rows([0]).n_public
    with pytest.raises(DataValidationError, match="public n"):
        require_public_n(data)
    require_public_n(Dataset.from_csv(clean, Schema([Categorical("a", ["x", "y"]),
                                                     Continuous("b", 0, 1)])))
    only = tmp_path / "only.csv"
    only.write_text("a,b\nx,\ny,0.5\n")
    with pytest.raises(DataValidationError, match=f"fewer than {MIN_ROWS} rows remain"):
        Dataset.from_csv(only, s, allow_row_deletion=True)


def test_from_codes_refuses_a_schema_with_transforms() -> None:
    s = Schema([Categorical("a", ["x"], missing={"policy": "category"})])
    with pytest.raises(DataValidationError, match="loaded"):
        Dataset.from_codes(np.zeros((1, 3), dtype=np.int64), s)
    data = Dataset.from_codes(np.array([[0, 1, 1]]), s.loaded())
    np.testing.assert_array_equal(data.labels("a"), ["x", "(missing)", "(missing)"])
    imputing = Schema([Categorical("a", ["x", "y"], missing={"policy": "impute", "value": "x"})])
    assert Dataset.from_codes(np.array([[0, 1]]), imputing).schema == imputing.loaded()


# -- row-wise: neighbouring raw tables load to neighbouring tables of the same n -------


CELLS = st.sampled_from(["x", "y", "", "NA", "1.0", "1"])
NUMBERS = st.sampled_from(["0", "0.5", "1", "", "NA", "-9"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(CELLS, NUMBERS, NUMBERS), min_size=2, max_size=12),
    swap=st.tuples(CELLS, NUMBERS, NUMBERS),
    where=st.integers(0, 11),
)
def test_loading_is_row_wise(rows: list[tuple[str, str, str]], swap: tuple[str, str, str],
                             where: int) -> None:
    """Replacing one raw row changes at most that row of the loaded table and never n:
    the lemma of docs/privacy/missing-values.md, on every accepting policy but drop_rows."""
    s = Schema([
        Categorical("a", ["x", "y", "1"], missing={"policy": "category"}),
        Continuous("b", 0, 1, missing={"policy": "impute", "value": 0.5, "indicator": "b_na",
                                       "tokens": ["", "NA", "-9"]}),
        Continuous("c", 0, 1, bins=3, missing={"policy": "category",
                                               "tokens": ["", "NA", "-9"]}),
    ])
    where %= len(rows)
    other = [*rows]
    other[where] = swap

    def load(table: list[tuple[str, str, str]]) -> Dataset:
        return Dataset.from_columns([[r[k] for r in table] for k in range(3)], s)

    d, e = load(rows), load(other)
    assert d.n == e.n == len(rows)
    assert d.schema == e.schema == s.loaded()
    keep = np.arange(len(rows)) != where
    for j in range(d.p):
        np.testing.assert_array_equal(d.column(j)[keep], e.column(j)[keep])
    # and the array path reads the same cells the same way
    arr = Dataset.from_numpy(np.array(rows, dtype=object), s)
    for j in range(d.p):
        np.testing.assert_array_equal(arr.column(j), d.column(j))


def test_issue_54_dataframe_after_dropna_and_with_blanks() -> None:
    """A 0/1 column that held a NaN arrives as floats: accepted by a declared integer
    schema (private run); a DataFrame with NaN runs non-private PC on the inferred schema
    (the draft proposes a missing category, and writes "1.0" as "1")."""
    pd = pytest.importorskip("pandas")
    import dpcg
    from dpcg.data.draft import draft_from_columns

    rng = np.random.default_rng(0)
    n = 2000
    a = rng.integers(0, 3, n)
    b = np.clip(a + (rng.random(n) < 0.2), 0, 2)
    frame = pd.DataFrame({"a": a.astype(float), "b": b})
    frame.loc[::50, "a"] = np.nan
    inferred = dpcg.discover(frame, test="g2")
    assert sorted(inferred.graph.edges) == [("a", "b"), ("b", "a")]
    s = Schema([Categorical("a", [0, 1, 2]), Categorical("b", [0, 1, 2])])
    kept = frame.dropna()
    assert kept["a"].dtype.kind == "f"
    res = dpcg.discover(kept, schema=s, algorithm="laplace-pc", epsilon=1.0,
                        ledger=dpcg.NO_LEDGER, noise_seed=1)
    assert sorted(res.graph.edges) == [("a", "b"), ("b", "a")]
    draft = draft_from_columns(["a"], [np.array(["1.0", "0.0", "1", "nan", "2.0"])])
    assert draft.columns[0].spec["categories"] == ["0", "1", "2"]

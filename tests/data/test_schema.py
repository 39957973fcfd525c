"""Schema construction, validation and JSON round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcg.data import Categorical, Continuous, Ordinal, Schema
from dpcg.data.loaders import load_table
from dpcg.errors import DataValidationError, DpcgError, SchemaError


def example() -> Schema:
    return Schema([
        Categorical("smoker", ["yes", "no"]),
        Ordinal("stage", ["I", "II", "III"]),
        Continuous("age", 0, 120),
    ])


def test_metadata() -> None:
    schema = example()
    assert schema.names == ("smoker", "stage", "age")
    assert schema.cardinalities == (2, 3, None)
    assert [c.kind for c in schema] == ["categorical", "ordinal", "continuous"]
    assert schema.index("age") == 2
    assert schema["stage"] == Ordinal("stage", ["I", "II", "III"])
    assert not schema.is_discrete
    assert not schema.is_continuous
    assert Schema([Categorical("a", ["x"])]).is_discrete
    assert Schema([Continuous("a", -1.0, 1.0)]).is_continuous
    assert schema.select(["age", 0]).names == ("age", "smoker")


def test_integer_labels_become_strings() -> None:
    col = Categorical("x", [0, 1, 2])
    assert col.categories == ("0", "1", "2")


def test_json_round_trip(tmp_path: Path) -> None:
    schema = example()
    text = schema.to_json()
    assert json.loads(text) == {
        "columns": [
            {"name": "smoker", "type": "categorical", "categories": ["yes", "no"]},
            {"name": "stage", "type": "ordinal", "order": ["I", "II", "III"]},
            {"name": "age", "type": "continuous", "lower": 0.0, "upper": 120.0},
        ]
    }
    assert Schema.from_json(text) == schema
    path = tmp_path / "schema.json"
    schema.to_json(path)
    assert Schema.from_json(path) == schema
    assert Schema.from_json(str(path)) == schema


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (
            lambda: Schema([Categorical("a", ["x"]), Categorical("a", ["y"])]),
            "duplicate column name 'a'",
        ),
        (lambda: Categorical("a", []), "'a': categories must not be empty"),
        (lambda: Categorical("a", ["x", "y", "x"]), "duplicate categories label 'x'"),
        (lambda: Ordinal("o", ["lo", "lo"]), "duplicate order label 'lo'"),
        (lambda: Categorical("a", ["x", ""]), "empty string"),
        (lambda: Categorical("a", "xy"), "'a'"),
        (lambda: Categorical("a", [1.5]), "'a'"),  # type: ignore[list-item]
        (lambda: Categorical("", ["x"]), "column name"),
        (lambda: Continuous("c", 1.0, 1.0), "'c': bounds must satisfy lower < upper"),
        (lambda: Continuous("c", 2.0, 1.0), "lower < upper"),
        (lambda: Continuous("c", float("-inf"), 1.0), "'c': lower bound must be finite"),
        (lambda: Continuous("c", 0.0, float("nan")), "'c': upper bound must be finite"),
        (lambda: Continuous("c", 0.0, "1"), "'c': upper bound must be a number"),  # type: ignore[arg-type]
        (lambda: Continuous("c", True, 2.0), "'c'"),
        (lambda: Schema([]), "at least one column"),
        (lambda: Schema(["a"]), "Categorical, Ordinal or Continuous"),  # type: ignore[list-item]
    ],
)
def test_schema_errors(build: object, fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        build()  # type: ignore[operator]
    assert fragment in str(info.value)
    assert isinstance(info.value, DpcgError)


def one(spec: dict[str, object]) -> dict[str, object]:
    return {"columns": [{"name": "a", **spec}]}


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (one({"type": "nominal", "categories": ["x"]}), "unknown column type 'nominal'"),
        (one({"type": "categorical"}), "missing key(s) ['categories']"),
        (one({"type": "continuous", "lower": 0}), "missing key(s) ['upper']"),
        (one({"type": "ordinal", "order": ["x"], "extra": 1}), "unknown key(s) ['extra']"),
        (one({"type": "continuous", "lower": 1, "upper": 0}), "lower < upper"),
        ({"columns": "a"}, '"columns" must be a list'),
        ({"cols": []}, '"columns"'),
        ({"columns": [], "x": 1}, "unknown top-level"),
        ({"columns": [3]}, "columns[0] must be an object"),
    ],
)
def test_schema_json_errors(doc: object, fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        Schema.from_json(json.dumps(doc))
    assert fragment in str(info.value)


def test_schema_file_errors(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="cannot read schema file"):
        Schema.from_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.from_json(bad)


def test_unknown_column_lookup() -> None:
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        example().index("nope")
    with pytest.raises(SchemaError, match="selected twice"):
        example().select(["age", "age"])
    with pytest.raises(SchemaError, match="out of range"):
        example().select([7])


def test_ignored_columns_are_declared_and_never_read(tmp_path: Path) -> None:
    """A file's identifier / free-text columns are listed in "ignore": the header check
    accepts them, their cells are never parsed, and the round trip keeps them."""
    path = tmp_path / "t.csv"
    path.write_text('id,a,notes\nx1,0,"anything"\nx2,1,\n')
    schema = Schema.from_dict({"ignore": ["id", "notes"], "columns": [
        {"name": "a", "type": "categorical", "categories": ["0", "1"]}]})
    ds = load_table(path, schema)
    assert ds.names == ("a",)
    assert Schema.from_dict(schema.to_dict()) == schema
    with pytest.raises(SchemaError, match="both declared and in"):
        Schema.from_dict({"ignore": ["a"], "columns": [
            {"name": "a", "type": "categorical", "categories": ["0", "1"]}]})
    with pytest.raises(SchemaError, match="ignore"):
        Schema.from_dict({"ignore": "id", "columns": [
            {"name": "a", "type": "categorical", "categories": ["0", "1"]}]})
    with pytest.raises(DataValidationError, match="'notes'"):
        load_table(path, Schema.from_dict({"ignore": ["id"], "columns": [
            {"name": "a", "type": "categorical", "categories": ["0", "1"]}]}))

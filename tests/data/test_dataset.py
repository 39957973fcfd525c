"""Dataset encoding, accessors and constructors (in memory)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

from dpcg.data import (
    Categorical,
    Continuous,
    DataClippingWarning,
    Dataset,
    Ordinal,
    Schema,
    code_dtype,
)
from dpcg.data.readers import unsafe_debug_errors
from dpcg.errors import DataValidationError, DpcgError, SchemaError


@pytest.fixture(autouse=True)
def _unsafe_debug_errors() -> Iterator[None]:
    """These tests check the detail of data errors, which only the local-only unsafe debug
    mode prints (the default, redacted messages: tests/hardening/test_redaction.py)."""
    with unsafe_debug_errors():
        yield



def discrete_schema() -> Schema:
    return Schema([
        Categorical("colour", ["red", "green", "blue"]),
        Ordinal("size", ["S", "M", "L", "XL"]),
        Categorical("flag", [0, 1]),
    ])


def mixed_schema() -> Schema:
    return Schema([
        Categorical("colour", ["red", "green", "blue"]),
        Continuous("height", 0.0, 3.0),
        Ordinal("size", ["S", "M", "L", "XL"]),
    ])


TABLE = np.array([
    ["red", "S", "0"],
    ["blue", "XL", "1"],
    ["green", "M", "1"],
    ["blue", "L", "0"],
])
CODES = np.array([[0, 2, 1, 2], [0, 3, 1, 2], [0, 1, 1, 0]])


def test_from_numpy_labels() -> None:
    data = Dataset.from_numpy(TABLE, discrete_schema())
    assert data.n == 4
    assert data.p == 3
    assert data.names == ("colour", "size", "flag")
    assert data.cardinalities == (3, 4, 2)
    assert data.codes.dtype == np.uint8
    assert data.codes.shape == (3, 4)
    assert data.codes.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(data.codes, CODES)
    assert data.index("size") == 1
    np.testing.assert_array_equal(data.column("size"), CODES[1])
    np.testing.assert_array_equal(data.labels("colour"), TABLE[:, 0])


def test_integer_labels_match_decimal_strings() -> None:
    ints = np.array([[0, 1, 1, 0]]).T
    schema = Schema([Categorical("flag", ["0", "1"])])
    np.testing.assert_array_equal(Dataset.from_numpy(ints, schema).codes[0], [0, 1, 1, 0])
    floats = ints.astype(float)
    np.testing.assert_array_equal(Dataset.from_numpy(floats, schema).codes[0], [0, 1, 1, 0])


def test_encoded_and_from_codes() -> None:
    schema = discrete_schema()
    data = Dataset.from_numpy(CODES.T, schema, encoded=True)
    np.testing.assert_array_equal(data.codes, CODES)
    same = Dataset.from_codes(CODES, schema)
    np.testing.assert_array_equal(same.codes, CODES)
    assert same.codes.dtype == np.uint8


def test_arrays_are_read_only_and_not_shared() -> None:
    codes = CODES.astype(np.uint8)
    data = Dataset.from_codes(codes, discrete_schema())
    with pytest.raises(ValueError, match="read-only"):
        data.codes[0, 0] = 1
    assert codes.flags.writeable
    codes[0, 0] = 2
    assert data.codes[0, 0] == 0


def test_dtype_by_cardinality() -> None:
    assert code_dtype([2, 256]) == np.uint8
    assert code_dtype([257]) == np.uint16
    assert code_dtype([65536]) == np.uint16
    assert code_dtype([65537]) == np.uint32
    big = Schema([Categorical("x", [str(i) for i in range(300)])])
    data = Dataset.from_numpy(np.array([["299"], ["0"]]), big)
    assert data.codes.dtype == np.uint16
    np.testing.assert_array_equal(data.codes[0], [299, 0])


def test_mixed_table() -> None:
    table = np.array([["red", 1.5, "S"], ["blue", 2.0, "XL"]], dtype=object)
    data = Dataset.from_numpy(table, mixed_schema())
    np.testing.assert_array_equal(data.column(0), [0, 2])
    np.testing.assert_array_equal(data.column("height"), [1.5, 2.0])
    assert data.column("height").dtype == np.float64
    np.testing.assert_array_equal(data.column(2), [0, 3])
    with pytest.raises(DataValidationError, match="all-discrete"):
        _ = data.codes
    with pytest.raises(DataValidationError, match="all-continuous"):
        _ = data.values
    only_cont = data.select(["height"])
    assert only_cont.values.shape == (1, 2)
    assert only_cont.values.flags["C_CONTIGUOUS"]
    only_disc = data.select(["size", "colour"])
    np.testing.assert_array_equal(only_disc.codes, [[0, 3], [0, 2]])


def test_select_and_subset_rows() -> None:
    data = Dataset.from_codes(CODES, discrete_schema())
    sub = data.select(["flag", "colour"])
    assert sub.names == ("flag", "colour")
    np.testing.assert_array_equal(sub.codes, CODES[[2, 0]])
    rows = data.subset_rows(np.array([3, 0, 0]))
    assert rows.n == 3
    assert rows.codes.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(rows.codes, CODES[:, [3, 0, 0]])
    mask = np.array([True, False, True, False])
    np.testing.assert_array_equal(data.subset_rows(mask).codes, CODES[:, [0, 2]])


@pytest.mark.parametrize(
    ("indices", "fragment"),
    [
        (np.array([0, 4]), "row index 4 out of range"),
        (np.array([-1]), "row index -1 out of range"),
        (np.array([], dtype=np.int64), "no rows selected"),
        (np.array([0.5]), "1-D integer"),
        (np.array([[0]]), "1-D integer"),
        (np.array([True]), "boolean mask"),
    ],
)
def test_subset_rows_errors(indices: np.ndarray, fragment: str) -> None:
    data = Dataset.from_codes(CODES, discrete_schema())
    with pytest.raises(DataValidationError, match=fragment):
        data.subset_rows(indices)


def test_continuous_values_and_bounds() -> None:
    schema = Schema([Continuous("x", -1.0, 1.0), Continuous("y", 0.0, 10.0)])
    data = Dataset.from_numpy(np.array([[0.5, 3.0], [-1.0, 10.0]]), schema)
    np.testing.assert_array_equal(data.values, [[0.5, -1.0], [3.0, 10.0]])
    assert data.values.dtype == np.float64
    with pytest.raises(DataValidationError) as info:
        Dataset.from_numpy(np.array([[0.5, 3.0], [-1.5, 10.0]]), schema)
    message = str(info.value)
    for fragment in ("'x'", "-1.5", "row 1"):
        assert fragment in message
    assert "clip=True" in message
    with pytest.warns(DataClippingWarning, match="'x': 1"):
        clipped = Dataset.from_numpy(np.array([[0.5, 3.0], [-1.5, 10.0]]), schema, clip=True)
    np.testing.assert_array_equal(clipped.column("x"), [0.5, -1.0])


def test_clip_warning_does_not_depend_on_the_data() -> None:
    """Default mode: the same warning whether or not anything was clipped (THAT clipping
    is applied, never how much: a count would be an uncharged counting query)."""
    schema = Schema([Continuous("x", -1.0, 1.0)])
    texts = []
    for table in ([[0.0], [0.5]], [[5.0], [0.5]], [[5.0], [-7.0], [0.5]]):
        with unsafe_debug_errors(False), pytest.warns(DataClippingWarning) as rec:
            Dataset.from_numpy(np.array(table), schema, clip=True)
        texts.append(str(rec[0].message))
    assert len(set(texts)) == 1
    assert "1" not in texts[0]
    assert "2" not in texts[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Dataset.from_numpy(np.array([[0.0], [0.5]]), schema)


@pytest.mark.parametrize(
    ("table", "schema", "kwargs", "fragments"),
    [
        (np.array([["red", "S", "0"], ["pink", "M", "1"]]), discrete_schema(), {},
         ["'colour'", "'pink'", "row 1", "declared categories"]),
        (np.array([["red", "S", "0"], ["red", "M", "2"]]), discrete_schema(), {},
         ["'flag'", "'2'", "row 1"]),
        (np.array([["red", "S", "0"], ["red", "", "1"]]), discrete_schema(), {},
         ["'size'", "missing value", "row 1"]),
        (np.array([["red", "S", "0"], ["red", "NaN", "1"]]), discrete_schema(), {},
         ["'size'", "missing value", "'NaN'"]),
        (np.array([["red", None, "S"]], dtype=object), mixed_schema(), {},
         ["'height'", "missing value", "row 0"]),
        (np.array([["red", np.nan, "S"]], dtype=object), mixed_schema(), {},
         ["'height'", "missing value"]),
        (np.array([[np.nan, 1.0, "S"]], dtype=object), mixed_schema(), {},
         ["'colour'", "missing value"]),
        (np.array([["red", "tall", "S"]], dtype=object), mixed_schema(), {},
         ["'height'", "'tall'", "not a number"]),
        (np.array([["red", 7.0, "S"]], dtype=object), mixed_schema(), {},
         ["'height'", "7.0", "outside the declared bounds"]),
        (np.array([[0, 5, 1]]), discrete_schema(), {"encoded": True},
         ["'size'", "code 5", "0..3"]),
        (np.array([[0, -1, 1]]), discrete_schema(), {"encoded": True},
         ["'size'", "code -1"]),
        (np.array([[0.0, 1.5, 1.0]]), discrete_schema(), {"encoded": True},
         ["'size'", "not an integer"]),
        (np.array([["a", "b", "c"]]), discrete_schema(), {"encoded": True},
         ["'colour'", "must be integers"]),
        (np.array([["red", "S"]]), discrete_schema(), {}, ["2 columns", "declares 3"]),
        (np.zeros((0, 3), dtype=str), discrete_schema(), {}, ["empty table"]),
        (np.array(["red", "S", "0"]), discrete_schema(), {}, ["2-D"]),
    ],
)
def test_bad_input_raises_named_error(
    table: np.ndarray, schema: Schema, kwargs: dict[str, bool], fragments: list[str]
) -> None:
    with pytest.raises(DataValidationError) as info:
        Dataset.from_numpy(table, schema, **kwargs)
    assert isinstance(info.value, DpcgError)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_continuous_wrong_type() -> None:
    schema = Schema([Continuous("x", 0.0, 1.0)])
    with pytest.raises(DataValidationError, match=r"'x'.*numeric"):
        Dataset.from_numpy(np.array([[True], [False]]), schema)


def test_declared_missing_token_is_a_category() -> None:
    schema = Schema([Categorical("answer", ["yes", "no", "NA"])])
    data = Dataset.from_numpy(np.array([["NA"], ["yes"]]), schema)
    np.testing.assert_array_equal(data.codes[0], [2, 0])


def test_from_codes_errors() -> None:
    schema = discrete_schema()
    with pytest.raises(DataValidationError, match=r"shape \(p, n\)"):
        Dataset.from_codes(CODES.T, schema)
    with pytest.raises(DataValidationError, match=r"'flag'.*code 2"):
        Dataset.from_codes(np.array([[0], [0], [2]]), schema)
    with pytest.raises(DataValidationError, match="empty table"):
        Dataset.from_codes(np.zeros((3, 0), dtype=int), schema)
    with pytest.raises(DataValidationError, match="all-discrete"):
        Dataset.from_codes(np.zeros((3, 1), dtype=int), mixed_schema())


def test_unknown_column_access() -> None:
    data = Dataset.from_codes(CODES, discrete_schema())
    with pytest.raises(SchemaError, match="unknown column 'weight'"):
        data.column("weight")
    with pytest.raises(SchemaError, match="unknown column 'weight'"):
        data.select(["colour", "weight"])
    with pytest.raises(SchemaError, match="unknown column 'weight'"):
        data.index("weight")

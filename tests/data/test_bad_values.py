"""Review 2, defects B, C and D in the data layer: schema bounds whose width overflows,
schema files that are not UTF-8 (or not parseable JSON numbers), and object columns
holding numbers beyond the float range or a signalling NaN. Each is a project error
naming the column and the rule, never a value; through ``dpcg discover`` and
``dpcg.discover`` nothing is reserved and the ledger's rows are unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpcg
from dpcg.api import load_schema
from dpcg.data.dataset import DataClippingWarning, Dataset
from dpcg.data.schema import MAX_WIDTH, Categorical, Continuous, Schema
from dpcg.errors import DataValidationError, SchemaError
from tests.cli.refusals import refused_api, refused_cli, used_ledger

pd = pytest.importorskip("pandas")

HUGE = 10**400
#: Digits of HUGE as any message would spell them.
HUGE_TEXT = "1" + "0" * 20

CONT = Schema([Continuous("x", -5, 5), Continuous("y", -5, 5)])
DISC = Schema([Categorical("a", ["p", "q"]), Categorical("b", ["p", "q"])])


def _cont_schema(tmp: Path, lower: float, upper: float) -> Path:
    path = tmp / "s.json"
    path.write_text(json.dumps({"columns": [
        {"name": "x", "type": "continuous", "lower": -5, "upper": 5},
        {"name": "wide", "type": "continuous", "lower": lower, "upper": upper}]}))
    return path


def _cont_csv(tmp: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp / "t.csv"
    rows = ["x,wide"] + [f"{a:.3f},{b:.3f}" for a, b in rng.uniform(-1, 1, (60, 2))]
    path.write_text("\n".join(rows) + "\n")
    return path


# ----------------------------------------------------------------------- B: bounds


@pytest.mark.parametrize(("lower", "upper"), [(-1e308, 1e308), (-1e300, 1e300),
                                              (0.0, 1e-301), (-HUGE, 0)])
def test_bounds_whose_width_overflows_are_refused(lower: float, upper: float) -> None:
    with pytest.raises(SchemaError, match="'wide'") as info:
        Continuous("wide", lower, upper)
    message = str(info.value)
    assert "width" in message or "float range" in message
    assert "e+308" not in message
    assert HUGE_TEXT not in message


def test_widest_allowed_bounds_still_work() -> None:
    col = Continuous("x", -MAX_WIDTH / 2, MAX_WIDTH / 2)
    assert col.upper - col.lower == MAX_WIDTH


def test_cli_huge_bounds_reserve_nothing(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    argv = ["discover", "--data", str(_cont_csv(tmp_path)), "--schema",
            str(_cont_schema(tmp_path, -1e308, 1e308)), "--dataset-id", "wide",
            "--algorithm", "private-ci-pc", "--epsilon", "10", "--quiet",
            "--ledger", str(led)]
    err = refused_cli(argv, led, SchemaError, capsys, fragment="'wide'")
    assert "upper - lower" in err


def test_api_huge_bounds_reserve_nothing(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    refused_api(lambda: dpcg.discover(
        str(_cont_csv(tmp_path)), schema=str(_cont_schema(tmp_path, -1e308, 1e308)),
        algorithm="private-ci-pc", epsilon=10.0, ledger=str(led), dataset_id="wide"),
        led, SchemaError, fragment="'wide'")


# ------------------------------------------------------------ C: unreadable schemas


@pytest.mark.parametrize("content", [b"\xff\xfe{\x00", "{}".encode("utf-16")])
def test_non_utf8_schema_file(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(SchemaError, match="UTF-8"):
        Schema.from_json(path)
    for private in (True, False):
        with pytest.raises(SchemaError, match="UTF-8"):
            load_schema(path, private=private)
        with pytest.raises(SchemaError, match="UTF-8"):
            load_schema(str(path), private=private)


@pytest.mark.parametrize("text", [
    '{"columns": [{"name": "x", "type": "continuous", "lower": 0, "upper": 1'
    + "0" * 5000 + "}]}",
    '{"columns": ' + "[" * 100_000 + "]" * 100_000 + "}",
])
def test_unparseable_json_numbers_and_nesting(text: str, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.from_json(path)
    with pytest.raises(SchemaError, match="not valid JSON"):
        load_schema(path, private=True)


def test_label_too_long_to_write_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="'a'"):
        Categorical("a", [10**5000])


# ------------------------------------------------- D: huge numbers and signalling NaN

BAD_CELLS = [HUGE, -HUGE, 10**5000, Fraction(HUGE, 3)]


def _table(bad: object) -> np.ndarray:
    table = np.empty((4, 2), dtype=object)
    table[:, 0] = [0.5, -0.5, 1.0, 2.0]
    table[:, 1] = [0.25, bad, 0.0, 1.0]
    return table


def _all_refused(builds: list[Callable[[], Dataset]], column: str, rule: str) -> None:
    """Each build raises a DataValidationError naming ``column`` and ``rule``, never the
    value."""
    for build in builds:
        with pytest.raises(DataValidationError, match=column) as info:
            build()
        message = str(info.value)
        assert rule in message
        assert HUGE_TEXT not in message


@pytest.mark.parametrize("bad", BAD_CELLS, ids=["int", "-int", "int5000", "fraction"])
def test_continuous_number_beyond_float_range(bad: object) -> None:
    builds: list[Callable[[], Dataset]] = [
                  lambda: Dataset.from_numpy(_table(bad), CONT),
                  lambda: Dataset.from_pandas(pd.DataFrame(_table(bad), columns=["x", "y"]),
                                              CONT),
                  lambda: Dataset.from_columns([np.array([1.0, 2.0], dtype=object),
                                                np.array([0.0, bad], dtype=object)], CONT)]
    _all_refused(builds, "'y'", "bounds")
    # with clip the value is clipped to the declared bound, like any value beyond it
    with pytest.warns(DataClippingWarning):
        ds = Dataset.from_numpy(_table(bad), CONT, clip=True)
    assert ds.values[1, 1] == (5.0 if bad > 0 else -5.0)  # type: ignore[operator]


@pytest.mark.parametrize("bad", BAD_CELLS, ids=["int", "-int", "int5000", "fraction"])
def test_code_beyond_float_range(bad: object) -> None:
    codes = np.array([[0, 1, 0], [1, bad, 0]], dtype=object)
    builds: list[Callable[[], Dataset]] = [
                  lambda: Dataset.from_codes(codes, DISC),
                  lambda: Dataset.from_numpy(codes.T, DISC, encoded=True),
                  lambda: Dataset.from_columns(list(codes), DISC, encoded=True)]
    _all_refused(builds, "'b'", "code")


def test_label_beyond_str_range() -> None:
    table = np.array([["p", "q"], ["q", 10**5000]], dtype=object)
    with pytest.raises(DataValidationError, match="'b'") as info:
        Dataset.from_numpy(table, DISC)
    assert "declared categories" in str(info.value)


def test_signalling_nan() -> None:
    snan = Decimal("sNaN")
    builds: list[Callable[[], Dataset]] = [
                  lambda: Dataset.from_numpy(_table(snan), CONT),
                  lambda: Dataset.from_pandas(pd.DataFrame(_table(snan), columns=["x", "y"]),
                                              CONT),
                  lambda: Dataset.from_numpy(np.array([["p", "q"], ["q", snan]],
                                                      dtype=object), DISC)]
    for build in builds:
        with pytest.raises(DataValidationError, match="missing") as info:
            build()
        assert "NaN" not in str(info.value)
    with pytest.raises(DataValidationError, match="'b'") as info:
        Dataset.from_codes(np.array([[0, 1], [1, snan]], dtype=object), DISC)
    assert "NaN" not in str(info.value)


def test_decimals_and_fractions_in_range_are_numbers() -> None:
    table = np.array([[Decimal("1.5"), Fraction(1, 4)], [Decimal("-2"), 3]], dtype=object)
    ds = Dataset.from_numpy(table, CONT)
    np.testing.assert_allclose(ds.values, [[1.5, -2.0], [0.25, 3.0]])


@pytest.mark.parametrize("bad", [HUGE, Decimal("sNaN")], ids=["int", "snan"])
def test_api_bad_cell_reserves_nothing(bad: object, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"x": list(rng.uniform(-1, 1, 40)),
                          "y": list(rng.uniform(-1, 1, 40))}, dtype=object)
    frame.loc[7, "y"] = bad
    refused_api(lambda: dpcg.discover(frame, schema=CONT, algorithm="private-ci-pc",
                                      epsilon=10.0, ledger=str(led), dataset_id="cells"),
                led, DataValidationError, fragment="'y'",
                absent=[HUGE_TEXT, "NaN", "row", "line"])

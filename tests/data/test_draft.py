"""``dpcg schema draft``: inference on messy files, the draft marker, errors, the CLI."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpcg.cli import main
from dpcg.data import Schema, load_table
from dpcg.data.draft import (
    DRAFT_KEY,
    TODO_TYPE,
    draft_from_columns,
    draft_schema,
    outward_bounds,
    read_columns,
)
from dpcg.errors import DataValidationError, DpcgError, MissingDependencyError, SchemaError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "draft"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _columns(draft_dict: dict[str, object]) -> dict[str, dict[str, object]]:
    cols = draft_dict["columns"]
    assert isinstance(cols, list)
    return {c["name"]: c for c in cols}


MESSY = (
    "id,name,score,count,ratio,empty,mixed,blanky\n"
    '1,"Smith, J",3.5,2,0.25,,1,a\n'
    '2,"O""Brien",7,3,0.5,NA,2,\n'
    "3,Lee,9.25,2,0.125,,three,b\n"
    "4,Lee,4,5,0.75,,1,a\n"
    "5,Wu,10,3,1,, ,NA\n"
)


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (3.7, 97.2, (0.0, 100.0)),
        (-3.2, 41.5, (-10.0, 50.0)),
        (12345.0, 987654.0, (0.0, 1_000_000.0)),
        (0.0012, 0.0345, (0.0, 0.04)),
        (18.0, 90.0, (10.0, 90.0)),
        (5.0, 5.0, (5.0, 6.0)),
        (0.0, 0.0, (0.0, 1.0)),
        (-7.5, -0.5, (-8.0, 0.0)),
        (0.1, 0.3, (0.1, 0.3)),
    ],
)
def test_outward_bounds(lo: float, hi: float, expected: tuple[float, float]) -> None:
    got = outward_bounds(lo, hi)
    assert got == pytest.approx(expected)
    assert got[0] <= lo
    assert got[1] >= hi
    assert got[0] < got[1]


def test_outward_bounds_rejects_nonfinite() -> None:
    with pytest.raises(ValueError, match="finite"):
        outward_bounds(0.0, float("inf"))


def test_messy_csv_kinds(tmp_path: Path) -> None:
    draft = draft_schema(_write(tmp_path, "messy.csv", MESSY))
    cols = _columns(draft.to_dict())
    assert cols["id"]["type"] == "categorical"  # 5 small integers
    assert cols["name"] == {"name": "name", "type": "categorical",
                            "categories": ["Lee", "O\"Brien", "Smith, J", "Wu"]}
    assert cols["score"] == {"name": "score", "type": "continuous", "lower": 0, "upper": 10}
    assert cols["count"]["categories"] == ["2", "3", "5"]  # numeric order, file text
    assert cols["ratio"] == {"name": "ratio", "type": "continuous", "lower": 0, "upper": 1}
    assert cols["empty"]["type"] == TODO_TYPE
    assert cols["mixed"]["categories"] == ["1", "2", "three"]  # " " counts as blank
    assert cols["blanky"]["categories"] == ["a", "b"]
    assert draft.todo_columns == ("empty",)
    assert set(draft.missing_columns) == {"empty", "mixed", "blanky"}
    notes = draft.to_dict()[DRAFT_KEY]["notes"]
    assert any("mixes numbers and text" in n for n in notes["mixed"])
    assert any("every cell is blank" in n for n in notes["empty"])


def test_header_and_terminal_say_draft_and_show_no_counts(tmp_path: Path) -> None:
    draft = draft_schema(_write(tmp_path, "messy.csv", MESSY))
    header = draft.to_dict()[DRAFT_KEY]
    for text in (header["warning"], "\n".join(draft.terminal_lines())):
        assert "computed from the data" in text
        assert "reviewed by the data owner" in text
        assert "NOT public" in text
    assert "widen" in header["warning"]
    assert any("domain" in line for line in header["how_to_declare"])
    terminal = "\n".join(draft.terminal_lines())
    # the terminal names columns, never values or counts
    for value in ("Smith", "Brien", "three", "9.25"):
        assert value not in terminal
    assert set(draft.rare_columns) >= {"name", "count", "mixed", "blanky"}
    assert "name" in terminal


def test_draft_marker_refused_until_removed(tmp_path: Path) -> None:
    draft = draft_schema(_write(tmp_path, "t.csv", "a,b\nx,1.5\ny,2.5\nx,3\n"))
    text = draft.to_json()
    with pytest.raises(SchemaError, match='delete the "_draft" field'):
        Schema.from_json(text)
    data = json.loads(text)
    del data[DRAFT_KEY]
    schema = Schema.from_dict(data)
    assert schema.names == ("a", "b")
    assert draft.declared() == schema


def test_declared_draft_loads_the_clean_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "clean.csv", "g,h,x\nlow,1,0.5\nhigh,2,1.5\nlow,3,2.5\nmid,1,9\n")
    schema = draft_schema(path, ordinal=["g"]).declared()
    assert schema["g"].kind == "ordinal"
    data = load_table(path, schema)
    assert data.n == 4


def test_todo_column_cannot_be_declared_unchanged(tmp_path: Path) -> None:
    draft = draft_schema(_write(tmp_path, "t.csv", "a,b\n1,\n2,\n"))
    with pytest.raises(SchemaError, match="unknown column type"):
        draft.declared()


def test_too_many_text_values_left_todo() -> None:
    labels = np.array([f"person-{i}" for i in range(40)])
    draft = draft_from_columns(["who"], [labels], max_categories=30)
    assert draft.columns[0].todo
    assert "person-1" not in draft.to_json()  # an identifier column is not listed


def test_ordinal_options() -> None:
    draft = draft_from_columns(["s", "k"], [["lo", "hi", "mid"], ["1", "3", "2"]],
                               ordinal=["s", "k"])
    cols = _columns(draft.to_dict())
    assert cols["s"] == {"name": "s", "type": "ordinal", "order": ["hi", "lo", "mid"]}
    assert cols["k"] == {"name": "k", "type": "ordinal", "order": ["1", "2", "3"]}
    with pytest.raises(SchemaError, match="unknown column"):
        draft_from_columns(["s"], [["a"]], ordinal=["nope"])


def test_wide_integers_are_continuous() -> None:
    draft = draft_from_columns(["pop"], [["1200", "63000", "2148000"]])
    assert _columns(draft.to_dict())["pop"] == {"name": "pop", "type": "continuous",
                                                 "lower": 0, "upper": 3_000_000}


def test_inf_is_text_not_a_bound() -> None:
    draft = draft_from_columns(["v"], [["1.5", "inf", "2.5"]])
    assert _columns(draft.to_dict())["v"]["type"] == "categorical"


def test_tsv_with_quotes(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.tsv", 'a\tb\n"x\ty"\t1\n"q""uote"\t2\n')
    header, cols = read_columns(path)
    assert header == ["a", "b"]
    assert list(cols[0]) == ["x\ty", 'q"uote']


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("missing.csv", None, "no such file"),
        ("empty.csv", "", "empty file"),
        ("header_only.csv", "a,b\n", "no data rows"),
        ("ragged.csv", "a,b\n1,2\n3\n", "line 3"),
        ("dupe.csv", "a,a\n1,2\n", "appears twice"),
        ("blankname.csv", "a,\n1,2\n", "header field 2 is empty"),
        ("quote.csv", 'a,b\n"1,2\n', "malformed CSV"),
        ("table.xlsx", "a\n1\n", "cannot tell the format"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, content: str | None, match: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(DataValidationError, match=match):
        draft_schema(path)


def test_not_utf8_and_binary(tmp_path: Path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DataValidationError, match="not UTF-8"):
        draft_schema(latin)
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"a\n\x00\x01\n")
    with pytest.raises(DataValidationError, match="NUL"):
        draft_schema(binary)


def test_parquet(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    try:
        pa: Any = importlib.import_module("pyarrow")
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        path.write_bytes(b"PAR1")
        with pytest.raises(MissingDependencyError, match="pyarrow"):
            draft_schema(path)
        return
    table = pa.table({"a": ["x", None, "y"], "b": [1.5, None, 3.0], "c": [1, 2, 2]})
    pq.write_table(table, path)
    cols = _columns(draft_schema(path).to_dict())
    assert cols["a"]["categories"] == ["x", "y"]
    assert cols["b"]["type"] == "continuous"
    assert cols["c"]["categories"] == ["1", "2"]


def test_bad_knobs() -> None:
    with pytest.raises(SchemaError, match="max_categories"):
        draft_from_columns(["a"], [["x"]], max_categories=0)
    with pytest.raises(SchemaError, match="min_count"):
        draft_from_columns(["a"], [["x"]], min_count=0)


def test_cli_draft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path, "messy.csv", MESSY)
    out = tmp_path / "schema.json"
    assert main(["schema", "draft", str(data), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "computed from the data" in err
    assert "delete the \"_draft\" field" in err
    assert DRAFT_KEY in json.loads(out.read_text())
    # refuses to overwrite a (possibly reviewed) schema
    assert main(["schema", "draft", str(data), "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["schema", "draft", str(data), "--out", str(out), "--force"]) == 0
    # stdout mode and a clear error for a missing file
    capsys.readouterr()
    assert main(["schema", "draft", str(data)]) == 0
    assert json.loads(capsys.readouterr().out)["columns"]
    assert main(["schema", "draft", str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    # a drafted schema is refused by discover until declared
    with pytest.raises(DpcgError, match="_draft"):
        Schema.from_json(out)


@pytest.mark.parametrize(("stem", "suffix", "ordinal"),
                         [("survey", ".csv", []), ("lab", ".csv", ["grade"]),
                          ("towns", ".tsv", [])])
def test_committed_examples_are_current(stem: str, suffix: str, ordinal: list[str]) -> None:
    """docs/examples/draft: three messy files and their drafts, regenerated exactly."""
    draft = draft_schema(EXAMPLES / f"{stem}{suffix}", ordinal=ordinal)
    committed = (EXAMPLES / f"{stem}.schema.draft.json").read_text(encoding="utf-8")
    assert draft.to_json() == committed


# -- drafted missing policies and bins (issue 54 item 4) ----------------------------------


def test_drafted_policies_load_the_file_with_blanks(tmp_path: Path) -> None:
    """A column with blank/NA cells gets a reviewed-by-the-owner policy: a category for
    a discrete column, impute + indicator for a continuous one; never drop_rows. The
    drafted schema, declared as is, loads the file (whitespace-only cells included)."""
    text = ("age,smoker,score,tag\n"
            "31.5,yes,0.5,a\n,no,1.5,b\n45.2,,NA,\n52.1,yes,2.5, \n60.3,no,3.5,a\n")
    path = _write(tmp_path, "blanks.csv", text)
    draft = draft_schema(path)
    cols = _columns(draft.to_dict())
    assert cols["age"]["missing"] == {"policy": "impute", "value": 50,
                                      "indicator": "age_missing"}
    assert cols["smoker"]["missing"] == {"policy": "category", "label": "(missing)"}
    score_missing: Any = cols["score"]["missing"]
    tag_missing: Any = cols["tag"]["missing"]
    assert score_missing["policy"] == "impute"
    assert " " in tag_missing["tokens"]
    assert set(draft.policy_columns) == {"age", "smoker", "score", "tag"}
    header = draft.to_dict()[DRAFT_KEY]
    assert header["missing_policies_to_review"] == list(draft.policy_columns)
    assert "drop_rows" not in json.dumps(draft.to_dict()["columns"])
    assert any("REVIEW" in n for n in header["notes"]["age"])
    assert "drafted missing policies to review" in "\n".join(draft.terminal_lines())
    data = load_table(path, draft.declared())
    assert data.names == ("age", "age_missing", "smoker", "score", "score_missing", "tag")
    np.testing.assert_array_equal(data.column("age_missing"), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(data.labels("smoker"), ["yes", "no", "(missing)", "yes",
                                                          "no"])
    assert data.n_public


def test_committed_example_drafts_load_their_files() -> None:
    for stem, suffix, ordinal in (("survey", ".csv", []), ("lab", ".csv", ["grade"]),
                                  ("towns", ".tsv", [])):
        draft = draft_schema(EXAMPLES / f"{stem}{suffix}", ordinal=ordinal)
        if draft.todo_columns:
            continue
        assert load_table(EXAMPLES / f"{stem}{suffix}", draft.declared()).n > 1


def test_bins_from_declared_bounds(tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = "x,y,c\n3.7,0.1,a\n97.2,,b\n50,0.3,a\n12,0.2,b\n"
    path = _write(tmp_path, "b.csv", text)
    draft = draft_schema(path, bins=4)
    cols = _columns(draft.to_dict())
    assert cols["x"] == {"name": "x", "type": "continuous", "lower": 0, "upper": 100,
                         "bins": 4}
    assert cols["y"]["bins"] == 4
    assert cols["y"]["missing"] == {"policy": "category", "label": "(missing)"}
    assert "bins" not in cols["c"]
    assert any("never from data quantiles" in n for n in draft.to_dict()[DRAFT_KEY]["notes"]["x"])
    data = load_table(path, draft.declared())
    np.testing.assert_array_equal(data.labels("x"), ["[0, 25)", "[75, 100]", "[50, 75)",
                                                     "[0, 25)"])
    assert data.cardinalities == (4, 5, 2)  # x: 4 bins; y: 4 bins + missing
    assert data.labels("y")[1] == "(missing)"
    # the edges follow the bounds the owner declares, not the data
    spec = draft.to_dict()
    spec.pop(DRAFT_KEY)
    spec["columns"][0]["lower"], spec["columns"][0]["upper"] = 0, 200
    np.testing.assert_array_equal(load_table(path, Schema.from_dict(spec)).column("x"),
                                  [0, 1, 1, 0])
    with pytest.raises(SchemaError, match="bins"):
        draft_schema(path, bins=1)
    out = tmp_path / "s.json"
    assert main(["schema", "draft", str(path), "--bins", "3", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["columns"][0]["bins"] == 3
    capsys.readouterr()
    assert main(["schema", "draft", str(path), "--bins", "0"]) == 2
    assert "bins" in capsys.readouterr().err

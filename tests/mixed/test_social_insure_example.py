"""The social-insurance survey example (docs/examples/social_insure/run.py): a real mixed
table with blanks from the causaldata package, end to end from the raw CSV."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from dpcg.cli import main
from dpcg.data import Schema
from dpcg.errors import SchemaError

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "social_insure" / "run.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("social_insure_example", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_end_to_end(tmp_path: Path) -> None:
    ex = _script()
    doc = ex.run(tmp_path)
    # the draft is not a schema until the owner declares it
    draft = json.loads((tmp_path / "draft.schema.json").read_text())
    with pytest.raises(SchemaError, match="draft"):
        Schema.from_dict(draft)
    schema = Schema.from_json(tmp_path / "schema.json")
    assert "address" not in schema.names
    assert "village" not in schema.names
    assert schema["male"].labels == ("0", "1", "missing")  # type: ignore[union-attr]
    assert schema["literacy"].labels == ("0", "1", "missing")  # type: ignore[union-attr]
    assert schema["default"].labels == ("0", "1")  # type: ignore[union-attr]
    assert not schema.is_discrete
    assert not schema.is_continuous
    # complete cases over the continuous columns; discrete blanks kept as a category
    assert doc["data"]["rows"] == 1397
    assert doc["test"] == "dg-lrt"
    edges = doc["edges"]
    assert edges["directed"] or edges["undirected"]
    # the CLI on the files the script wrote gives the same graph
    out = tmp_path / "cli.json"
    assert main(["discover", "--data", str(tmp_path / "complete.csv"), "--schema",
                 str(tmp_path / "schema.json"), "--test", "dg-lrt", "--out", str(out),
                 "--quiet"]) == 0
    assert json.loads(out.read_text())["edges"] == edges


def test_raw_file_is_checked(tmp_path: Path) -> None:
    ex = _script()
    bad = tmp_path / "edited.csv"
    bad.write_bytes(ex.RAW_CSV.read_bytes().replace(b"beilian", b"xx", 1))
    with pytest.raises(SystemExit, match="SHA-256"):
        ex.raw_bytes(bad)


def test_review_refuses_another_draft() -> None:
    ex = _script()
    with pytest.raises(SystemExit, match="reviewed"):
        ex.owner_review({"columns": [{"name": "other", "type": "continuous"}]}, set())

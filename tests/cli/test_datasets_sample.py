"""`dpcg datasets sample`: seed 0 and the schema beside the data by default."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpcg.cli import main
from dpcg.data import Schema, read_csv
from dpcg.datasets import load_network


def test_defaults_seed_0_and_schema_beside(tmp_path: Path) -> None:
    out = tmp_path / "asia.csv"
    assert main(["datasets", "sample", "asia", "--rows", "300", "--out", str(out)]) == 0
    schema_path = tmp_path / "asia.schema.json"
    assert schema_path.exists()
    data = read_csv(out, Schema.from_json(schema_path))
    np.testing.assert_array_equal(data.codes, load_network("asia").sample(300, 0).codes)
    assert main(["discover", "--data", str(out), "--schema", str(schema_path), "--quiet",
                 "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["data"]["rows"] == 300


def test_no_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.csv"
    assert main(["datasets", "sample", "asia", "--rows", "50", "--out", str(out),
                 "--no-schema"]) == 0
    assert not (tmp_path / "a.schema.json").exists()
    assert main(["datasets", "sample", "asia", "--rows", "50", "--out", str(out),
                 "--no-schema", "--schema-out", str(tmp_path / "s.json")]) == 2
    assert "drop one" in capsys.readouterr().err

"""``dpcg datasets list|show|sample``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpcg.cli import main
from dpcg.data import Dataset, Schema
from dpcg.datasets import load_network


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["name", "nodes", "edges", "cardinalities", "max_parents"]
    rows = {line.split()[0]: line.split()[1:4] for line in out[1:]}
    assert rows["alarm"] == ["37", "46", "2-4"]
    assert rows["earthquake"] == ["5", "4", "2"]
    assert main(["datasets", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"name": "survey", "nodes": 6, "edges": 6, "cardinalities": "2-3",
            "max_parents": 2} in doc


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "show", "cancer"]) == 0
    out = capsys.readouterr().out
    assert "cancer: 5 nodes, 4 edges" in out
    assert "Pollution -> Cancer" in out
    assert main(["datasets", "show", "cancer", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    net = load_network("cancer")
    assert [tuple(e) for e in doc["edges"]] == list(net.dag_edges)
    assert [n["name"] for n in doc["nodes"]] == list(net.nodes)


def test_sample_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, schema_out = tmp_path / "s.csv", tmp_path / "s.json"
    argv = ["datasets", "sample", "survey", "--rows", "500", "--seed", "9",
            "--out", str(out), "--schema-out", str(schema_out)]
    assert main(argv) == 0
    assert "sampled 500 rows of survey" in capsys.readouterr().err
    schema = Schema.from_json(schema_out)
    net = load_network("survey")
    assert schema == net.schema()
    data = Dataset.from_csv(out, schema)
    np.testing.assert_array_equal(data.codes, net.sample(500, 9).codes)
    assert out.read_text().splitlines()[0] == ",".join(net.nodes)


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["datasets", "sample", "nope", "--rows", "5", "--seed", "1",
                 "--out", str(tmp_path / "x.csv")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no bundled network 'nope'" in err
    assert "alarm" in err
    assert main(["datasets", "sample", "asia", "--rows", "0", "--seed", "1",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "--rows" in capsys.readouterr().err
    assert main(["datasets", "sample", "asia", "--rows", "5", "--seed", "1",
                 "--out", str(tmp_path / "no" / "such" / "dir.csv")]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert main(["datasets", "show", "nope"]) == 2
    assert main(["datasets"]) == 2

"""A BIF file of the user's wherever a network name is accepted (``load_network``,
``dpcg datasets show|sample``, ``dpcg discover --dataset``, the benchmarks)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.utility_f1 import family_of
from dpcg.cli import main
from dpcg.datasets import bif_file_id, bif_stem, is_bif_path, load_bif_file, load_network
from dpcg.errors import BifParseError, DatasetNotFoundError
from dpcg.viz.result import load_result

SPEC = "random:nodes=7,max_parents=2,card=2-3,seed=5,conc=1"


def _write(path: Path, text: str) -> Path:
    if path.name.lower().endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def bif_text() -> str:
    return load_network(SPEC).to_bif()


@pytest.mark.parametrize("filename", ["net.bif", "net.bif.gz", "NET.BIF", "net.BIF.GZ"])
def test_a_file_loads_as_the_network_it_describes(tmp_path: Path, bif_text: str,
                                                  filename: str) -> None:
    path = _write(tmp_path / filename, bif_text)
    ref = load_network(SPEC)
    for name in (str(path), path):
        net = load_network(name)
        assert net.nodes == ref.nodes
        assert net.dag_edges == ref.dag_edges
        assert net.cardinalities == ref.cardinalities
        np.testing.assert_array_equal(net.sample(300, 4).codes, ref.sample(300, 4).codes)
    assert is_bif_path(filename)
    assert bif_stem(filename).lower() == "net"


def test_the_id_follows_the_content_not_the_place(tmp_path: Path, bif_text: str) -> None:
    (tmp_path / "a").mkdir()
    a = _write(tmp_path / "a" / "net.bif", bif_text)
    b = _write(tmp_path / "net.bif", bif_text)
    assert bif_file_id(str(a)) == bif_file_id(str(b))
    assert bif_file_id(str(a)).startswith("bif:net:sha256=")
    before = load_network(str(b))
    assert load_network(str(a)) is before  # the same content is parsed once
    assert load_bif_file(str(a)) == (before, bif_file_id(str(a)))
    # an edited file is a different dataset, and is parsed again
    _write(b, bif_text + "\n")
    assert bif_file_id(str(b)) != bif_file_id(str(a))
    after = load_network(str(b))
    assert after is not before
    assert after.nodes == before.nodes


def test_missing_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no BIF file"):
        load_network(str(tmp_path / "missing.bif"))
    (tmp_path / "dir.bif").mkdir()
    with pytest.raises(DatasetNotFoundError, match="no BIF file"):
        load_network(str(tmp_path / "dir.bif"))
    bad = _write(tmp_path / "bad.bif", "network x { }\nvariable A { type discrete [ 2 ] { a")
    with pytest.raises(BifParseError):
        load_network(str(bad))
    notgz = tmp_path / "plain.bif.gz"
    notgz.write_text("not gzip", encoding="utf-8")
    with pytest.raises(BifParseError, match="cannot read"):
        load_network(str(notgz))
    with pytest.raises(DatasetNotFoundError, match="not a BIF file name"):
        bif_file_id("alarm")
    # a name that is neither bundled nor a file says how to give a file
    with pytest.raises(DatasetNotFoundError, match=r"\.bif or \.bif\.gz"):
        load_network("no-such-network")


def test_datasets_show_and_sample_take_a_file(tmp_path: Path, bif_text: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "mine.bif.gz", bif_text)
    assert main(["datasets", "show", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in doc["nodes"]] == list(load_network(SPEC).nodes)
    out = tmp_path / "s.csv"
    assert main(["datasets", "sample", str(path), "--rows", "50", "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0] == ",".join(load_network(SPEC).nodes)


def test_discover_on_a_file_records_it_by_content(tmp_path: Path, bif_text: str) -> None:
    path = _write(tmp_path / "mine.bif", bif_text)
    out, ledger = tmp_path / "r.json", tmp_path / "l.sqlite"
    code = main(["discover", "--dataset", str(path), "--rows", "2000", "--seed", "3",
                 "--algorithm", "laplace-pc", "--epsilon", "1", "--ledger", str(ledger),
                 "--lifetime-epsilon", "3", "--out", str(out), "--quiet"])
    assert code == 0
    doc = json.loads(out.read_text())
    fid = bif_file_id(str(path))
    assert doc["data"] == {"source": "bif", "dataset": str(path), "id": fid,
                           "rows": 2000, "seed": 3}
    assert "skeleton_f1" in doc["metrics"]
    assert doc["ledger"]["dataset_id"] == f"{fid}:rows=2000:seed=3"
    from accounting.ledger import Ledger

    led = Ledger.open(ledger)
    assert led.verify().ok
    # the result's truth comes from the file while it is unchanged
    res = load_result(out)
    truth = res.truth()
    assert truth is not None
    assert truth.n_edges == load_network(SPEC).true_cpdag().n_edges
    _write(path, bif_text + "\n")
    assert load_result(out).truth() is None


def test_discover_on_a_missing_file_spends_nothing(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "l.sqlite"
    code = main(["discover", "--dataset", str(tmp_path / "gone.bif.gz"), "--algorithm",
                 "laplace-pc", "--epsilon", "1", "--ledger", str(ledger),
                 "--lifetime-epsilon", "3", "--quiet"])
    assert code == 2
    assert "no BIF file" in capsys.readouterr().err
    assert not ledger.exists()


def test_benchmarks_name_a_file_by_its_stem() -> None:
    assert family_of("/data/nets/andes.bif.gz") == "andes"
    assert family_of("water") == "water"
    assert family_of("random:nodes=50,max_parents=3,card=2-4,seed=1,conc=1") == \
        "random 50 nodes"

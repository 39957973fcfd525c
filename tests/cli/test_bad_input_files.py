"""Review 2, defect C through ``dpcg discover``: a ``--schema`` or ``--background`` file
that is not UTF-8 (or not parseable JSON) is a project error, not a traceback, and
nothing is reserved: the ledger's rows are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError, SchemaError
from tests.cli.refusals import SEED_RUN, refused_cli, used_ledger

NOT_UTF8 = [b"\xff\xfe{\x00}\x00", '{"required_edges": []}'.encode("utf-16"),
            b'{"columns": "\xe9"}']
NOT_JSON = ['{"required_edges": ' + "[" * 100_000 + "]" * 100_000 + "}",
            '{"required_edges": [[1' + "0" * 5000 + ", 2]]}"]


@pytest.fixture(scope="module")
def asia_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("asia")
    ds: Dataset = load_network("asia").sample(500, 0)
    ds.to_csv(tmp / "asia.csv")
    (tmp / "asia.schema.json").write_text(ds.schema.to_json())
    return tmp / "asia.csv", tmp / "asia.schema.json"


@pytest.mark.parametrize("content", NOT_UTF8, ids=["utf16-bom", "utf16", "latin1"])
def test_schema_not_utf8(content: bytes, asia_files: tuple[Path, Path], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = asia_files
    bad = tmp_path / "s.json"
    bad.write_bytes(content)
    led = used_ledger(tmp_path, capsys)
    for algorithm in ("laplace-pc", "pc"):
        argv = ["discover", "--data", str(data), "--schema", str(bad), "--algorithm",
                algorithm, "--quiet"]
        if algorithm != "pc":
            argv += ["--epsilon", "1", "--dataset-id", "asia", "--ledger", str(led)]
        err = refused_cli(argv, led, SchemaError, capsys, fragment="UTF-8",
                          absent=["0xff", "0xe9", "position"])
        assert str(bad) in err


@pytest.mark.parametrize("content", NOT_UTF8, ids=["utf16-bom", "utf16", "latin1"])
def test_background_not_utf8(content: bytes, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bg.json"
    bad.write_bytes(content)
    led = used_ledger(tmp_path, capsys)
    err = refused_cli([*SEED_RUN, "--ledger", str(led), "--background", str(bad)], led,
                      AlgorithmError, capsys, fragment="--background",
                      absent=["0xff", "0xe9", "position"])
    assert "UTF-8" in err


@pytest.mark.parametrize("text", NOT_JSON, ids=["deep", "long-int"])
def test_background_unparseable(text: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bg.json"
    bad.write_text(text)
    led = used_ledger(tmp_path, capsys)
    refused_cli([*SEED_RUN, "--ledger", str(led), "--background", str(bad)], led,
                AlgorithmError, capsys, fragment="--background")


def test_schema_unparseable_number(asia_files: tuple[Path, Path], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = asia_files
    bad = tmp_path / "s.json"
    bad.write_text('{"columns": [{"name": "asia", "type": "continuous", "lower": 0, '
                   '"upper": 1' + "0" * 5000 + "}]}")
    led = used_ledger(tmp_path, capsys)
    refused_cli(["discover", "--data", str(data), "--schema", str(bad), "--algorithm",
                 "laplace-pc", "--epsilon", "1", "--dataset-id", "asia", "--quiet",
                 "--ledger", str(led)], led, SchemaError, capsys, fragment="not valid JSON")

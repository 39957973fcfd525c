"""Pre-flight of what an algorithm decides before its first release (found by a review,
2026-12-02): an inconsistent ``--background`` and a budget too small for a mechanism's
sampler used to fail only after the run was reserved (an ``error`` run holding budget).
Now both fail before the ledger is touched: a registered dataset keeps its rows and
its remaining lifetime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounting.errors import AccountingError, InvalidParameterError
from dpcg.errors import AlgorithmError, DpcgError
from tests.hardening.helpers import cli, continuous_table, raw, row_counts


def _registered(tmp_path: Path, capsys: pytest.CaptureFixture[str], dataset_id: str) -> Path:
    led = tmp_path / "l.sqlite"
    assert cli(["ledger", "init", str(led), "--dataset-id", dataset_id, "--epsilon", "10",
                "--delta", "1e-5"], capsys).code == 0
    return led


def _refused(argv: list[str], led: Path, error: type[Exception], fragment: str,
             capsys: pytest.CaptureFixture[str]) -> None:
    before = row_counts(led)
    shown = cli(["ledger", "show", str(led)], capsys).out
    got = cli(argv, capsys)
    assert got.code == 2, got.err
    assert fragment in got.err
    with pytest.raises(error):
        raw(argv)
    assert issubclass(error, DpcgError | AccountingError)
    assert row_counts(led) == before
    assert cli(["ledger", "show", str(led)], capsys).out == shown
    assert cli(["ledger", "verify", str(led)], capsys).code == 0


BACKGROUNDS = [
    ({"required_edges": [["asia", "NOSUCH"]]}, "unknown variable"),
    ({"required_edges": [["asia", "tub"]], "forbidden_edges": [["tub", "asia"]]},
     "both required and forbidden"),
    ({"required_orientations": [["asia", "tub"], ["tub", "asia"]]}, "asia"),
]


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc"])
@pytest.mark.parametrize(("knowledge", "fragment"), BACKGROUNDS)
def test_inconsistent_background_reserves_nothing(
        algorithm: str, knowledge: dict[str, list[list[str]]], fragment: str,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = _registered(tmp_path, capsys, "asia-bg")
    bg = tmp_path / "bg.json"
    bg.write_text(json.dumps(knowledge))
    _refused(["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", algorithm,
              "--epsilon", "0.5", "--noise-seed", "1", "--quiet", "--ledger", str(led),
              "--dataset-id", "asia-bg", "--background", str(bg)],
             led, AlgorithmError, fragment, capsys)


@pytest.mark.parametrize(("algorithm", "extra"), [
    ("priv-pc", ["--test-epsilon", "1e-300"]), ("priv-pc", ["--epsilon", "1e-200"]),
    ("svt-pc", ["--test-epsilon", "1e-300"]), ("svt-pc", ["--epsilon", "1e-200"]),
    ("laplace-pc", ["--epsilon", "1e-200"])])
def test_sieve_budget_below_its_samplers_reserves_nothing(
        algorithm: str, extra: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    led = _registered(tmp_path, capsys, "asia-tiny")
    argv = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", algorithm,
            "--noise-seed", "1", "--quiet", "--ledger", str(led), "--dataset-id",
            "asia-tiny", "--epsilon", "0.5", *extra]
    _refused(argv, led, InvalidParameterError, "too small", capsys)


def test_private_ci_pc_budget_below_its_sampler_reserves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    led = _registered(tmp_path, capsys, "sem4-tiny")
    _refused(["discover", "--data", str(data), "--schema", str(schema), "--dataset-id",
              "sem4-tiny", "--algorithm", "private-ci-pc", "--epsilon", "1e-12",
              "--noise-seed", "1", "--quiet", "--ledger", str(led)],
             led, InvalidParameterError, "too small", capsys)

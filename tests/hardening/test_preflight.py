"""Pre-flight, then charge (issue 19, item 2): every error that is knowable without
spending fails before the run is reserved. For each error class: exit status 2, the
project's exception type and message, and no new row in ``entries``, ``runs`` or
``datasets`` of the ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounting.errors import (
    AccountingError,
    BudgetExceededError,
    KeyFileError,
    WrongKeyError,
)
from dpcg.errors import AlgorithmError, DataValidationError, DpcgError
from tests.hardening.helpers import cli, raw, row_counts

BASE = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", "laplace-pc",
        "--epsilon", "1", "--max-depth", "1", "--noise-seed", "1", "--quiet"]


def _check(argv: list[str], ledger: Path, error: type[Exception], fragment: str,
           capsys: pytest.CaptureFixture[str]) -> str:
    """Exit 2 with ``fragment`` in the one error line, ``error`` raised by the handler,
    and the ledger's rows unchanged by both attempts."""
    before = row_counts(ledger)
    got = cli(argv, capsys)
    assert got.code == 2
    assert fragment in got.err
    assert got.err.startswith("dpcg discover: error: ")
    with pytest.raises(error):
        raw(argv)
    assert issubclass(error, DpcgError | AccountingError)
    assert row_counts(ledger) == before
    return got.err.strip()


def _spent_nothing(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dpcg ledger show`` still verifies (when the file exists)."""
    if ledger.exists():
        assert cli(["ledger", "verify", str(ledger)], capsys).code == 0


def test_unwritable_out_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    err = _check([*BASE, "--ledger", str(led), "--out", str(tmp_path / "no" / "r.json")],
                 led, DpcgError, "--out", capsys)
    assert "nothing was run or charged" in err
    assert not led.exists()


def test_out_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    _check([*BASE, "--ledger", str(led), "--out", str(tmp_path)], led, DpcgError,
           "is a directory", capsys)
    assert not led.exists()


@pytest.mark.parametrize("flag", ["--dot", "--graphml", "--diagnostics"])
def test_unwritable_side_outputs(flag: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    _check([*BASE, "--ledger", str(led), "--out", str(tmp_path / "r.json"), flag,
            str(tmp_path / "missing-dir" / "f")], led, DpcgError, flag, capsys)
    assert not (tmp_path / "r.json").exists()


def test_add_remove_dataset_fails_before_reserving(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    assert cli(["ledger", "init", str(led), "--dataset-id", "ar", "--epsilon", "10",
                "--delta", "1e-5", "--relation", "add-remove"], capsys).code == 0
    err = _check([*BASE, "--ledger", str(led), "--dataset-id", "ar"], led, AlgorithmError,
                 "add-remove", capsys)
    assert "nothing was reserved" in err
    _spent_nothing(led, capsys)


def test_new_dataset_lifetime_below_the_run(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    _check([*BASE, "--ledger", str(led), "--lifetime-epsilon", "0.5"], led,
           BudgetExceededError, "lifetime", capsys)
    assert row_counts(led)["datasets"] == 0  # no registration left behind


def test_remaining_lifetime_below_the_run(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    assert cli([*BASE, "--ledger", str(led), "--lifetime-epsilon", "1.5",
                "--lifetime-delta", "1e-5"], capsys).code == 0
    _check([*BASE, "--ledger", str(led)], led, BudgetExceededError, "lifetime", capsys)
    _spent_nothing(led, capsys)


def test_explicit_lifetime_for_a_registered_id(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    assert cli([*BASE, "--ledger", str(led), "--lifetime-epsilon", "3",
                "--lifetime-delta", "1e-5"], capsys).code == 0
    _check([*BASE, "--ledger", str(led), "--lifetime-epsilon", "4"], led, AlgorithmError,
           "never changes", capsys)


@pytest.fixture
def signed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    pytest.importorskip("cryptography")
    monkeypatch.delenv("DPCG_LEDGER_KEY", raising=False)
    key, other, led = tmp_path / "k.key", tmp_path / "o.key", tmp_path / "l.sqlite"
    assert cli(["ledger", "keygen", "--out", str(key)], capsys).code == 0
    assert cli(["ledger", "keygen", "--out", str(other)], capsys).code == 0
    assert cli(["ledger", "init", str(led), "--dataset-id", "bundled:asia:rows=2000:seed=0",
                "--epsilon", "10", "--delta", "1e-5", "--signing-key", str(key)],
               capsys).code == 0
    return key, other, led


def test_signed_ledger_without_a_key(signed: tuple[Path, Path, Path],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, _, led = signed
    _check([*BASE, "--ledger", str(led)], led, KeyFileError, "key", capsys)


def test_signed_ledger_with_the_wrong_key(signed: tuple[Path, Path, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, other, led = signed
    _check([*BASE, "--ledger", str(led), "--ledger-key", str(other)], led, WrongKeyError,
           "key", capsys)


def test_signed_ledger_with_its_key_runs(signed: tuple[Path, Path, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    key, _, led = signed
    before = row_counts(led)
    got = cli([*BASE, "--ledger", str(led), "--ledger-key", str(key), "--out",
               str(tmp_path / "r.json")], capsys)
    assert got.code == 0, got.err
    after = row_counts(led)
    assert after["runs"] == before["runs"] + 1
    assert after["entries"] > before["entries"]


OPTION_ERRORS: list[tuple[list[str], type[Exception], str]] = [
    (["--cutoff", "3"], AlgorithmError, "--cutoff"),
    (["--test", "privgcm"], AlgorithmError, "privgcm"),
    (["--delta", "2"], AlgorithmError, "delta"),
    (["--alpha", "1.5"], DpcgError, "--alpha"),
    (["--max-depth", "-1"], AlgorithmError, "--max-depth"),
]


@pytest.mark.parametrize(("extra", "error", "fragment"), OPTION_ERRORS)
def test_options_invalid_for_the_algorithm(extra: list[str], error: type[Exception],
                                           fragment: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    _check([*BASE, "--ledger", str(led), *extra], led, error, fragment, capsys)
    assert not led.exists()


def test_schema_error_spends_nothing(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    data.write_text("a,b\nx,y\nz,y\n")
    schema.write_text(json.dumps({"columns": [
        {"name": "a", "type": "categorical", "categories": ["x", "y"]},
        {"name": "b", "type": "categorical", "categories": ["x", "y"]}]}))
    _check(["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
            "laplace-pc", "--epsilon", "1", "--dataset-id", "t", "--ledger", str(led),
            "--quiet"], led, DataValidationError, "'a'", capsys)
    assert not led.exists()


def test_result_is_written_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing write leaves the previous result whole and no temp file behind."""
    import os

    out = tmp_path / "r.json"
    out.write_text('{"old": true}\n')
    real = os.replace

    def broken(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    got = cli([*BASE, "--no-ledger", "--out", str(out)], capsys)
    assert got.code == 2
    assert json.loads(out.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    monkeypatch.setattr(os, "replace", real)
    assert cli([*BASE, "--no-ledger", "--out", str(out)], capsys).code == 0
    assert "edges" in json.loads(out.read_text())


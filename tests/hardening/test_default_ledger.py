"""The per-user default ledger (issue 19, item 4): without ``--ledger`` every private run
of one user charges the same file, from any working directory, and prints its path and
the dataset's remaining lifetime. HOME is a temporary directory here (never the real one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hardening.helpers import cli

ARGS = ["discover", "--dataset", "cancer", "--rows", "500", "--algorithm", "laplace-pc",
        "--epsilon", "1", "--max-depth", "0", "--lifetime-epsilon", "1.4",
        "--lifetime-delta", "1e-5", "--out", "r.json"]


def test_one_lifetime_per_user_from_any_directory(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.delenv("DPCG_LEDGER", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    expected = home / ".local" / "share" / "dpcg" / "ledger.sqlite"
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    got = cli(ARGS, capsys)
    assert got.code == 0, got.err
    assert json.loads((first / "r.json").read_text())["ledger"]["path"] == str(expected)
    # the run closed having spent 1/2 of its eps 1 and none of its delta: the lifetime is
    # charged that (docs/privacy/ledger-composition.md), so 1.4 - 0.5 = 0.9 remain
    assert got.err.splitlines()[0] == (
        f"ledger: {expected}; dataset 'bundled:cancer:rows=500:seed=0': remaining lifetime "
        "epsilon=0.9, delta=1e-05 (after this run; the lifetime is per ledger file and "
        "dataset id)")
    assert (expected.parent.stat().st_mode & 0o777) == 0o700
    # another directory: the same file, so the same lifetime (0.9 left < 1: refused)
    monkeypatch.chdir(second)
    got = cli([a for a in ARGS if a not in ("--lifetime-epsilon", "1.4", "--lifetime-delta",
                                            "1e-5")], capsys)
    assert got.code == 2
    assert "remaining lifetime" in got.err
    assert not list(second.glob("*.sqlite"))


def test_dpcg_ledger_and_the_flag_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", str(tmp_path / "env.sqlite"))
    assert cli(ARGS, capsys).code == 0
    assert (tmp_path / "env.sqlite").exists()
    got = cli([*ARGS, "--ledger", str(tmp_path / "flag.sqlite")], capsys)
    assert got.code == 0
    assert f"ledger: {tmp_path / 'flag.sqlite'};" in got.err
    got = cli([a for a in ARGS if a not in ("--lifetime-epsilon", "1.4", "--lifetime-delta",
                                            "1e-5")] + ["--no-ledger"], capsys)
    assert got.code == 0
    assert got.err.splitlines()[0] == (
        "ledger: none (--no-ledger: nothing durable, no lifetime enforced)")

"""A stale ``discover_flags.json`` (an option field added to an existing algorithm but not
yet in the manifest) never drops a flag silently: the field reaches the request, so a bad
value is refused before anything is charged (found by the privacy review of 2026-12-03,
where ``--level0 bogus`` ran with the default and charged the ledger)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcg.cli import discover_args
from tests.hardening.helpers import cli, row_counts


def _stale_manifest(tmp_path: Path, drop: str) -> Path:
    data = json.loads(discover_args.MANIFEST.read_text())
    data["flags"] = [f for f in data["flags"] if f["flag"] != drop]
    out = tmp_path / "discover_flags.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(("flag", "bad", "good"), [("--level0", "bogus", "tables")])
def test_a_field_missing_from_the_manifest_still_reaches_the_request(
        flag: str, bad: str, good: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(discover_args, "MANIFEST", _stale_manifest(tmp_path, flag))
    led = tmp_path / "l.sqlite"
    assert cli(["ledger", "init", str(led), "--dataset-id", "asia-s", "--epsilon", "10",
                "--delta", "1e-5"], capsys).code == 0
    before = row_counts(led)
    base = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", "marginal-pc",
            "--epsilon", "0.5", "--noise-seed", "1", "--quiet", "--ledger", str(led),
            "--dataset-id", "asia-s"]
    got = cli([*base, flag, bad], capsys)
    assert got.code == 2, got.err
    assert "level0" in got.err
    assert row_counts(led) == before
    out = tmp_path / "r.json"
    ok = cli([*base, flag, good, "--out", str(out)], capsys)
    assert ok.code == 0, ok.err
    assert json.loads(out.read_text())["plan"]["level0"] == good

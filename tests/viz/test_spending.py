"""``dpcg ledger plot``: a verified ledger's spending; corrupt and foreign ledgers refused."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.errors import LedgerCorruptError, LedgerError
from dpcg.cli import main
from dpcg.viz.spending import plot_spending, read_spending
from tests.viz.conftest import DATASET, make_ledger

pytest.importorskip("matplotlib")


def test_read_spending(ledger_path: Path) -> None:
    spending = read_spending(ledger_path)
    assert spending.report.ok
    (d,) = spending.datasets
    assert d.dataset_id == DATASET
    assert d.lifetime_epsilon == 3
    assert len(d.runs) == 3
    assert d.reserved_epsilon == Fraction(3, 2)
    assert [t for t, _, _ in d.runs] == sorted(t for t, _, _ in d.runs)


def test_plot_png_and_svg(ledger_path: Path, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "spend.png"
    assert main(["ledger", "plot", str(ledger_path), "--out", str(out)]) == 0
    assert "verifies" in capsys.readouterr().out
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    svg = plot_spending(ledger_path, fmt="svg").decode()
    assert "VERIFIED" in svg
    assert DATASET in svg
    assert "lifetime epsilon" in svg


def test_empty_ledger(tmp_path: Path) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "empty.db"
    with Ledger.open(path, create=True):
        pass
    assert "no datasets registered" in plot_spending(path, fmt="svg").decode()


def test_corrupt_ledger_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    make_ledger(path, runs=1)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE entries SET purpose='edited' WHERE seq=3")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerCorruptError, match="does not verify"):
        plot_spending(path, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    assert main(["ledger", "plot", str(path), "--out", str(tmp_path / "x.png")]) == 2
    assert "does not verify" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_missing_and_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        plot_spending(tmp_path / "nope.db", tmp_path / "x.png")
    junk = tmp_path / "junk.db"
    junk.write_text("not a ledger", encoding="utf-8")
    with pytest.raises(LedgerError):
        plot_spending(junk, tmp_path / "x.png")


def test_bad_format(ledger_path: Path, tmp_path: Path) -> None:
    from dpcg.errors import DpcgError

    with pytest.raises(DpcgError, match=r"\.png or \.svg"):
        plot_spending(ledger_path, tmp_path / "x.gif")

"""Exported JSON certificates verify offline; any tampering makes them fail."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from accounting.errors import ForeignLedgerError, LedgerCorruptError, LedgerError
from accounting.ledger import Ledger, check_certificate, verify_certificate

from .conftest import populate


@pytest.fixture
def cert(ledger: Ledger, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    populate(ledger)
    path = tmp_path / "cert.json"
    report = ledger.export(path)
    assert report.ok
    return path, json.loads(path.read_text())


def test_certificate_contents(ledger: Ledger, cert: tuple[Path, dict[str, Any]]) -> None:
    path, data = cert
    assert data["format"] == "dpcg-ledger-certificate"
    assert data["format_version"] == 1
    assert data["ledger_id"] == ledger.ledger_id
    assert data["head_hash"] == ledger.head_hash()
    assert data["entries"] == ledger.entries()
    (ds,) = data["datasets"]
    assert ds["dataset_id"] == "survey-2024"
    assert ds["relation"] == "replace-one"
    assert ds["lifetime"] == {"epsilon": "2", "delta": str(__import__("fractions").Fraction(1e-6))}
    run_a, run_b = data["runs"]
    assert run_a["rule"] == "basic"
    assert run_a["budget"] == {"epsilon": "1", "delta": "0"}
    assert run_a["spent"]["basic"]["epsilon"] == "3/4"
    assert run_b["rule"] == "zcdp"
    assert "basic" not in run_b["spent"]  # the Gaussian has no pure epsilon bound
    assert run_b["spent"]["zcdp"]["rho"] == "1/512"
    report = verify_certificate(path)
    assert report.ok, report.problems
    assert report.head_hash == ledger.head_hash()
    assert report.summary()["runs"] == ledger.verify().summary()["runs"]
    assert verify_certificate(path, expected_head=ledger.head_hash()).ok


def test_certificate_verifies_without_sqlite(cert: tuple[Path, dict[str, Any]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = cert

    def no_sqlite(*args: object, **kwargs: object) -> None:
        raise AssertionError("verify_certificate must not use SQLite")

    monkeypatch.setattr(sqlite3, "connect", no_sqlite)
    assert verify_certificate(path).ok


def _tamper(data: dict[str, Any], how: str) -> dict[str, Any]:
    d = copy.deepcopy(data)
    e = d["entries"]
    if how == "purpose":
        e[2]["purpose"] = "something else"
    elif how == "cost":
        e[2]["cost"]["epsilon"] = "1/8"
    elif how == "params":
        e[2]["params"]["epsilon"] = 0.125
    elif how == "output":
        e[3]["data"]["output"] = 13.5
    elif how == "delete":
        del e[4]
    elif how == "delete-last":
        del e[-1]
        d["head_hash"] = e[-1]["hash"]
    elif how == "swap":
        e[4], e[5] = e[5], e[4]
    elif how == "swap-seq":
        e[4]["seq"], e[5]["seq"] = e[5]["seq"], e[4]["seq"]
    elif how == "head":
        d["head_hash"] = "0" * 64
    elif how == "ledger_id":
        d["ledger_id"] = "f" * 32
    elif how == "runs-total":
        d["runs"][0]["spent"]["basic"]["epsilon"] = "1/2"
    elif how == "runs-budget":
        d["runs"][0]["budget"]["epsilon"] = "2"
    elif how == "lifetime":
        d["datasets"][0]["lifetime"]["epsilon"] = "3"
    elif how == "extra-key":
        e[1]["note"] = "hi"
    elif how == "timestamp":
        e[0]["timestamp"] = e[0]["timestamp"].replace("20", "21", 1)
    else:  # pragma: no cover
        raise AssertionError(how)
    return d


@pytest.mark.parametrize("how", [
    "purpose", "cost", "params", "output", "delete", "delete-last", "swap", "swap-seq", "head",
    "ledger_id", "runs-total", "runs-budget", "lifetime", "extra-key", "timestamp",
])
def test_tampered_certificate_fails(cert: tuple[Path, dict[str, Any]], tmp_path: Path,
                                    how: str) -> None:
    _, data = cert
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_tamper(data, how)))
    report = verify_certificate(bad)
    assert not report.ok
    with pytest.raises(LedgerCorruptError, match="does not verify"):
        report.raise_if_failed()


def test_pinned_head_catches_a_consistent_rewrite(cert: tuple[Path, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    from accounting.ledger._format import entry_hash

    _, data = cert
    published = data["head_hash"]
    forged = copy.deepcopy(data)
    forged["entries"][2]["purpose"] = "rewritten"
    prev = forged["genesis_hash"]
    for entry in forged["entries"]:
        entry["prev_hash"] = prev
        entry["hash"] = prev = entry_hash(entry)
    forged["head_hash"] = prev
    out = tmp_path / "forged.json"
    out.write_text(json.dumps(forged))
    assert verify_certificate(out).ok  # no signatures: a full rewrite is self-consistent
    assert not verify_certificate(out, expected_head=published).ok


def test_every_byte_flip_of_the_file_is_caught(cert: tuple[Path, dict[str, Any]],
                                               tmp_path: Path) -> None:
    path, data = cert
    raw = path.read_bytes()
    undetected = []
    for i in range(len(raw)):
        flipped = bytearray(raw)
        flipped[i] ^= 0x01
        try:
            parsed = json.loads(bytes(flipped))
        except ValueError:
            continue  # not even JSON: verify_certificate raises ForeignLedgerError
        try:
            report = check_certificate(parsed)
        except (ForeignLedgerError, LedgerCorruptError):
            continue
        if report.ok and parsed != data:
            undetected.append(i)
    assert not undetected, [raw[max(0, i - 20): i + 20] for i in undetected[:3]]


def test_foreign_certificates(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text("not json")
    with pytest.raises(ForeignLedgerError, match="not JSON"):
        verify_certificate(p)
    p.write_text(json.dumps({"format": "something"}))
    with pytest.raises(ForeignLedgerError, match="not a dpcg ledger certificate"):
        verify_certificate(p)
    p.write_text(json.dumps({"format": "dpcg-ledger-certificate", "format_version": 9}))
    with pytest.raises(ForeignLedgerError, match="version 9"):
        verify_certificate(p)
    with pytest.raises(LedgerError):
        verify_certificate(tmp_path / "missing.json")


def test_export_refuses_a_corrupt_ledger(ledger: Ledger, ledger_path: Path,
                                         tmp_path: Path) -> None:
    populate(ledger)
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE entries SET purpose='x' WHERE seq=3")
    conn.commit()
    conn.close()
    out = tmp_path / "cert.json"
    with pytest.raises(LedgerCorruptError, match="entry 3"):
        ledger.export(out)
    assert not out.exists()


def test_empty_ledger_certificate(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "e.db", create=True) as led:
        report = led.export(tmp_path / "e.json")
    assert report.ok
    assert report.head_hash is None
    assert verify_certificate(tmp_path / "e.json").ok

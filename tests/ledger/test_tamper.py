"""verify() detects every edit of a stored entry, deletions, reorders and edited totals."""

from __future__ import annotations

import math
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounting.ledger import Ledger
from accounting.ledger._format import STORED_FIELDS

from .conftest import populate, state


@pytest.fixture
def tampered(ledger: Ledger, ledger_path: Path,
             tmp_path: Path) -> Iterator[tuple[Ledger, sqlite3.Connection]]:
    """A populated ledger copy, a Ledger on it and a raw connection for tampering."""
    populate(ledger)
    assert ledger.verify().ok
    ledger.close()
    state(ledger_path)  # checkpoint into the main file
    copy = tmp_path / "copy.db"
    shutil.copy(ledger_path, copy)
    raw = sqlite3.connect(copy, isolation_level=None)
    raw.execute("PRAGMA synchronous=OFF")
    led = Ledger.open(copy)
    yield led, raw
    led.close()
    raw.close()


def _flip(text: str, i: int) -> str:
    return text[:i] + chr(ord(text[i]) ^ 0x01) + text[i + 1:]


def _mutations(value: Any) -> Iterator[Any]:
    """Every single-byte flip of a text value, and small changes of numbers/NULLs."""
    if isinstance(value, str):
        for i in range(len(value)):
            yield _flip(value, i)
        yield value + " "
        yield value[:-1]
    elif isinstance(value, bool | int):
        yield value + 1000
        yield value ^ 1
    elif isinstance(value, float):
        yield math.nextafter(value, math.inf)
        yield -value if value else 1.0
        yield str(value)  + "x"
    elif value is None:
        yield 0
        yield ""


def _check(led: Ledger, raw: sqlite3.Connection, sql: str, args: tuple[Any, ...],
           restore: tuple[Any, ...], what: str) -> None:
    raw.execute(sql, args)
    try:
        report = led.verify()
        assert not report.ok, f"not detected: {what}"
        assert report.problems
    finally:
        raw.execute(sql, restore)


def test_every_byte_flip_of_an_entry_is_detected(
        tampered: tuple[Ledger, sqlite3.Connection]) -> None:
    led, raw = tampered
    rows = raw.execute(f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq").fetchall()
    kinds = [r[1] for r in rows]
    # one entry of every kind, plus the head (last) entry
    chosen = sorted({kinds.index(k) for k in set(kinds)} | {len(rows) - 1})
    tried = 0
    for idx in chosen:
        row = rows[idx]
        seq = row[0]
        for col, original in zip(STORED_FIELDS, row, strict=True):
            if col == "seq":
                continue  # sequence edits are covered by the reorder/delete tests
            for new in (m for m in _mutations(original) if m != original):
                sql = f"UPDATE entries SET {col}=? WHERE seq=?"
                _check(led, raw, sql, (new, seq), (original, seq), f"seq {seq} {col}={new!r}")
                tried += 1
    assert tried > 1000
    assert led.verify().ok


@pytest.mark.parametrize("victim", range(1, 10))
def test_deleting_any_entry_is_detected(tampered: tuple[Ledger, sqlite3.Connection],
                                        victim: int) -> None:
    led, raw = tampered
    raw.execute("DELETE FROM entries WHERE seq=?", (victim,))
    report = led.verify()
    assert not report.ok


def test_deleting_the_last_entry_and_fixing_nothing_else(
        tampered: tuple[Ledger, sqlite3.Connection]) -> None:
    led, raw = tampered
    raw.execute("DELETE FROM entries WHERE seq=(SELECT MAX(seq) FROM entries)")
    report = led.verify()
    assert not report.ok
    assert any("runs table" in p for p in report.problems)


@pytest.mark.parametrize(("a", "b"), [(1, 2), (3, 5), (4, 5), (8, 9), (2, 9)])
def test_reordering_entries_is_detected(tampered: tuple[Ledger, sqlite3.Connection],
                                        a: int, b: int) -> None:
    led, raw = tampered
    raw.execute("BEGIN")
    raw.execute("UPDATE entries SET seq=-1 WHERE seq=?", (a,))
    raw.execute("UPDATE entries SET seq=? WHERE seq=?", (a, b))
    raw.execute("UPDATE entries SET seq=? WHERE seq=-1", (b,))
    raw.execute("COMMIT")
    report = led.verify()
    assert not report.ok
    assert any("hash" in p or "sequence" in p for p in report.problems)


def test_renumbering_is_detected(tampered: tuple[Ledger, sqlite3.Connection]) -> None:
    led, raw = tampered
    raw.execute("UPDATE entries SET seq=seq+100 WHERE seq>=5")
    assert not led.verify().ok


@pytest.mark.parametrize("table", ["datasets", "runs"])
def test_modified_totals_are_detected(tampered: tuple[Ledger, sqlite3.Connection],
                                      table: str) -> None:
    led, raw = tampered
    key = "dataset_id" if table == "datasets" else "run_id"
    cols = [r[1] for r in raw.execute(f"PRAGMA table_info({table})")]
    rows = raw.execute(f"SELECT * FROM {table}").fetchall()
    for row in rows:
        for col, original in zip(cols, row, strict=True):
            if col == key:
                continue
            for new in [m for m in _mutations(original) if m != original][:6]:
                sql = f"UPDATE {table} SET {col}=? WHERE {key}=?"
                _check(led, raw, sql, (new, row[0]), (original, row[0]), f"{table}.{col}={new!r}")
    raw.execute(f"DELETE FROM {table} WHERE {key}=?", (rows[0][0],))
    assert not led.verify().ok


def test_inserted_totals_row_is_detected(tampered: tuple[Ledger, sqlite3.Connection]) -> None:
    led, raw = tampered
    raw.execute("INSERT INTO datasets(dataset_id, epsilon, delta) VALUES ('ghost', '1', '0')")
    assert not led.verify().ok


@pytest.mark.parametrize("key", ["ledger_id", "created_at"])
def test_metadata_edits_break_the_genesis(tampered: tuple[Ledger, sqlite3.Connection],
                                          key: str) -> None:
    _, raw = tampered
    raw.execute("UPDATE metadata SET value=value || '0' WHERE key=?", (key,))
    path = raw.execute("PRAGMA database_list").fetchone()[2]
    with Ledger.open(path) as led:
        report = led.verify()
    assert not report.ok
    assert any("entry 1" in p and "prev_hash" in p for p in report.problems)


def test_consistent_rewrite_of_the_whole_chain_is_not_detected_without_a_pinned_head(
        tampered: tuple[Ledger, sqlite3.Connection]) -> None:
    """Documented limit (docs/ledger.md): an attacker who recomputes every later hash
    and the totals passes verify(); only a head hash published elsewhere catches it."""
    from accounting.ledger._format import entry_hash, genesis_hash

    led, raw = tampered
    old_head = led.head_hash()
    records = led.entries()
    records[2]["purpose"] = "rewritten"
    prev = genesis_hash(led.ledger_id, led.created_at)
    for rec in records:
        rec["prev_hash"] = prev
        rec["hash"] = prev = entry_hash(rec)
        raw.execute("UPDATE entries SET purpose=?, prev_hash=?, hash=? WHERE seq=?",
                    (rec["purpose"], rec["prev_hash"], rec["hash"], rec["seq"]))
    report = led.verify()
    assert report.ok
    assert report.head_hash != old_head  # ... but the head moved: a pinned head catches it
    assert not led.verify(expected_head=old_head).ok
    pinned = led.verify(contains=old_head)
    assert not pinned.ok
    assert "pinned hash" in pinned.problems[0]

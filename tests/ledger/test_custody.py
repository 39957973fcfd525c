"""Writers verify before they append (issue 55, item 1).

An attacker who can write the SQLite file but holds no signing key edits it with the
standard library (``sqlite3``, SHA-256, the documented canonical JSON). The next writer
(an ordinary ``dpcg discover`` holding ``$DPCG_LEDGER_KEY``, or ``Ledger.open_run``)
must refuse, writing nothing, and ``verify --public-key`` must keep failing, with and
without ``--head``. ``EDITS`` below is the table of ``docs/ledger.md`` ("Edits and what
the next writer does"); ``test_the_docs_table_lists_every_edit`` keeps the two equal.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import (
    LedgerCorruptError,
    LedgerError,
    SigningError,
    UnsignedLedgerError,
    WrongKeyError,
)
from accounting.ledger import KEY_ENV, Ledger, generate_keypair
from accounting.ledger._format import STORED_FIELDS, canonical_json, entry_hash, genesis_hash
from dpcg.cli import main

from .conftest import ROOT, laplace_draft, state

pytest.importorskip("cryptography")

DATASET = "survey-2024"
JSON_COLUMNS = ("params", "cost", "data")


# ---------------------------------------------------------------------------------
# The attacker's toolbox (standard library only, from the documented format)
# ---------------------------------------------------------------------------------
def _decoded(row: tuple[Any, ...]) -> dict[str, Any]:
    rec = dict(zip(STORED_FIELDS, row, strict=True))
    for name in JSON_COLUMNS:
        if rec[name] is not None:
            rec[name] = json.loads(rec[name])
    if rec["seed_explicit"] is not None:
        rec["seed_explicit"] = bool(rec["seed_explicit"])
    return rec


def _records(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [_decoded(r) for r in conn.execute(
        f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq")]


def _write_back(conn: sqlite3.Connection, records: list[dict[str, Any]],
                rechain: bool) -> None:
    """Store ``records`` as the whole chain (renumbered 1..n), with every hash and link
    recomputed when ``rechain`` (a consistent rewrite), else as they are."""
    meta = dict(conn.execute("SELECT key, value FROM metadata").fetchall())
    prev = genesis_hash(meta["ledger_id"], meta["created_at"])
    conn.execute("DELETE FROM entries")
    for i, rec in enumerate(records, start=1):
        if rechain:
            rec["seq"], rec["prev_hash"] = i, prev
            rec["hash"] = entry_hash(rec)
        prev = rec["hash"]
        conn.execute(
            f"INSERT INTO entries({', '.join(STORED_FIELDS)}) VALUES "
            f"({', '.join('?' * len(STORED_FIELDS))})",
            [canonical_json(rec[k]) if k in JSON_COLUMNS and rec[k] is not None
             else int(rec[k]) if k == "seed_explicit" and rec[k] is not None else rec[k]
             for k in STORED_FIELDS])


def _fix_tables(conn: sqlite3.Connection) -> None:
    """Make the datasets/runs tables agree with the (edited) chain, as verify
    re-derives them (the attacker has the format)."""
    from accounting.ledger._verify import ChainChecker
    from accounting.ledger.store import _dataset_row, _run_row

    meta = dict(conn.execute("SELECT key, value FROM metadata").fetchall())
    checker = ChainChecker(genesis_hash(meta["ledger_id"], meta["created_at"]))
    for rec in _records(conn):
        checker.add(rec)
    conn.execute("DELETE FROM datasets")
    conn.execute("DELETE FROM runs")
    for d in checker.datasets.values():
        conn.execute("INSERT INTO datasets VALUES (?,?,?,?,?,?,?,?,?)", _dataset_row(d))
    for r in checker.runs.values():
        conn.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", _run_row(r))


Change = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _entry_edit(change: Change, *, rechain: bool, tables: bool = True,
                signatures: str = "keep") -> Callable[[sqlite3.Connection], None]:
    """Edit the chain with ``change``; optionally re-chain, fix the tables and do
    something to the head signatures (``keep``, ``delete`` them but keep the binding,
    ``repoint`` them at the new hashes)."""
    def apply(conn: sqlite3.Connection) -> None:
        _write_back(conn, change(_records(conn)), rechain)
        if tables:
            _fix_tables(conn)
        if signatures == "delete":
            conn.execute("DELETE FROM head_signatures")
        elif signatures == "repoint":
            for seq, h in conn.execute("SELECT seq, hash FROM entries").fetchall():
                conn.execute("UPDATE head_signatures SET hash=? WHERE seq=?", (h, seq))
    return apply


def _sql(*statements: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for stmt in statements:
            conn.execute(stmt)
    return apply


def _first(kind: str) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    return lambda recs: next(r for r in recs if r["kind"] == kind)


def _lifetime_raised(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    _first("dataset")(recs)["data"]["lifetime"]["epsilon"] = "100"
    return recs


def _budget_lowered(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last_open = [r for r in recs if r["kind"] == "run-open"][-1]
    last_open["data"]["budget"]["epsilon"] = "1/4"
    return recs


def _relabel(field: str, value: str, kinds: tuple[str, ...] = ("run-open",)) -> Change:
    def change(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for r in recs:
            if r["kind"] in kinds:
                r[field] = value
        return recs
    return change


def _cost_lowered(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    mech = _first("mechanism")(recs)
    mech["cost"]["epsilon"] = "1/1024"
    return recs


def _mechanism_deleted(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    doomed = [r for r in recs if r["kind"] == "mechanism"][-1]
    return [r for r in recs if r is not doomed and not (
        r["kind"] == "output" and r["data"].get("of_seq") == doomed["seq"])]


def _close_inserted(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Close the open run (a refund of its reservation) by inserting a run-close."""
    open_run = [r for r in recs if r["kind"] == "run-open"][-1]
    close = {**open_run, "kind": "run-close", "seed_explicit": None,
             "data": {"status": "completed"}}
    return [*recs, close]


def _purpose_edited(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    _first("output")(recs)["data"]["output"] = 0.0
    return recs


# ---------------------------------------------------------------------------------
# The signed ledger under attack
# ---------------------------------------------------------------------------------
@dataclass
class Signed:
    path: Path
    key: Path
    pub: Path
    head: Path  # a head exported after the first run


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    """Lifetime 4; run 1 (eps 1, spends 3/4 with an output, closed), head exported,
    run 2 (eps 1, open, spends 1/2): as the key holder's runs leave it."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    key, pub, _ = generate_keypair(tmp_path / "ops.key")
    path, head = tmp_path / "runs.db", tmp_path / "head.json"
    with Ledger.open(path, create=True, signing_key=key) as led:
        led.register_dataset(DATASET, Budget(4.0, 1e-6))
        run = led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
        seq = run.record(laplace_draft(0.5))
        run.record_output(seq, 12.5)
        run.record(laplace_draft(0.25))
        run.close()
        led.export_head(head)
        run2 = led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
        run2.record(laplace_draft(0.5))
        assert led.verify(public_key=pub, head=head).ok
    return Signed(path, key, pub, head)


def _tamper(path: Path, edit: Callable[[sqlite3.Connection], None]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        edit(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _verify_fails(s: Signed, *, head: bool) -> bool:
    """Whether ``verify --public-key`` (with ``--head`` when asked) rejects the ledger."""
    try:
        with Ledger.open(s.path) as led:
            return not led.verify(public_key=s.pub, head=s.head if head else None).ok
    except (SigningError, LedgerError):
        return True  # unsigned / another key / not a ledger any more: rejected too


def _next_writer(s: Signed) -> str:
    """What the next key-holding writer does: ``refused`` (nothing written) or
    ``admitted``."""
    before = state(s.path)
    try:
        with Ledger.open(s.path, signing_key=s.key) as led:
            led.open_run(DATASET, Budget(0.5), "basic", seed_explicit=False).close()
    except (LedgerCorruptError, UnsignedLedgerError, WrongKeyError):
        assert state(s.path) == before, "a refusal must write nothing"
        return "refused"
    return "admitted"


@dataclass(frozen=True)
class Edit:
    what: str
    apply: Callable[[sqlite3.Connection], None]
    writer: str  # what the next writer does: "refused" or "admitted"
    verify: str  # what `verify --public-key` (and with --head) says: "fails" / "passes"
    why: str


def _truncate_to_registration(conn: sqlite3.Connection) -> None:
    """Cut the chain back to its first signed head (the registration) and make everything
    left consistent (attacker.py's truncate): both runs' charges disappear."""
    conn.execute("DELETE FROM entries WHERE seq > 1")
    conn.execute("DELETE FROM head_signatures WHERE seq > 1")
    _fix_tables(conn)


EDITS: tuple[Edit, ...] = (
    # -- entries ----------------------------------------------------------------------
    Edit("lifetime raised in the registration entry, not re-chained",
         _entry_edit(_lifetime_raised, rechain=False), "refused", "fails",
         "entry 1 no longer matches its hash"),
    Edit("lifetime raised, re-chained, tables fixed, signatures deleted (binding kept)",
         _entry_edit(_lifetime_raised, rechain=True, signatures="delete"), "refused",
         "fails", "the head carries no signature by the key (issue 55, attack 1)"),
    Edit("lifetime raised, re-chained, tables fixed, signatures kept",
         _entry_edit(_lifetime_raised, rechain=True), "refused", "fails",
         "the stored head signature names another hash"),
    Edit("lifetime raised, re-chained, tables fixed, signatures re-pointed",
         _entry_edit(_lifetime_raised, rechain=True, signatures="repoint"), "refused",
         "fails", "the re-pointed signature does not verify"),
    Edit("last run's budget lowered 1 -> 1/4, re-chained, signatures deleted",
         _entry_edit(_budget_lowered, rechain=True, signatures="delete"), "refused",
         "fails", "unsigned head (a rewrite after the exported head: --head alone "
         "passes, --public-key fails)"),
    Edit("run-open kinds relabelled 'run-opened', runs rows and totals emptied",
         _entry_edit(_relabel("kind", "run-opened"), rechain=False), "refused", "fails",
         "the relabelled entries no longer match their hashes (issue 55, attack 2)"),
    Edit("run-open kinds relabelled, re-chained, signatures deleted",
         _entry_edit(_relabel("kind", "run-opened"), rechain=True, signatures="delete"),
         "refused", "fails", "unknown entry kind; unsigned head"),
    Edit("run-open dataset ids relabelled, re-chained, signatures deleted",
         _entry_edit(_relabel("dataset_id", "other"), rechain=True, signatures="delete"),
         "refused", "fails", "a run of an unregistered dataset; unsigned head"),
    Edit("dataset and run-open kinds renamed (a lifetime reset), re-chained",
         _entry_edit(_relabel("kind", "renamed", ("dataset", "run-open")), rechain=True,
                     signatures="delete"), "refused", "fails",
         "unknown entry kinds; unsigned head"),
    Edit("a mechanism's declared cost lowered, re-chained",
         _entry_edit(_cost_lowered, rechain=True, signatures="delete"), "refused", "fails",
         "unsigned head (verify also re-derives the cost from the parameters)"),
    Edit("the open run's mechanism entry deleted, re-chained",
         _entry_edit(_mechanism_deleted, rechain=True, signatures="delete"), "refused",
         "fails", "unsigned head"),
    Edit("a run-close inserted for the open run (a refund), re-chained",
         _entry_edit(_close_inserted, rechain=True, signatures="delete"), "refused",
         "fails", "unsigned head"),
    Edit("a released output changed, not re-chained",
         _entry_edit(_purpose_edited, rechain=False), "refused", "fails",
         "the output entry no longer matches its hash"),
    Edit("an entry deleted from the middle, not re-chained",
         _sql("DELETE FROM entries WHERE seq=3"), "refused", "fails",
         "a gap in the sequence numbers"),
    Edit("cut back to the registration (both runs deleted), everything left consistent",
         _truncate_to_registration, "admitted", "passes without --head; fails with it",
         "undetectable without an anchor: a signed prefix of the key holder's history; "
         "the exported head (kept by the reviewer) shows the cut"),
    # -- tables -----------------------------------------------------------------------
    Edit("datasets row: lifetime raised", _sql("UPDATE datasets SET epsilon='100'"),
         "refused", "fails", "the row differs from the chain"),
    Edit("datasets row: reserved totals lowered",
         _sql("UPDATE datasets SET reserved_epsilon='0', reserved_delta='0', n_runs=0"),
         "refused", "fails", "the row differs from the chain"),
    Edit("datasets row deleted", _sql("DELETE FROM datasets"), "refused", "fails",
         "the chain registers the id: not a new dataset"),
    Edit("runs rows deleted", _sql("DELETE FROM runs"), "refused", "fails",
         "a run-open entry without its row"),
    Edit("runs row: the open run marked completed (a refund)",
         _sql("UPDATE runs SET status='completed' WHERE status='open'"), "refused", "fails",
         "the row differs from the chain"),
    Edit("runs row: spending lowered", _sql("UPDATE runs SET spent_epsilon='0'"), "refused",
         "fails", "the row differs from the chain (admission never reads it)"),
    # -- signatures and binding ----------------------------------------------------------
    Edit("the head's signature deleted",
         _sql("DELETE FROM head_signatures WHERE seq=(SELECT max(seq) FROM entries)"),
         "refused", "fails", "the head carries no signature"),
    Edit("the head's signature replaced by another head's",
         _sql("UPDATE head_signatures SET signature=(SELECT signature FROM head_signatures "
              "WHERE seq=1) WHERE seq=(SELECT max(seq) FROM entries)"),
         "refused", "fails", "the signature does not verify"),
    Edit("an older head's signature deleted",
         _sql("DELETE FROM head_signatures WHERE seq=2"), "admitted", "passes",
         "harmless: the head's signature covers the whole history before it"),
    Edit("signature table dropped, binding kept", _sql("DROP TABLE head_signatures"),
         "refused", "fails", "the head carries no signature"),
    Edit("binding removed, signature table kept",
         _sql("DELETE FROM metadata WHERE key='signing_public_key'"), "refused", "fails",
         "signatures without a binding: the binding was removed"),
    Edit("binding and signatures removed (passed off as unsigned)",
         _sql("DELETE FROM metadata WHERE key='signing_public_key'",
              "DROP TABLE head_signatures"), "refused", "fails",
         "a writer holding a key refuses an unbound ledger; verify: UnsignedLedgerError"),
    Edit("binding replaced by the attacker's key", _sql(
        "UPDATE metadata SET value='" + "ab" * 32 + "' WHERE key='signing_public_key'"),
         "refused", "fails", "WrongKeyError: the writer's key is not the bound one"),
    # -- metadata -----------------------------------------------------------------------
    Edit("ledger id changed", _sql("UPDATE metadata SET value='0' WHERE key='ledger_id'"),
         "refused", "fails", "entry 1 no longer links to the genesis hash"),
    Edit("created_at changed",
         _sql("UPDATE metadata SET value='2000-01-01' WHERE key='created_at'"), "refused",
         "fails", "entry 1 no longer links to the genesis hash"),
)


@pytest.mark.parametrize("edit", EDITS, ids=[e.what for e in EDITS])
def test_every_edit_is_refused_by_the_next_writer(signed: Signed, edit: Edit) -> None:
    _tamper(signed.path, edit.apply)
    assert _next_writer(signed) == edit.writer
    if edit.writer == "refused":
        assert _verify_fails(signed, head=False)
        assert _verify_fails(signed, head=True)
    elif edit.verify == "passes":
        assert not _verify_fails(signed, head=False)
        assert not _verify_fails(signed, head=True)
    else:  # the truncation: only the exported head shows it
        assert not _verify_fails(signed, head=False)
        assert _verify_fails(signed, head=True)


def test_the_docs_table_lists_every_edit() -> None:
    """docs/ledger.md's table is this module's EDITS, row for row."""
    text = (ROOT / "docs" / "ledger.md").read_text(encoding="utf-8")
    section = text.split("### Edits and what the next writer does", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    documented = [tuple(c.strip() for c in row.strip("|").split("|")) for row in rows[1:]]
    assert documented == [(e.what, e.writer, e.verify, e.why) for e in EDITS]


# ---------------------------------------------------------------------------------
# The two attacks, end to end through `dpcg discover` and `dpcg ledger verify`
# ---------------------------------------------------------------------------------
def _discover(path: Path, *extra: str) -> int:
    return main(["discover", "--dataset", "asia", "--rows", "500", "--algorithm",
                 "laplace-pc", "--epsilon", "1", "--dataset-id", "asia-500", "--ledger",
                 str(path), "--quiet", *extra])


@pytest.fixture
def discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    """A signed ledger written by two ordinary `dpcg discover` runs (lifetime 4), with a
    head exported after the first."""
    key, pub, _ = generate_keypair(tmp_path / "ops.key")
    monkeypatch.setenv(KEY_ENV, str(key))
    path, head = tmp_path / "runs.db", tmp_path / "head.json"
    assert _discover(path, "--lifetime-epsilon", "4", "--lifetime-delta", "1e-5") == 0
    assert main(["ledger", "export-head", str(path), "--out", str(head)]) == 0
    assert _discover(path) == 0
    assert main(["ledger", "verify", str(path), "--public-key", str(pub), "--head",
                 str(head)]) == 0
    return Signed(path, key, pub, head)


def _cli_verify(s: Signed, *, head: bool) -> int:
    args = ["ledger", "verify", str(s.path), "--public-key", str(s.pub)]
    return main([*args, "--head", str(s.head)] if head else args)


@pytest.mark.parametrize("attack", ["lifetime 4 -> 100", "old run's budget 1 -> 1/4"])
def test_attack_1_a_normal_run_no_longer_resigns_a_tampered_ledger(
        discovered: Signed, attack: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Rewrite history, re-chain, fix the tables, delete the head signatures and keep
    the binding: the next `dpcg discover` (holding the key) refuses and writes nothing;
    `verify --public-key` fails with and without `--head`."""
    change = _lifetime_raised if attack.startswith("lifetime") else _budget_lowered
    _tamper(discovered.path, _entry_edit(change, rechain=True, signatures="delete"))
    before = state(discovered.path)
    capsys.readouterr()
    assert _discover(discovered.path) == 2
    err = capsys.readouterr().err
    # the lifetime edit is consistent: only the head's missing signature shows it; the
    # lowered budget is also below what the run spent, which the chain fold finds first
    assert "no valid signature" in err if attack.startswith("lifetime") \
        else "exceeds its reservation" in err
    assert "Traceback" not in err
    assert state(discovered.path) == before
    assert _cli_verify(discovered, head=False) == 1
    assert _cli_verify(discovered, head=True) == 1


@pytest.mark.parametrize("relabel", ["kind", "dataset_id", "lifetime reset"])
@pytest.mark.parametrize("rechain", [False, True])
def test_attack_2_relabelled_entries_refuse_the_reservation(
        discovered: Signed, relabel: str, rechain: bool,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Relabel the run-open entries (kind or dataset id; or both registration and
    run-opens for a lifetime reset), empty the runs rows and the reserved totals: the
    next run is refused (before: admitted past the lifetime), nothing is written."""
    change = {"kind": _relabel("kind", "run-opened"),
              "dataset_id": _relabel("dataset_id", "asia-other"),
              "lifetime reset": _relabel("kind", "renamed", ("dataset", "run-open"))}[relabel]

    def edit(conn: sqlite3.Connection) -> None:
        _write_back(conn, change(_records(conn)), rechain)
        conn.execute("DELETE FROM runs")
        if relabel == "lifetime reset":
            conn.execute("DELETE FROM datasets")
        else:
            conn.execute("UPDATE datasets SET reserved_epsilon='0', reserved_delta='0', "
                         "n_runs=0")
        conn.execute("DELETE FROM head_signatures")

    _tamper(discovered.path, edit)
    before = state(discovered.path)
    capsys.readouterr()
    assert _discover(discovered.path, "--epsilon", "2.5") == 2
    err = capsys.readouterr().err
    assert re.search(r"edited or damaged|no valid signature", err), err
    assert state(discovered.path) == before
    assert _cli_verify(discovered, head=False) == 1
    assert _cli_verify(discovered, head=True) == 1


def test_the_same_attacks_on_an_unsigned_ledger_are_refused_unless_consistent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key the chain is the only evidence: a relabel is refused (unknown kind,
    broken hash or link), but a consistent rewrite with the documented format cannot be
    told from the real history (docs/ledger.md: sign the ledger)."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    path = tmp_path / "u.db"
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(2.0))
        led.open_run(DATASET, Budget(2.0), "basic", seed_explicit=False)
    for rechain in (False, True):
        copy = tmp_path / f"c{rechain}.db"
        copy.write_bytes(path.read_bytes())
        _tamper(copy, _entry_edit(_relabel("kind", "run-opened"), rechain=rechain))
        with Ledger.open(copy) as led, pytest.raises(LedgerCorruptError):
            led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
    _tamper(path, _entry_edit(_lifetime_raised, rechain=True))
    with Ledger.open(path) as led:
        led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)  # admitted
        assert led.verify().ok

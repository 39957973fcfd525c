"""A writer refuses to reserve against a chain or tables that do not verify.

Before a reservation (``open_run``) and in the pre-flight of ``ensure_dataset``, the
whole chain is re-hashed and folded, and the ``datasets`` row and the dataset's ``runs``
rows are compared with it (``accounting/ledger/_admission.py``, ``_state.py``). A ledger
edited behind the writer's back is refused with :class:`LedgerCorruptError`; the file
is unchanged byte for byte and no budget is spent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import LedgerCorruptError, UnknownDatasetError
from accounting.ledger import Ledger
from accounting.ledger._admission import row_to_record
from accounting.ledger._format import STORED_FIELDS, canonical_json, entry_hash
from accounting.relations import Relation
from dpcg.cli import main

from .conftest import laplace_draft, populate, state

DATASET = "survey-2024"
Tamper = Callable[[sqlite3.Connection], None]


def _sql(*statements: str) -> Tamper:
    def apply(conn: sqlite3.Connection) -> None:
        for stmt in statements:
            conn.execute(stmt)
    return apply


def _run_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY opened_seq")]


def _rewrite_entry(conn: sqlite3.Connection, seq: int, change: Callable[[dict[str, Any]], None],
                   rehash: bool) -> str:
    """Edit entry ``seq`` (optionally recomputing its own hash only); returns its hash."""
    row = conn.execute(f"SELECT {', '.join(STORED_FIELDS)} FROM entries WHERE seq=?",
                       (seq,)).fetchone()
    record, problem = row_to_record(row)
    assert problem is None
    change(record)
    if rehash:
        record["hash"] = entry_hash(record)
    conn.execute("UPDATE entries SET data=?, hash=? WHERE seq=?",
                 (canonical_json(record["data"]), record["hash"], seq))
    return str(record["hash"])


def _delete_first_run(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM runs WHERE run_id=?", (_run_ids(conn)[0],))


def _delete_first_run_and_fix_totals(conn: sqlite3.Connection) -> None:
    """The tables alone stay consistent: only the chain knows the run."""
    _delete_first_run(conn)
    conn.execute("UPDATE datasets SET reserved_epsilon='1/2', n_runs=1")


def _move_first_run(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO datasets VALUES ('other','1','0','replace-one','',1,'1','0',1)")
    conn.execute("UPDATE runs SET dataset_id='other' WHERE run_id=?", (_run_ids(conn)[0],))
    conn.execute("UPDATE datasets SET reserved_epsilon='1/2', n_runs=1 WHERE dataset_id=?",
                 (DATASET,))


def _shrink_run_budget(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE runs SET epsilon='1/100' WHERE run_id=?", (_run_ids(conn)[0],))
    conn.execute("UPDATE datasets SET reserved_epsilon='51/100'")


def _fake_run(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO runs(run_id, dataset_id, epsilon, delta, rule, relation, "
                 "seed_explicit, description, status, opened_seq) VALUES ('ghost', ?, '1/10', "
                 "'0', 'basic', 'replace-one', 0, '', 'open', 3)", (DATASET,))


def _lifetime_in_entry_and_row(rehash: bool) -> Tamper:
    def apply(conn: sqlite3.Connection) -> None:
        def bigger(record: dict[str, Any]) -> None:
            record["data"]["lifetime"]["epsilon"] = "1000"
        _rewrite_entry(conn, 1, bigger, rehash)
        conn.execute("UPDATE datasets SET epsilon='1000'")
    return apply


def _run_open_budget_in_entry_and_rows(conn: sqlite3.Connection) -> None:
    """The run-open entry re-hashed and the rows made to match: the next entry no
    longer links to it."""
    seq = conn.execute("SELECT opened_seq FROM runs ORDER BY opened_seq").fetchone()[0]

    def smaller(record: dict[str, Any]) -> None:
        record["data"]["budget"]["epsilon"] = "1/100"
    _rewrite_entry(conn, seq, smaller, rehash=True)
    _shrink_run_budget(conn)


def _run_open_entry_deleted_with_its_rows(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM entries WHERE seq=2")  # the first run's open entry
    _delete_first_run_and_fix_totals(conn)


#: Each edit makes the writer admit more than the chain allows, or disagrees with it.
TAMPERS: dict[str, Tamper] = {
    "lifetime-raised": _sql("UPDATE datasets SET epsilon='1000'"),
    "lifetime-delta-raised": _sql("UPDATE datasets SET delta='1/1000'"),
    "reserved-lowered": _sql("UPDATE datasets SET reserved_epsilon='0'"),
    "reserved-delta-lowered": _sql("UPDATE datasets SET reserved_delta='0'"),
    "run-count-edited": _sql("UPDATE datasets SET n_runs=0"),
    "relation-edited": _sql("UPDATE datasets SET relation='add-remove'"),
    "registered-seq-edited": _sql("UPDATE datasets SET registered_seq=3"),
    "reserved-not-canonical": _sql("UPDATE datasets SET reserved_epsilon='3/2x'"),
    "runs-row-deleted": _delete_first_run,
    "all-runs-rows-deleted": _sql("DELETE FROM runs"),
    "runs-deleted-totals-fixed": _delete_first_run_and_fix_totals,
    "all-runs-deleted-totals-fixed": _sql(
        "DELETE FROM runs", "UPDATE datasets SET reserved_epsilon='0', reserved_delta='0', "
        "n_runs=0"),
    "run-moved-to-another-dataset": _move_first_run,
    "run-budget-lowered": _shrink_run_budget,
    "fake-run-row": _fake_run,
    "registration-entry-edited": _lifetime_in_entry_and_row(rehash=False),
    "registration-entry-rehashed": _lifetime_in_entry_and_row(rehash=True),
    "run-open-entry-rehashed": _run_open_budget_in_entry_and_rows,
    "run-open-entry-deleted": _run_open_entry_deleted_with_its_rows,
}


@pytest.fixture
def populated(ledger: Ledger, ledger_path: Path) -> Path:
    populate(ledger)
    assert ledger.verify().ok
    ledger.close()
    state(ledger_path)
    return ledger_path


def _tamper(path: Path, tamper: Tamper) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        tamper(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _spending(path: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return (conn.execute("SELECT COUNT(*) FROM entries").fetchone(),
                conn.execute("SELECT * FROM datasets ORDER BY dataset_id").fetchall(),
                conn.execute("SELECT * FROM runs ORDER BY run_id").fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_tampered_ledger_is_refused_before_anything_is_reserved(populated: Path,
                                                                name: str) -> None:
    _tamper(populated, TAMPERS[name])
    before, spending = state(populated), _spending(populated)
    with Ledger.open(populated) as led:
        assert not led.verify().ok  # a real edit, not a false alarm of the check
        with pytest.raises(LedgerCorruptError, match="edited or damaged"):
            led.open_run(DATASET, Budget(0.1), "basic", seed_explicit=False)
        with pytest.raises(LedgerCorruptError, match="edited or damaged"):
            led.ensure_dataset(DATASET, Budget(2.0, 1e-6), for_run=Budget(0.1))
    assert state(populated) == before
    assert _spending(populated) == spending


def test_deleted_dataset_row_is_not_a_new_dataset(populated: Path) -> None:
    """Without its row, the id must not be registered again with a fresh lifetime."""
    _tamper(populated, _sql("DELETE FROM datasets"))
    before = state(populated)
    with Ledger.open(populated) as led:
        for attempt in (
            lambda: led.open_run(DATASET, Budget(0.1), "basic", seed_explicit=False),
            lambda: led.ensure_dataset(DATASET, Budget(2.0, 1e-6), for_run=Budget(0.1)),
            lambda: led.register_dataset(DATASET, Budget(2.0, 1e-6)),
        ):
            with pytest.raises(LedgerCorruptError, match="no row"):
                attempt()
    assert state(populated) == before


def test_unknown_dataset_is_still_unknown(populated: Path) -> None:
    with Ledger.open(populated) as led, pytest.raises(UnknownDatasetError, match="not regist"):
        led.open_run("nope", Budget(0.1), "basic", seed_explicit=False)


def test_untampered_ledger_admits_as_before(populated: Path) -> None:
    with Ledger.open(populated) as led:
        run = led.open_run(DATASET, Budget(0.25), "basic", seed_explicit=False)
        run.record(laplace_draft(0.25))
        run.close()
        info, registered = led.ensure_dataset(DATASET, Budget(2.0, 1e-6),
                                              for_run=Budget(0.25))
        assert not registered
        led.register_dataset("second", Budget(1.0), Relation.ADD_REMOVE)
        led.open_run("second", Budget(1.0), "basic", seed_explicit=False).close()
        assert led.dataset(DATASET).remaining_epsilon == info.remaining_epsilon
        assert led.verify().ok


def test_an_edit_anywhere_in_the_chain_is_refused(populated: Path) -> None:
    """The whole chain is re-hashed before a reservation: an edited mechanism entry (here
    its purpose), which no index or table points at, refuses it too."""
    _tamper(populated, _sql("UPDATE entries SET purpose='edited' WHERE seq=3"))
    before = state(populated)
    with Ledger.open(populated) as led:
        with pytest.raises(LedgerCorruptError, match="entry 3: stored hash does not match"):
            led.open_run(DATASET, Budget(0.1), "basic", seed_explicit=False)
        report = led.verify()
    assert not report.ok
    assert "entry 3: stored hash does not match its contents" in report.problems
    assert state(populated) == before


@pytest.mark.parametrize("edit", [
    "UPDATE datasets SET epsilon='1000'",
    "DELETE FROM runs",
    "UPDATE entries SET data=replace(data, '\"epsilon\":\"1\"', '\"epsilon\":\"1/100\"') "
    "WHERE kind='run-open'",
])
def test_discover_on_a_tampered_ledger_spends_nothing(tmp_path: Path, edit: str,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """The review's reproduction: ``dpcg discover`` after an edit made with sqlite3."""
    path = tmp_path / "l.db"
    argv = ["discover", "--dataset", "asia", "--rows", "500", "--algorithm", "laplace-pc",
            "--epsilon", "1", "--dataset-id", "asia-500", "--ledger", str(path), "--quiet"]
    assert main([*argv, "--lifetime-epsilon", "3", "--lifetime-delta", "1e-5"]) == 0
    assert main(argv) == 0
    _tamper(path, _sql(edit))
    before, spending = state(path), _spending(path)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "edited or damaged" in err
    assert "Traceback" not in err
    assert state(path) == before
    assert _spending(path) == spending

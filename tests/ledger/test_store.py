"""The SQLite ledger: registration, reservations, recording, refusals, foreign files."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from accounting.costs import Budget, Cost
from accounting.entries import EntryDraft, RunRecorder
from accounting.errors import (
    BudgetExceededError,
    DuplicateDatasetError,
    ForeignLedgerError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    RelationMismatchError,
    UnknownDatasetError,
)
from accounting.ledger import Ledger
from accounting.mechanisms import Laplace
from accounting.relations import Relation

from .conftest import gaussian_draft, laplace_draft, populate, state


def test_roundtrip_and_verify(ledger: Ledger) -> None:
    populate(ledger)
    report = ledger.verify()
    assert report.ok, report.problems
    assert report.entries == 9
    assert report.head_hash == ledger.head_hash()
    (ds,) = report.datasets
    assert ds.reserved_epsilon == Fraction(3, 2)
    assert ds.reserved_delta == Fraction(1e-7)
    run_a, run_b = report.runs
    assert run_a.spent_epsilon == Fraction(3, 4)
    assert run_a.status == "completed"
    assert run_a.entries == 2
    assert run_a.outputs == 1
    assert run_b.spent_epsilon is None
    assert run_b.spent_rho == Fraction(1, 512)
    assert run_b.seed_explicit
    assert run_b.status == "budget-exhausted"
    kinds = [e["kind"] for e in ledger.entries()]
    assert kinds == ["dataset", "run-open", "mechanism", "output", "mechanism", "run-close",
                     "run-open", "mechanism", "run-close"]
    assert ledger.has_dataset("survey-2024")
    assert not ledger.has_dataset("other")
    info = ledger.dataset("survey-2024")
    assert info.reserved_epsilon == Fraction(3, 2)
    assert info.n_runs == 2
    assert info.lifetime == Budget(2.0, 1e-6)


def test_run_is_a_run_recorder(ledger: Ledger) -> None:
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    assert isinstance(run, RunRecorder)
    assert run.budget == Budget(0.5)
    assert run.rule == "basic"
    assert run.relation is Relation.REPLACE_ONE


def test_entries_are_durable_across_connections(ledger: Ledger, ledger_path: Path) -> None:
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    seq = run.record(laplace_draft(0.25))
    with Ledger.open(ledger_path) as other:
        (entry,) = [e for e in other.entries() if e["seq"] == seq]
        assert entry["mechanism"] == "laplace"
        assert entry["cost"] == Cost.pure(0.25).as_dict()
        assert entry["params"] == Laplace(1.0, 0.25).public_params()
        assert entry["purpose"] == "count"


def test_lifetime_budget_refuses_and_writes_nothing(ledger: Ledger, ledger_path: Path) -> None:
    ledger.open_run("survey-2024", Budget(1.5), "basic", seed_explicit=False)
    before = state(ledger_path)
    with pytest.raises(BudgetExceededError, match="lifetime epsilon budget"):
        ledger.open_run("survey-2024", Budget(0.75), "basic", seed_explicit=False)
    with pytest.raises(BudgetExceededError):
        ledger.open_run("survey-2024", Budget(0.1, 1e-5), "zcdp", seed_explicit=False)
    assert state(ledger_path) == before
    # exactly the remainder still fits
    ledger.open_run("survey-2024", Budget(0.5, 1e-6), "basic", seed_explicit=False)
    assert ledger.verify().ok


def test_equal_split_fits_exactly(ledger_path: Path) -> None:
    from accounting.costs import split_epsilon

    with Ledger.open(ledger_path, create=True) as led:
        led.register_dataset("d", Budget(1.0))
        part = split_epsilon(1.0, 3)
        run = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
        for _ in range(3):
            run.record(laplace_draft(part))
        with pytest.raises(BudgetExceededError):
            run.record(laplace_draft(part))
        assert led.verify().ok


def test_run_reservation_enforced_by_ledger(ledger: Ledger, ledger_path: Path) -> None:
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    run.record(laplace_draft(0.25))
    run.record(laplace_draft(0.25))
    before = state(ledger_path)
    with pytest.raises(BudgetExceededError, match="reservation"):
        run.record(laplace_draft(2.0**-40))
    with pytest.raises(BudgetExceededError, match="epsilon bound"):
        run.record(gaussian_draft())  # basic rule needs an epsilon bound
    assert state(ledger_path) == before


def test_zcdp_rule(ledger: Ledger) -> None:
    budget = Budget(1.0, 1e-6)
    run = ledger.open_run("survey-2024", budget, "zcdp", seed_explicit=False)
    rho_budget = budget.rho()
    sigma = 8.0  # rho = 1 / (2 * 64) per release
    per = Fraction(1, 128)
    k = int(rho_budget / per)
    assert k >= 2
    for _ in range(k):
        run.record(gaussian_draft(sigma))
    with pytest.raises(BudgetExceededError, match="rho"):
        run.record(gaussian_draft(sigma))
    assert ledger.verify().ok
    with pytest.raises(InvalidParameterError, match="delta"):
        ledger.open_run("survey-2024", Budget(0.1), "zcdp", seed_explicit=False)


def test_outputs_are_separate_entries(ledger: Ledger) -> None:
    run = ledger.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
    seq = run.record(laplace_draft(0.25))
    before = ledger.entries()[seq - 1]
    run.record_output(seq, np.array([1.5, 2.5]))
    after = ledger.entries()
    assert after[seq - 1] == before  # the pre-release entry is never modified
    assert after[-1]["kind"] == "output"
    assert after[-1]["data"] == {"of_seq": seq, "output": [1.5, 2.5]}
    with pytest.raises(InvalidParameterError, match="already has an output"):
        run.record_output(seq, 1.0)
    with pytest.raises(InvalidParameterError, match="not a mechanism entry"):
        run.record_output(1, 1.0)
    with pytest.raises(InvalidParameterError, match="output"):
        run.record_output(seq + 5, float("nan"))
    assert ledger.verify().ok


def test_close_is_final_and_idempotent(ledger: Ledger) -> None:
    run = ledger.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
    run.close("completed")
    run.close("error")  # no-op
    assert ledger.run(run.run_id).status == "completed"
    with pytest.raises(LedgerError, match="closed"):
        run.record(laplace_draft())
    with pytest.raises(InvalidParameterError, match="status"):
        run.close("finished")
    assert ledger.verify().ok
    # a closed run keeps its reservation: no refunds
    assert ledger.dataset("survey-2024").reserved_epsilon == 1


def test_rejected_calls_leave_the_ledger_intact(ledger: Ledger, ledger_path: Path) -> None:
    populate(ledger)
    run = ledger.open_run("survey-2024", Budget(0.25), "basic", seed_explicit=False)
    before = state(ledger_path)
    bad_calls: list[tuple[type[Exception], Callable[[], object]]] = [
        (UnknownDatasetError, lambda: ledger.open_run("nope", Budget(0.1), "basic", False)),
        (DuplicateDatasetError, lambda: ledger.register_dataset("survey-2024", Budget(1.0))),
        (InvalidParameterError, lambda: ledger.register_dataset("", Budget(1.0))),
        (InvalidParameterError, lambda: ledger.register_dataset("x\n", Budget(1.0))),
        (InvalidParameterError, lambda: ledger.register_dataset("x", (1.0, 0.0))),  # type: ignore[arg-type]
        (InvalidParameterError, lambda: ledger.register_dataset("x", Budget(1.0), "neighbour")),
        (InvalidParameterError, lambda: ledger.open_run("survey-2024", Budget(0.1), "rdp", False)),
        (InvalidParameterError, lambda: ledger.open_run("survey-2024", Budget(0.1), "basic", 1)),  # type: ignore[arg-type]
        (RelationMismatchError,
         lambda: run.record(laplace_draft(relation=Relation.ADD_REMOVE))),
        (InvalidParameterError, lambda: run.record("laplace")),  # type: ignore[arg-type]
        (InvalidParameterError, lambda: run.record(EntryDraft(
            "laplace", {"sensitivity": 1.0, "epsilon": 0.1}, 1.0, Relation.REPLACE_ONE,
            Cost.pure(0.05), "understated cost", False))),
        (InvalidParameterError, lambda: run.record(EntryDraft(
            "mystery", {"epsilon": 0.1}, 1.0, Relation.REPLACE_ONE, Cost.pure(0.1), "?", False))),
        (InvalidParameterError, lambda: run.record(EntryDraft(
            "laplace", {"sensitivity": 1.0, "epsilon": 0.1, "x": float("inf")}, 1.0,
            Relation.REPLACE_ONE, Cost.pure(0.1), "inf", False))),
        (InvalidParameterError, lambda: run.record(EntryDraft(
            "laplace", {"sensitivity": 1.0, "epsilon": 0.1}, float("nan"),
            Relation.REPLACE_ONE, Cost.pure(0.1), "nan", False))),
        (BudgetExceededError, lambda: run.record(laplace_draft(0.5))),
    ]
    for expected, call in bad_calls:
        with pytest.raises(expected):
            call()
        assert state(ledger_path) == before, expected
    assert ledger.verify().ok


def test_budget_constructor_rejects_bad_values() -> None:
    for eps, delta in [(0.0, 0.0), (-1.0, 0.0), (1.0, 1.0), (1.0, -0.1), (float("nan"), 0.0)]:
        with pytest.raises(InvalidParameterError):
            Budget(eps, delta)


def test_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    with pytest.raises(LedgerError, match="no ledger"):
        Ledger.open(path)
    assert not path.exists()


def test_create_is_idempotent(ledger: Ledger, ledger_path: Path) -> None:
    with Ledger.open(ledger_path, create=True) as again:
        assert again.ledger_id == ledger.ledger_id
        assert [d.dataset_id for d in again.datasets()] == ["survey-2024"]


@pytest.mark.parametrize(
    "content",
    [b"hello, this is a text file\n" * 10, b"\x00" * 4096, b"SQLite format 2\x00" + b"\x00" * 100],
)
def test_foreign_non_sqlite_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "foreign.db"
    path.write_bytes(content)
    for create in (False, True):
        with pytest.raises(ForeignLedgerError, match="not an SQLite database"):
            Ledger.open(path, create=create)
    assert path.read_bytes() == content


def test_foreign_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.execute("INSERT INTO people VALUES ('ada')")
    conn.commit()
    conn.close()
    content = path.read_bytes()
    for create in (False, True):
        with pytest.raises(ForeignLedgerError, match="no metadata table"):
            Ledger.open(path, create=create)
    assert path.read_bytes() == content


def test_wrong_format_and_version(ledger: Ledger, ledger_path: Path) -> None:
    ledger.close()
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE metadata SET value='2' WHERE key='format_version'")
    conn.commit()
    with pytest.raises(ForeignLedgerError, match="unsupported ledger format version '2'"):
        Ledger.open(ledger_path)
    conn.execute("UPDATE metadata SET value='someone-else' WHERE key='format'")
    conn.commit()
    conn.close()
    with pytest.raises(ForeignLedgerError, match="not a dpcg ledger"):
        Ledger.open(ledger_path)


def test_missing_table_is_corrupt(ledger: Ledger, ledger_path: Path) -> None:
    ledger.close()
    conn = sqlite3.connect(ledger_path)
    conn.execute("DROP TABLE runs")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerCorruptError, match="runs"):
        Ledger.open(ledger_path)


def test_truncated_file_is_corrupt(ledger: Ledger, ledger_path: Path) -> None:
    populate(ledger)
    ledger.close()
    state(ledger_path)
    data = ledger_path.read_bytes()
    ledger_path.write_bytes(data[: len(data) // 2])
    with pytest.raises(LedgerCorruptError):
        Ledger.open(ledger_path).verify()


def test_refuses_to_extend_a_corrupt_chain(ledger: Ledger, ledger_path: Path) -> None:
    populate(ledger)
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE entries SET purpose='edited' WHERE seq=(SELECT MAX(seq) FROM entries)")
    conn.commit()
    conn.close()
    before = state(ledger_path)
    with pytest.raises(LedgerCorruptError, match="edited or damaged"):
        ledger.open_run("survey-2024", Budget(0.1), "basic", seed_explicit=False)
    assert state(ledger_path) == before


def test_odd_paths_and_unicode_text(tmp_path: Path) -> None:
    path = tmp_path / "dir with space#1" / "ledger?50%.db"
    path.parent.mkdir()
    with Ledger.open(path, create=True) as led:
        led.register_dataset("umfrage-zählung", Budget(1.0), description="Zählung ✓ 统计")
        run = led.open_run("umfrage-zählung", Budget(0.5), "basic", seed_explicit=False,
                           description="é")
        run.record(laplace_draft(0.25, purpose="Anzahl der Raucher ✓"))
        run.close()
        assert led.verify().ok
        assert led.entry_count() == 4
    assert path.exists()
    assert not (tmp_path / "dir with space").exists()
    with Ledger.open(path) as led:
        assert led.entries()[2]["purpose"] == "Anzahl der Raucher ✓"


def test_closed_ledger_raises_ledger_error(ledger: Ledger) -> None:
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    ledger.close()
    ledger.close()  # idempotent
    with pytest.raises(LedgerError, match="closed"):
        ledger.verify()
    with pytest.raises(LedgerError, match="closed"):
        run.record(laplace_draft())


def test_a_ledger_does_not_cross_fork(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    real = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: real + 1)  # as seen from a forked child
    with pytest.raises(LedgerError, match="cannot cross fork"):
        ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    monkeypatch.undo()
    assert ledger.verify().ok


@pytest.mark.parametrize("edit", ["spent_epsilon='1/8'", "spent_epsilon='7/8'",
                                  "spent_epsilon='1/4x'", "spent_delta='1/2'",
                                  "spent_rho=NULL", "status='completed'"])
def test_a_runs_row_edited_behind_the_writer_is_never_trusted(ledger: Ledger,
                                                              ledger_path: Path,
                                                              edit: str) -> None:
    """The run checks its reservation against the totals it wrote itself, never against
    the editable ``runs`` row: a row that no longer holds them (lowered, raised, corrupt,
    or closed by hand) refuses the next entry and nothing is written."""
    run = ledger.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
    run.record(laplace_draft(0.25))
    run.record(laplace_draft(0.25))
    conn = sqlite3.connect(ledger_path)
    conn.execute(f"UPDATE runs SET {edit} WHERE run_id=?", (run.run_id,))
    conn.commit()
    conn.close()
    before = state(ledger_path)
    with pytest.raises(LedgerError, match=r"edited behind|closed"):
        run.record(laplace_draft(0.25))
    assert state(ledger_path) == before
    with pytest.raises(BudgetExceededError):  # 1/2 + 3/4 > 1 whatever the row says
        run.record(laplace_draft(0.75))
    assert state(ledger_path) == before


def test_record_many_is_one_atomic_append(ledger: Ledger, ledger_path: Path) -> None:
    """A batch is validated whole, checked against the reservation as a total and
    written in one transaction: it lands completely (consecutive seqs, a verifying
    chain, totals as one-at-a-time records would give) or not at all."""
    run = ledger.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
    first = run.record(laplace_draft(0.125))
    seqs = run.record_many([laplace_draft(0.125, purpose=f"b{i}") for i in range(3)])
    assert seqs == [first + 1, first + 2, first + 3]
    assert run.record_many([]) == []
    info = run.info()
    assert info.n_entries == 4
    assert info.spent_epsilon == Fraction(1, 2)
    assert ledger.verify().ok
    # one-at-a-time gives the same totals
    other = ledger.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
    for _ in range(4):
        other.record(laplace_draft(0.125))
    assert other.info().spent_epsilon == info.spent_epsilon

    before = state(ledger_path)
    bad_batches: list[tuple[type[Exception], Callable[[], object]]] = [
        # the total exceeds the reservation although each entry alone would fit
        (BudgetExceededError, lambda: run.record_many(
            [laplace_draft(0.25), laplace_draft(0.25), laplace_draft(0.25)])),
        # one malformed entry anywhere refuses the whole batch
        (InvalidParameterError, lambda: run.record_many([laplace_draft(0.125), EntryDraft(
            "laplace", {"sensitivity": 1.0, "epsilon": 0.1}, 1.0, Relation.REPLACE_ONE,
            Cost.pure(0.05), "understated cost", False)])),
        (RelationMismatchError, lambda: run.record_many(
            [laplace_draft(0.125), laplace_draft(relation=Relation.ADD_REMOVE)])),
        (InvalidParameterError, lambda: run.record_many(laplace_draft(0.125))),  # type: ignore[arg-type]
        (InvalidParameterError, lambda: run.record_many([laplace_draft(0.125), "laplace"])),  # type: ignore[list-item]
    ]
    for expected, call in bad_batches:
        with pytest.raises(expected):
            call()
        assert state(ledger_path) == before, expected
    # still extendable after the refusals; closed runs refuse batches too
    run.record_many([laplace_draft(0.25), laplace_draft(0.25)])
    assert run.info().spent_epsilon == Fraction(1)
    run.close("completed")
    with pytest.raises(LedgerError):
        run.record_many([laplace_draft(2.0**-20)])
    assert ledger.verify().ok


def test_record_many_flat_parameter_memo_is_type_exact(ledger: Ledger) -> None:
    """Entry parameters are encoded through a memo keyed type-exactly: values that
    compare equal but encode differently never share an encoding."""
    from accounting.ledger.store import _flat_encoded

    a = _flat_encoded({"x": 1, "y": 0.0}, "p")
    b = _flat_encoded({"x": 1.0, "y": -0.0}, "p")
    c = _flat_encoded({"x": True, "y": 0.0}, "p")
    assert (a[1], b[1], c[1]) == ('{"x":1,"y":0.0}', '{"x":1.0,"y":-0.0}', '{"x":true,"y":0.0}')
    for bad in ({"x": float("nan")}, {"x": float("inf")}):
        for _ in range(2):  # a refused value is never memoised
            with pytest.raises(InvalidParameterError):
                _flat_encoded(bad, "p")
    assert _flat_encoded({"x": np.float64(0.5)}, "p")[1] == '{"x":0.5}'  # slow path
    with pytest.raises(InvalidParameterError):
        _flat_encoded({1: 0.5}, "p")

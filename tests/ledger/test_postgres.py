"""The PostgreSQL ledger against a real server (``pgcluster.Cluster``; never a mock).

The same chain as SQLite (verified by the same checker and offline as a certificate),
lifetimes enforced by the database across processes, a killed run's reservation kept,
and an analyst role that can only call the ledger's functions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import (
    BudgetExceededError,
    DatasetConflictError,
    DuplicateDatasetError,
    ForeignLedgerError,
    InvalidParameterError,
    LedgerError,
    RelationMismatchError,
    UnknownDatasetError,
)
from accounting.ledger import open_ledger, session_for_run, verify_certificate
from accounting.ledger._format import entry_hash
from accounting.ledger.postgres import PostgresLedger, _encode, install_schema, redact
from accounting.mechanisms import Laplace
from accounting.relations import Relation

from .conftest import PYTHON, ROOT, PgLedger, gaussian_draft, laplace_draft

psycopg = pytest.importorskip("psycopg")


def _populate(led: Any) -> None:
    led.register_dataset("survey-2024", Budget(2.0, 1e-6), Relation.REPLACE_ONE, "test data")
    run = led.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False, description="a")
    s1 = run.record(laplace_draft(0.25, purpose="count A"))
    run.record_output(s1, 12.5)
    run.record_many([laplace_draft(0.25), laplace_draft(0.125, sensitivity=2.0)])
    run.close("completed")
    run2 = led.open_run("survey-2024", Budget(0.5, 1e-7), "zcdp", seed_explicit=True)
    run2.record(gaussian_draft(16.0))
    run2.close("budget-exhausted")


def _state(pg: PgLedger) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with psycopg.connect(pg.admin) as conn:
        return (conn.execute("SELECT * FROM dpcg.entries ORDER BY seq").fetchall(),
                conn.execute("SELECT * FROM dpcg.head_signatures ORDER BY seq").fetchall())


def test_same_chain_verify_and_certificate(pg: PgLedger, tmp_path: Path) -> None:
    with open_ledger(pg.analyst) as led:
        assert isinstance(led, PostgresLedger)
        _populate(led)
        report = led.verify()
        assert report.ok, report.problems
        assert report.entries == 10
        entries = led.entries()
        # the documented format: every hash is SHA-256 of the canonical JSON of the
        # hashed fields, chained from the genesis (recomputed here independently)
        for e in entries:
            assert entry_hash(e) == e["hash"]
        assert [e["kind"] for e in entries] == [
            "dataset", "run-open", "mechanism", "output", "mechanism", "mechanism",
            "run-close", "run-open", "mechanism", "run-close"]
        # every entry of a run carries the run's open time (set by the database)
        runs = {e["run_id"] for e in entries if e["run_id"]}
        for rid in runs:
            assert len({e["timestamp"] for e in entries if e["run_id"] == rid}) == 1
        info = led.dataset("survey-2024")
        assert info.charged_epsilon == Fraction(5, 8) + Fraction(1, 2)  # refund + zcdp
        assert info.reserved_epsilon == Fraction(3, 2)
        assert info.n_runs == 2
        assert [r.status for r in led.runs()] == ["completed", "budget-exhausted"]
        cert = tmp_path / "c.json"
        led.export(cert)
    offline = verify_certificate(cert, expected_head=report.head_hash)
    assert offline.ok, offline.problems
    assert json.loads(cert.read_text())["ledger_id"] == report.ledger_id


def test_lifetime_refusals_and_errors(pg: PgLedger) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("d", Budget(2.0), Relation.REPLACE_ONE)
        with pytest.raises(DuplicateDatasetError):
            led.register_dataset("d", Budget(2.0))
        with pytest.raises(DatasetConflictError):
            led.ensure_dataset("d", Budget(2.0), Relation.ADD_REMOVE)
        with pytest.raises(UnknownDatasetError, match="known: 'd'"):
            led.open_run("nope", Budget(1.0), "basic", seed_explicit=False)
        run = led.open_run("d", Budget(1.5), "basic", seed_explicit=False)
        n = led.entry_count()
        with pytest.raises(BudgetExceededError, match="lifetime"):
            led.open_run("d", Budget(0.75), "basic", seed_explicit=False)
        with pytest.raises(BudgetExceededError):  # the run's own reservation
            run.record(laplace_draft(2.0))
        with pytest.raises(RelationMismatchError):
            run.record(laplace_draft(0.25, relation=Relation.ADD_REMOVE))
        with pytest.raises(InvalidParameterError):
            led.open_run("d", Budget(0.5), "no-rule", seed_explicit=False)
        assert led.entry_count() == n  # nothing written by any refusal
        run.record(laplace_draft(0.25))
        run.close()  # refund: 1.25 of the 1.5 come back
        run.close()  # idempotent
        assert led.dataset("d").remaining_epsilon == Fraction(7, 4)
        led.open_run("d", Budget(1.75), "basic", seed_explicit=False)
        with pytest.raises(LedgerError, match="closed"):
            run.record(laplace_draft(0.25))
        assert led.verify().ok


def test_a_session_records_through_it(pg: PgLedger) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("s", Budget(1.0))
        session = session_for_run(led, "s", Budget(1.0), "basic", seed=3)
        value = session.release(Laplace(sensitivity=1.0, epsilon=0.5), lambda: 10.0,
                                purpose="count")
        assert isinstance(value, float)
        session.close()
        (run,) = led.runs("s")
        assert run.seed_explicit
        assert run.n_entries == 1
        assert run.status == "completed"
        assert led.verify().ok


def test_open_needs_the_schema_and_no_key(pg_cluster: Any, pg: PgLedger) -> None:
    bare = pg_cluster.new_database()
    with pytest.raises(ForeignLedgerError, match="no dpcg ledger"):
        PostgresLedger.open(pg_cluster.url(bare))
    with pytest.raises(InvalidParameterError, match="custodian"):
        PostgresLedger.open(pg.analyst, signing_key="/some/key")
    with pytest.raises(LedgerError, match="already has"):
        install_schema(pg.admin)
    assert redact("postgresql://a:secret@h:5/db") == "postgresql://a:***@h:5/db"


# ---------------------------------------------------------------------------------
# What the analyst's role can and cannot do
# ---------------------------------------------------------------------------------
_ANALYST_WRITES = {
    "UPDATE an entry": "UPDATE dpcg.entries SET body = body WHERE seq = 1",
    "DELETE an entry": "DELETE FROM dpcg.entries WHERE seq = 10",
    "TRUNCATE the chain": "TRUNCATE dpcg.entries",
    "INSERT an entry": "INSERT INTO dpcg.entries SELECT seq + 100, kind, dataset_id, run_id, "
                       "body, hash FROM dpcg.entries WHERE seq = 1",
    "re-sign a head (INSERT)": "INSERT INTO dpcg.head_signatures VALUES (10, 'h', 's')",
    "re-sign a head (sign_head)": "SELECT dpcg.sign_head(10, 'h', repeat('a', 128))",
    "bind another key": "SELECT dpcg.bind_key(repeat('b', 64))",
    "drop signatures (DELETE)": "DELETE FROM dpcg.head_signatures",
    "drop signatures (TRUNCATE)": "TRUNCATE dpcg.head_signatures",
    "drop signatures (DROP)": "DROP TABLE dpcg.head_signatures",
    "edit the metadata": "UPDATE dpcg.metadata SET value = 'x' WHERE key = 'ledger_id'",
    "call an internal function": "SELECT dpcg._insert(99, '{}', '{}'::jsonb)",
    "replace a function": "CREATE OR REPLACE FUNCTION dpcg._now() RETURNS text "
                          "LANGUAGE sql AS $$ SELECT 'x' $$",
    "create a table in the schema": "CREATE TABLE dpcg.x (a int)",
}


@pytest.mark.parametrize("what", sorted(_ANALYST_WRITES))
def test_the_analyst_role_cannot_write_history(pg: PgLedger, what: str) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        _populate(led)
    before = _state(pg)
    with psycopg.connect(pg.analyst, autocommit=True) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(_ANALYST_WRITES[what])
    assert _state(pg) == before
    with PostgresLedger.open(pg.analyst) as led:
        assert led.verify().ok


def test_history_is_append_only_even_for_the_owner(pg: PgLedger) -> None:
    """Defence in depth: triggers refuse UPDATE/DELETE/TRUNCATE from any session."""
    with PostgresLedger.open(pg.analyst) as led:
        _populate(led)
    before = _state(pg)
    with psycopg.connect(pg.admin, autocommit=True) as conn:
        for stmt in ("UPDATE dpcg.entries SET body = body", "DELETE FROM dpcg.entries",
                     "TRUNCATE dpcg.entries", "DELETE FROM dpcg.head_signatures"):
            with pytest.raises(psycopg.DatabaseError, match="append-only"):
                conn.execute(stmt)
    assert _state(pg) == before


def _call(conn: Any, sql: str, *args: object) -> list[tuple[Any, ...]]:
    return list(conn.execute(sql, args).fetchall())


def test_direct_calls_cannot_overspend_or_forge(pg: PgLedger) -> None:
    """The analyst calling the functions directly (not through dpcg): the database
    itself refuses a reservation over the lifetime, entries over the run's reservation,
    and malformed or forged entries."""
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("d", Budget(1.0))
        run = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
        n = led.entry_count()

    def opening(eps: str, run_id: str = "a" * 32) -> tuple[str, str]:
        return _encode({"kind": "run-open", "dataset_id": "d", "run_id": run_id,
                        "relation": "replace-one", "seed_explicit": False,
                        "data": {"budget": {"epsilon": eps, "delta": "0"}, "rule": "basic",
                                 "description": ""}})

    def mechanism(eps: str, **over: Any) -> tuple[str, str]:
        fields = {"kind": "mechanism", "dataset_id": "d", "run_id": run.run_id,
                  "relation": "replace-one", "seed_explicit": False, "mechanism": "laplace",
                  "params": {"epsilon": 1.0, "sensitivity": 1.0}, "sensitivity": 1.0,
                  "cost": {"epsilon": eps, "delta": "0", "rho": None},
                  "data": {"extra": {}}}
        fields.update(over)
        return _encode(fields)

    with psycopg.connect(pg.analyst, autocommit=True) as conn:
        with pytest.raises(psycopg.DatabaseError) as exc:
            _call(conn, "SELECT * FROM dpcg.reserve(%s, %s)", *opening("1/1000000"))
        assert exc.value.sqlstate == "DPB01"  # the lifetime is held by the open run
        head, mid = mechanism("2")
        with pytest.raises(psycopg.DatabaseError) as exc:
            _call(conn, "SELECT * FROM dpcg.charge(%s, %s, %s)", run.run_id, [head], [mid])
        assert exc.value.sqlstate == "DPB01"  # over the run's reservation
        small, small_mid = mechanism("1/4")
        canonical_cost = '{"cost":{"delta":"0","epsilon":"1/4","rho":null}'
        assert small.startswith(canonical_cost)
        forged = [
            # the cost object must come first and in canonical form, byte for byte (the
            # database's sums read it from that prefix)
            (small.replace(canonical_cost,
                           '{"cost":{"epsilon":"1/4","delta":"0","rho":null}'), small_mid),
            (small.replace(canonical_cost,
                           '{"cost":{"delta":"0", "epsilon":"1/4","rho":null}'), small_mid),
            (small.replace(canonical_cost,
                           '{"cost":{"delta":"0","epsilon":"1/4","rho":null,"x":1}'), small_mid),
            (head.replace('"kind":"mechanism"', '"kind":"mechanism","kind":"dataset"'), mid),
            (head, mid.replace('"purpose":""', '"purpose":"","seq":99')),
            (head, mid + "1,"),
            ("[" + head[1:], mid),
            mechanism("-1"), mechanism("2/4"), mechanism("1", run_id="b" * 32),
            mechanism("1", relation="add-remove"), mechanism("1", kind="run-close"),
        ]
        for h, m in forged:
            with pytest.raises(psycopg.DatabaseError):
                _call(conn, "SELECT * FROM dpcg.charge(%s, %s, %s)", run.run_id, [h], [m])
        # a batch is all or none: a valid entry followed by an overspend writes nothing
        ok_head, ok_mid = mechanism("1/2")
        with pytest.raises(psycopg.DatabaseError):
            _call(conn, "SELECT * FROM dpcg.charge(%s, %s, %s)", run.run_id,
                  [ok_head, ok_head.replace('"epsilon":"1/2"', '"epsilon":"1"')],
                  [ok_mid, ok_mid])
    with PostgresLedger.open(pg.analyst) as led:
        assert led.entry_count() == n
        assert led.verify().ok


# ---------------------------------------------------------------------------------
# Real processes
# ---------------------------------------------------------------------------------
_ROUNDS = """
import os, sys, time
from accounting.costs import Budget
from accounting.entries import EntryDraft
from accounting.errors import BudgetExceededError
from accounting.ledger import open_ledger
from accounting.mechanisms import Laplace
from accounting.relations import Relation

url, go, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
mech = Laplace(sensitivity=1.0, epsilon=0.5)
draft = EntryDraft(mech.kind, mech.public_params(), mech.sensitivity, Relation.REPLACE_ONE,
                   mech.cost(Relation.REPLACE_ONE), name, False)
for r in range(rounds):
    while not os.path.exists(f"{go}{r}"):
        time.sleep(0.002)
    # a first run of a new dataset, as a run sequence does it
    with open_ledger(url) as led:
        led.ensure_dataset(f"new-{r}", Budget(5.0), Relation.REPLACE_ONE, "first run")
        try:
            run = led.open_run(f"new-{r}", Budget(1.0), "basic", seed_explicit=False,
                               description=name)
        except BudgetExceededError:
            print(f"{r} refused", flush=True)
            continue
        run.record_many([draft, draft])  # spends the whole reservation: no refund
        run.close("completed")
        print(f"{r} admitted", flush=True)
"""

N_PROCESSES = 16
ROUNDS = 3
ADMITTED = 5


def test_concurrent_first_runs_exactly_the_lifetime_admitted(pg: PgLedger,
                                                             tmp_path: Path) -> None:
    """16 processes x 3 rounds of concurrent first runs (register on first use, then
    reserve eps 1) on a new dataset id of lifetime 5: exactly 5 admitted each round."""
    go = tmp_path / "go"
    procs = [subprocess.Popen([str(PYTHON), "-c", _ROUNDS, pg.analyst, str(go), f"p{i}",
                               str(ROUNDS)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for i in range(N_PROCESSES)]
    try:
        for r in range(ROUNDS):
            time.sleep(1.5 if r == 0 else 0.5)  # every process waits at the start line
            (tmp_path / f"go{r}").touch()
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
            outs.extend(out.split("\n"))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for r in range(ROUNDS):
        got = sorted(line.split()[1] for line in outs if line.startswith(f"{r} "))
        assert got == ["admitted"] * ADMITTED + ["refused"] * (N_PROCESSES - ADMITTED), r
    with PostgresLedger.open(pg.analyst) as led:
        report = led.verify()
        assert report.ok, report.problems
        assert len(report.datasets) == ROUNDS  # one registration per id, no duplicate
        for ds in report.datasets:
            assert ds.charged_epsilon == ds.lifetime_epsilon == 5
            assert len(ds.runs) == ADMITTED


_KILLED = """
import sys, time
from accounting.costs import Budget
from accounting.ledger import open_ledger
from tests.ledger.conftest import laplace_draft
led = open_ledger(sys.argv[1])
run = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
run.record(laplace_draft(0.25))
print(run.run_id, flush=True)
time.sleep(120)
"""


def test_kill_9_mid_run_keeps_the_reservation(pg: PgLedger) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("d", Budget(1.5))
    proc = subprocess.Popen([str(PYTHON), "-c", _KILLED, pg.analyst], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        assert len(run_id) == 32, proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with PostgresLedger.open(pg.analyst) as led:
        report = led.verify()
        assert report.ok, report.problems
        run = led.run(run_id)
        assert run.status == "open"
        assert run.n_entries == 1
        info = led.dataset("d")
        assert info.charged_epsilon == 1  # the whole reservation stands
        with pytest.raises(BudgetExceededError):
            led.open_run("d", Budget(0.75), "basic", seed_explicit=False)
        led.open_run("d", Budget(0.5), "basic", seed_explicit=False)
        assert led.verify().ok


def test_by_default_only_the_custodian_registers(pg_cluster: Any) -> None:
    """Installed without --analysts-register, the analyst's role cannot register a new id
    (so it cannot register a governed id before the custodian, with its own lifetime)."""
    db = pg_cluster.new_database()
    install_schema(pg_cluster.url(db))
    analyst, custodian = pg_cluster.url(db, "dpcg_analyst"), pg_cluster.url(db, "dpcg_custodian")
    with PostgresLedger.open(analyst) as led:
        with pytest.raises(UnknownDatasetError, match="the custodian registers it"):
            led.ensure_dataset("new", Budget(1.0), for_run=Budget(1.0))
        assert led.entry_count() == 0
    with psycopg.connect(analyst, autocommit=True) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM dpcg.register('{}', '{}')")
    with PostgresLedger.open(custodian) as led:
        led.register_dataset("new", Budget(1.0))
    with PostgresLedger.open(analyst) as led:
        info, created = led.ensure_dataset("new", Budget(9.0), for_run=Budget(1.0))
        assert not created
        assert info.lifetime_epsilon == 1
        led.open_run("new", Budget(1.0), "basic", seed_explicit=False).close()
        assert led.verify().ok


def test_the_database_charge_equals_the_verifier_exactly(pg: PgLedger) -> None:
    """The database's exact rational sums (lcm of the denominators, scaled numerators)
    agree with the Python verifier's Fractions on runs of mixed costs, rules and
    statuses (refunds of closed basic runs, open runs, zCDP runs, runs without entries)."""
    import random

    rng = random.Random(55)
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("mix", Budget(1000.0, 0.5))
        for i in range(14):
            rule = "zcdp" if i % 5 == 4 else "basic"
            run = led.open_run("mix", Budget(rng.choice([1.0, 0.3, 2.5]), 1e-3), rule,
                               seed_explicit=False)
            if rule == "zcdp":
                run.record(gaussian_draft(rng.choice([8.0, 16.0])))
            else:
                k = rng.randrange(0, 4)
                if k:
                    run.record_many([laplace_draft(rng.choice([0.1, 0.05, 0.07]))
                                     for _ in range(k)])
            if i % 3:
                run.close(rng.choice(["completed", "error", "budget-exhausted"]))
        info = led.dataset("mix")
        report = led.verify()
        assert report.ok, report.problems
        (totals,) = report.datasets
        assert (info.charged_epsilon, info.charged_delta) == (totals.charged_epsilon,
                                                              totals.charged_delta)
        assert (info.reserved_epsilon, info.reserved_delta) == (totals.reserved_epsilon,
                                                                totals.reserved_delta)
        assert info.n_runs == len(totals.runs) == 14

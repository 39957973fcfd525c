"""Shared helpers for the ledger tests."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget, Cost
from accounting.entries import EntryDraft
from accounting.ledger import Ledger
from accounting.mechanisms import Gaussian, Laplace
from accounting.relations import Relation

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"


def draft(mech: Any, purpose: str, relation: Relation = Relation.REPLACE_ONE) -> EntryDraft:
    """The entry a Session would hand to its recorder for ``mech``."""
    return EntryDraft(
        mechanism=mech.kind,
        params=mech.public_params(),
        sensitivity=mech.sensitivity,
        relation=relation,
        cost=mech.cost(relation),
        purpose=purpose,
        seed_explicit=False,
    )


def laplace_draft(epsilon: float = 0.25, sensitivity: float = 1.0, purpose: str = "count",
                  relation: Relation = Relation.REPLACE_ONE) -> EntryDraft:
    mech = Laplace(sensitivity=sensitivity, epsilon=epsilon, relation=relation)
    entry = draft(mech, purpose, relation)
    assert entry.cost == Cost.pure(epsilon)
    return entry


def gaussian_draft(sigma: float = 4.0, l2: float = 1.0) -> EntryDraft:
    entry = draft(Gaussian(l2_sensitivity=l2, sigma=sigma), "sum")
    assert entry.cost == Cost.zcdp(Fraction(l2) ** 2 / (2 * Fraction(sigma) ** 2))
    return entry


def state(path: Path) -> tuple[str, list[tuple[Any, ...]]]:
    """SHA-256 of the checkpointed database file and all entry rows."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute("SELECT * FROM entries ORDER BY seq").fetchall()
    finally:
        conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest(), rows


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(ledger_path: Path) -> Iterator[Ledger]:
    with Ledger.open(ledger_path, create=True) as led:
        led.register_dataset("survey-2024", Budget(2.0, 1e-6), Relation.REPLACE_ONE, "test data")
        yield led


def populate(led: Ledger) -> None:
    """A small ledger with two runs, outputs and a close."""
    run = led.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False, description="a")
    s1 = run.record(laplace_draft(0.25, purpose="count A"))
    run.record_output(s1, 12.5)
    run.record(laplace_draft(0.5, sensitivity=2.0, purpose="sum B"))
    run.close("completed")
    run2 = led.open_run("survey-2024", Budget(0.5, 1e-7), "zcdp", seed_explicit=True)
    run2.record(gaussian_draft(16.0))
    run2.close("budget-exhausted")


# ---------------------------------------------------------------------------------
# PostgreSQL: a throwaway cluster for the whole session, a fresh database per test
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PgLedger:
    """URLs of one freshly installed PostgreSQL ledger, per role."""

    admin: str
    analyst: str
    custodian: str
    database: str


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("the PostgreSQL ledger tests need psycopg: pip install 'dpcg[postgres]' "
                    "(bash .ci/setup --dev installs it)")
    from .pgcluster import Cluster, pg_bin

    bindir = pg_bin()
    if bindir is None:
        pytest.skip("the PostgreSQL ledger tests need Debian's postgresql server binaries "
                    "(/usr/lib/postgresql/*/bin/initdb, pg_ctl): apt-get install postgresql "
                    "(bash .ci/setup --dev installs it)")
    cluster = Cluster(bindir)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg(pg_cluster: Any) -> PgLedger:
    """A new database with the ledger installed (roles dpcg_analyst, dpcg_custodian;
    analysts may register new ids, as in a team without a custodian)."""
    from accounting.ledger.postgres import install_schema

    db = pg_cluster.new_database()
    install_schema(pg_cluster.url(db), analysts_register=True)
    return PgLedger(pg_cluster.url(db), pg_cluster.url(db, "dpcg_analyst"),
                    pg_cluster.url(db, "dpcg_custodian"), db)

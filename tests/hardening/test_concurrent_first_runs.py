"""16 concurrent first runs on a new dataset id (issue 19, item 3 wired into every private
run): registration and the lifetime check are one transaction, so no run fails with a
spurious DuplicateDatasetError and exactly the admitted runs are charged.

Since issue 55 a closed run is charged what it spent (this laplace-pc run: half of its
eps 1), so a run that closes returns budget that a later one may use: how many of the 16
are admitted depends on how they interleave (at least 5: five reservations of 1 always
fit). What must hold whatever the interleaving: every run-open in the chain fitted the
charges before it (``verify``), and the final charge fits the lifetime."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from accounting.costs import Budget
from accounting.ledger import Ledger
from tests.engine_room import private_run
from tests.hardening.helpers import row_counts

RUNS, LIFETIME = 16, 5


def _one(path: str) -> str:
    from accounting.errors import AccountingError
    from dpcg.datasets import load_network
    from dpcg.private.ledger import LedgerTarget

    data = load_network("cancer").sample(300, 0)
    target = LedgerTarget(Path(path), "shared-new-id", Budget(LIFETIME, 1e-5), True)
    try:
        private_run(data, "laplace-pc", epsilon=1.0, delta=1e-6, ledger=target, max_depth=0,
                    seed=1)
    except AccountingError as exc:
        return type(exc).__name__
    return "ok"


def test_concurrent_first_runs(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    Ledger.open(path, create=True).close()
    with mp.get_context("fork").Pool(8) as pool:
        outcomes = pool.map(_one, [str(path)] * RUNS)
    admitted = outcomes.count("ok")
    assert admitted >= LIFETIME
    assert set(outcomes) <= {"ok", "BudgetExceededError"}  # never DuplicateDatasetError
    counts = row_counts(path)
    assert counts["datasets"] == 1
    assert counts["runs"] == admitted
    led = Ledger.open(path)
    try:
        report = led.verify()  # checks every reservation against the charges before it
        assert report.ok, report.problems
        (ds,) = report.datasets
        assert ds.charged_epsilon <= LIFETIME
        assert all(r.status == "completed" for r in report.runs)
        assert ds.charged_epsilon == sum((r.spent_epsilon or 0 for r in report.runs), 0)
    finally:
        led.close()

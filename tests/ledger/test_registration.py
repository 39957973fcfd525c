"""Atomic dataset registration: ``Ledger.ensure_dataset`` (check and insert in one
``BEGIN IMMEDIATE`` transaction), in-process and with racing real processes."""

from __future__ import annotations

import subprocess
import time
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.costs import Budget
from accounting.errors import (
    BudgetExceededError,
    DatasetConflictError,
    InvalidParameterError,
)
from accounting.ledger import Ledger
from accounting.relations import Relation

from .conftest import PYTHON, ROOT, laplace_draft, state


def test_registers_a_new_id_once(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, create=True) as led:
        info, created = led.ensure_dataset("fresh", Budget(2.0, 1e-6), Relation.ADD_REMOVE,
                                           "first")
        assert created
        assert info == led.dataset("fresh")
        assert info.lifetime_epsilon == 2
        assert info.relation is Relation.ADD_REMOVE
        assert led.entry_count() == 1
        again, created = led.ensure_dataset("fresh", Budget(9.0), Relation.ADD_REMOVE, "other")
        assert not created
        assert again == info  # the lifetime and description are never changed
        assert led.entry_count() == 1
        assert led.verify().ok


def test_existing_id_keeps_its_lifetime_and_spending(ledger: Ledger) -> None:
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    run.close()
    info, created = ledger.ensure_dataset("survey-2024", Budget(100.0))
    assert not created
    assert info.lifetime_epsilon == 2
    assert info.reserved_epsilon == Fraction(1, 2)
    assert info.n_runs == 1


def test_another_relation_is_a_conflict_and_writes_nothing(ledger: Ledger,
                                                           ledger_path: Path) -> None:
    before = state(ledger_path)
    with pytest.raises(DatasetConflictError, match="replace-one relation, not add-remove"):
        ledger.ensure_dataset("survey-2024", Budget(2.0, 1e-6), Relation.ADD_REMOVE)
    assert state(ledger_path) == before


def test_for_run_refuses_a_lifetime_too_small_without_registering(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, create=True) as led:
        with pytest.raises(BudgetExceededError, match="nothing was registered"):
            led.ensure_dataset("small", Budget(0.5), for_run=Budget(1.0))
        assert not led.has_dataset("small")
        assert led.entry_count() == 0
        with pytest.raises(BudgetExceededError):  # delta too
            led.ensure_dataset("small", Budget(1.0), for_run=Budget(1.0, 1e-9))
        assert led.entry_count() == 0
        info, created = led.ensure_dataset("small", Budget(1.0), for_run=Budget(1.0))
        assert created
        assert info.lifetime_epsilon == 1


def test_for_run_checks_the_remaining_budget_of_an_existing_id(ledger: Ledger,
                                                               ledger_path: Path) -> None:
    run = ledger.open_run("survey-2024", Budget(1.5), "basic", seed_explicit=False)
    run.record(laplace_draft(1.5))  # spent in full: no refund at close
    run.close()
    before = state(ledger_path)
    with pytest.raises(BudgetExceededError, match="remaining lifetime"):
        ledger.ensure_dataset("survey-2024", Budget(2.0, 1e-6), for_run=Budget(1.0))
    assert state(ledger_path) == before
    info, created = ledger.ensure_dataset("survey-2024", Budget(2.0, 1e-6),
                                          for_run=Budget(0.5))
    assert not created
    assert info.remaining_epsilon == Fraction(1, 2)


@pytest.mark.parametrize(("args", "parameter"), [
    (("", Budget(1.0)), "dataset_id"),
    (("x", 1.0), "lifetime"),
    (("x", Budget(1.0), "no-such-relation"), None),
])
def test_bad_arguments_write_nothing(ledger_path: Path, args: tuple[object, ...],
                                     parameter: str | None) -> None:
    with Ledger.open(ledger_path, create=True) as led:
        with pytest.raises(InvalidParameterError) as info:
            led.ensure_dataset(*args)  # type: ignore[arg-type]
        if parameter is not None:
            assert info.value.parameter == parameter
        assert led.entry_count() == 0


# ---------------------------------------------------------------------------------
# Real processes: 16 concurrent first runs on a new dataset id
# ---------------------------------------------------------------------------------
_FIRST_RUN = """
import os, sys, time
from accounting.costs import Budget
from accounting.entries import EntryDraft
from accounting.errors import BudgetExceededError
from accounting.ledger import Ledger
from accounting.mechanisms import Laplace
from accounting.relations import Relation

path, go, name, lifetime = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
while not os.path.exists(go):
    time.sleep(0.002)
# a first run of a new dataset, as the CLI run sequence does it: create the ledger,
# ensure the dataset is registered, reserve the run, record its releases, close it
led = Ledger.open(path, create=True, timeout=120)
led.ensure_dataset("new-dataset", Budget(lifetime), Relation.REPLACE_ONE, "first run")
try:
    run = led.open_run("new-dataset", Budget(0.125), "basic", seed_explicit=False,
                       description=name)
except BudgetExceededError:
    print("refused", flush=True)
    sys.exit(0)
mech = Laplace(sensitivity=1.0, epsilon=0.0625)
for j in range(2):
    run.record(EntryDraft(mech.kind, mech.public_params(), mech.sensitivity,
                          Relation.REPLACE_ONE, mech.cost(Relation.REPLACE_ONE),
                          f"{name} release {j}", False))
run.close("completed")
print("admitted", flush=True)
"""

N_PROCESSES = 16
ADMITTED = 5  # the lifetime admits exactly this many runs of 0.125


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_concurrent_first_runs_on_a_new_id(tmp_path: Path, trial: int) -> None:
    """16 processes start their first run on a dataset id nobody registered yet (and on
    a ledger file that does not exist yet). None fails spuriously; exactly the runs the
    lifetime admits are admitted, and exactly those are charged."""
    path = tmp_path / f"trial-{trial}.db"
    go = tmp_path / "go"
    lifetime = ADMITTED * 0.125
    procs = [
        subprocess.Popen([str(PYTHON), "-c", _FIRST_RUN, str(path), str(go), f"p{i}",
                          repr(lifetime)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for i in range(N_PROCESSES)
    ]
    time.sleep(0.5)  # let every process reach the start line
    go.touch()
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err  # a spurious DuplicateDatasetError would land here
        outcomes.append(out.strip())
    assert sorted(outcomes) == ["admitted"] * ADMITTED + ["refused"] * (N_PROCESSES - ADMITTED)
    with Ledger.open(path) as led:
        report = led.verify()
        assert report.ok, report.problems
        (ds,) = report.datasets
        assert ds.lifetime_epsilon == Fraction(ADMITTED, 8)
        assert ds.reserved_epsilon == ds.lifetime_epsilon  # exactly the admitted runs
        assert len(report.runs) == ADMITTED
        assert all(r.status == "completed" and r.entries == 2 for r in report.runs)
        assert sum((r.spent_epsilon or 0 for r in report.runs), Fraction(0)) \
            == ADMITTED * Fraction(1, 8)
        kinds = [e["kind"] for e in led.entries()]
        assert kinds.count("dataset") == 1  # one registration, no duplicates
        assert len(kinds) == 1 + ADMITTED * 4

"""Crash and concurrency behaviour with real processes."""

from __future__ import annotations

import signal
import subprocess
import time
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.costs import Budget
from accounting.errors import BudgetExceededError
from accounting.ledger import Ledger

from .conftest import PYTHON, ROOT, laplace_draft

_PRELUDE = """
import sys
from accounting.costs import Budget
from accounting.entries import EntryDraft
from accounting.errors import BudgetExceededError
from accounting.ledger import Ledger
from accounting.mechanisms import Laplace
from accounting.relations import Relation

def draft(eps, purpose):
    mech = Laplace(sensitivity=1.0, epsilon=eps)
    return EntryDraft(mech.kind, mech.public_params(), mech.sensitivity,
                      Relation.REPLACE_ONE, mech.cost(Relation.REPLACE_ONE), purpose, False)
"""

_KILLED = _PRELUDE + """
led = Ledger.open(sys.argv[1])
run = led.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False,
                   description="doomed")
i = 0
while True:
    run.record(draft(2.0 ** -20, f"query {i}"))
    i += 1
    if i == 20:
        print(run.run_id, flush=True)
"""

_WORKER = _PRELUDE + """
import os, time
path, go, name = sys.argv[1], sys.argv[2], sys.argv[3]
while not os.path.exists(go):
    time.sleep(0.005)
led = Ledger.open(path, timeout=120)
for attempt in range(4):
    try:
        run = led.open_run("shared", Budget(0.125), "basic", seed_explicit=False,
                           description=f"{name}/{attempt}")
    except BudgetExceededError:
        print("refused", flush=True)
        continue
    for j in range(4):  # spends the whole reservation: nothing to refund
        run.record(draft(2.0 ** -5, f"{name} {attempt} {j}"))
    run.close("completed")
    print("ok", flush=True)
"""


def test_killed_run_keeps_its_reservation(ledger: Ledger, ledger_path: Path) -> None:
    proc = subprocess.Popen(
        [str(PYTHON), "-c", _KILLED, str(ledger_path)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        assert run_id, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)  # let it keep recording, then kill it mid-loop
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with Ledger.open(ledger_path) as led:
        report = led.verify()
        assert report.ok, report.problems
        (run,) = report.runs
        assert run.run_id == run_id
        assert run.status == "open"  # never closed
        assert run.entries >= 20
        assert run.spent_epsilon == Fraction(run.entries, 2**20)
        info = led.dataset("survey-2024")
        assert info.reserved_epsilon == 1  # the whole reservation stays counted
        with pytest.raises(BudgetExceededError):
            led.open_run("survey-2024", Budget(1.5), "basic", seed_explicit=False)
        led.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
        assert led.verify().ok


def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with Ledger.open(path, create=True) as led:
        led.register_dataset("shared", Budget(2.0))
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([str(PYTHON), "-c", _WORKER, str(path), str(go), f"w{i}"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    time.sleep(0.3)
    go.touch()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.extend(out.split())
    assert len(outputs) == 32
    # 2.0 / 0.125 = 16 runs fit exactly; every other attempt is refused
    assert outputs.count("ok") == 16
    assert outputs.count("refused") == 16
    with Ledger.open(path) as led:
        report = led.verify()
        assert report.ok, report.problems
        (ds,) = report.datasets
        assert ds.reserved_epsilon == 2
        assert len(report.runs) == 16
        assert all(r.status == "completed" and r.entries == 4 for r in report.runs)
        assert report.entries == 1 + 16 * 6
        assert sum((r.budget_epsilon for r in report.runs), Fraction(0)) <= 2


_CREATOR = _PRELUDE + """
import os, time
from accounting.errors import DuplicateDatasetError
path, go = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.005)
led = Ledger.open(path, create=True)
try:
    led.register_dataset("d", Budget(1.0))
    print("registered", led.ledger_id)
except DuplicateDatasetError:
    print("duplicate", led.ledger_id)
"""


def test_concurrent_creation_makes_one_ledger(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([str(PYTHON), "-c", _CREATOR, str(path), str(go)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    time.sleep(0.3)
    go.touch()
    lines = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        lines.append(out.split())
    assert sorted(word for word, _ in lines) == ["duplicate"] * 5 + ["registered"]
    assert len({ledger_id for _, ledger_id in lines}) == 1
    with Ledger.open(path) as led:
        assert led.verify().ok
        assert led.entry_count() == 1


_OPEN_AND_CLOSE = _PRELUDE + """
led = Ledger.open(sys.argv[1])
run = led.open_run("shared", Budget(0.125), "basic", seed_explicit=False, description="other")
run.record(draft(2.0 ** -5, "other process"))
run.close("completed")
led.close()
print("closed", flush=True)
"""


def test_a_second_open_in_one_process_keeps_its_locks(tmp_path: Path) -> None:
    """Regression: opening the same ledger twice in one process used to read the file's
    header with a Python file object; closing that descriptor dropped every POSIX lock
    the process held on the database, so another process closing its connection took
    itself for the last one and deleted the WAL under the first connection (SQLite:
    "disk I/O error"). Seen in `dpcg bench private` with two jobs sharing a ledger."""
    path = tmp_path / "shared.db"
    with Ledger.open(path, create=True) as led:
        led.register_dataset("shared", Budget(2.0))
    first = Ledger.open(path)
    run = first.open_run("shared", Budget(0.25), "basic", seed_explicit=False,
                         description="long run")
    run.record(laplace_draft(2.0 ** -5, purpose="first"))
    second = Ledger.open(path)  # e.g. the next run while the previous one is still open
    proc = subprocess.run([str(PYTHON), "-c", _OPEN_AND_CLOSE, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    run.record(laplace_draft(2.0 ** -5, purpose="first, after the other process closed"))
    # what the first connection wrote is visible to other processes and to a new
    # connection of this process while the first is still open
    count = subprocess.run([str(PYTHON), "-c", _COUNT, str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert count.returncode == 0, count.stderr
    assert count.stdout.split() == ["2", "2"]  # runs; mechanism entries of the first run
    with Ledger.open(path) as third:
        assert third.verify().ok
    run.close("completed")
    second.close()
    first.close()
    with Ledger.open(path) as led:
        report = led.verify()
        assert report.ok, report.problems
        assert len(report.runs) == 2


_COUNT = _PRELUDE + """
led = Ledger.open(sys.argv[1])
rep = led.verify()
assert rep.ok, rep.problems
first = [r for r in rep.runs if r.status == "open"]
print(len(rep.runs), first[0].entries if first else -1)
"""


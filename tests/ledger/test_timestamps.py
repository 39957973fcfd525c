"""Entry timestamps are not a side channel (issue 19; docs/privacy/threat-model.md).

Every entry of a run carries the run's OPEN time, whatever happens between its
batches, so the ledger records when a run started and nothing about how long its
releases took; a dataset registration keeps its own registration time. Ledgers written
before (one commit time per batch) still verify: the timestamp is hashed as stored.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from accounting.costs import Budget
from accounting.ledger import Ledger
from accounting.relations import Relation

from .conftest import gaussian_draft, laplace_draft


def _times(led: Ledger) -> list[tuple[str, str | None, str]]:
    return [(e["kind"], e["run_id"], e["timestamp"]) for e in led.entries()]


def test_every_entry_of_a_run_carries_its_open_time(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, create=True) as led:
        led.register_dataset("d", Budget(4.0, 1e-6), Relation.REPLACE_ONE)
        time.sleep(0.02)
        run = led.open_run("d", Budget(2.0), "basic", seed_explicit=False)
        seqs: list[int] = []
        for batch in range(3):  # several batches, each after a (data-dependent) delay
            time.sleep(0.05)
            seqs += run.record_many([laplace_draft(0.1, purpose=f"b{batch}/{i}")
                                     for i in range(2)])
            time.sleep(0.05)
            run.record_output(seqs[-1], 0.5 * batch)
        time.sleep(0.05)
        run.record(laplace_draft(0.1, purpose="single"))
        time.sleep(0.05)
        run.close("completed")
        entries = _times(led)
        assert led.verify().ok
    (kind0, _, registered), *rest = entries
    assert kind0 == "dataset"
    assert [k for k, _, _ in rest] == ["run-open", *["mechanism", "mechanism", "output"] * 3,
                                       "mechanism", "run-close"]
    stamps = {t for _, _, t in rest}
    assert stamps == {run.opened_at}  # identical, despite ~0.4 s of sleeps in between
    assert datetime.fromisoformat(registered) < datetime.fromisoformat(run.opened_at)


def test_each_run_has_its_own_open_time(ledger_path: Path) -> None:
    with Ledger.open(ledger_path, create=True) as led:
        led.register_dataset("d", Budget(4.0, 1e-6), Relation.REPLACE_ONE)
        first = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
        time.sleep(0.02)
        second = led.open_run("d", Budget(1.0, 1e-7), "zcdp", seed_explicit=True)
        time.sleep(0.02)
        first.record(laplace_draft(0.25))  # interleaved: each keeps its own time
        second.record(gaussian_draft(16.0))
        second.close("completed")
        first.close("completed")
        by_run: dict[str | None, set[str]] = {}
        for _, run_id, stamp in _times(led):
            by_run.setdefault(run_id, set()).add(stamp)
    assert by_run[first.run_id] == {first.opened_at}
    assert by_run[second.run_id] == {second.opened_at}
    assert first.opened_at < second.opened_at  # ISO 8601 UTC, same format: text order


def test_ledgers_with_per_commit_times_still_verify(ledger_path: Path) -> None:
    """The format before: each commit stamped with its own time (same hash format)."""
    with Ledger.open(ledger_path, create=True) as led:
        led.register_dataset("d", Budget(4.0, 1e-6), Relation.REPLACE_ONE)
        run = led.open_run("d", Budget(2.0), "basic", seed_explicit=False)
        for i in range(3):
            time.sleep(0.01)
            run._opened_at = datetime.now().astimezone().isoformat()  # the old writer
            seq = run.record(laplace_draft(0.1, purpose=f"t{i}"))
            run.record_output(seq, float(i))
        run.close("completed")
        assert len({t for _, r, t in _times(led) if r == run.run_id}) == 4
        report = led.verify()
    assert report.ok, report.problems
    with Ledger.open(ledger_path) as again:
        assert again.verify().ok

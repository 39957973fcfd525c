"""Glue between the ledger and :class:`accounting.session.Session`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from accounting.costs import Budget
from accounting.entries import RunRecorder
from accounting.errors import AccountingError
from accounting.session import Session

if TYPE_CHECKING:
    from accounting.ledger.backend import LedgerBackend as Ledger


def session_for_run(ledger: Ledger, dataset_id: str, budget: Budget, rule: str,
                    seed: int | None = None, description: str = "",
                    store_outputs: bool = False,
                    wrap: Callable[[RunRecorder], RunRecorder] | None = None) -> Session:
    """Reserve ``budget`` for a new run of ``dataset_id`` and return a session recording it.

    The session's arguments are validated first (a throw-away session without a
    recorder), so bad input reserves nothing. The run uses the dataset's relation and
    is marked seed-explicit when ``seed`` is given. Close the session (``session.close``)
    to close the run; a run never closed keeps its reservation (no refunds).
    ``wrap`` decorates the run's recorder (e.g. a counter of entries by mechanism); the
    session records through what it returns.
    """
    relation = ledger.dataset(dataset_id).relation
    probe = Session(budget, rule=rule, relation=relation, seed=seed,
                    store_outputs=store_outputs)  # validation only; reserves nothing
    run = ledger.open_run(dataset_id, budget, rule, seed_explicit=probe.seed_explicit,
                          description=description)
    try:
        recorder = run if wrap is None else wrap(run)
        return Session(budget, rule=rule, relation=relation, recorder=recorder, seed=seed,
                       store_outputs=store_outputs)
    except AccountingError:
        run.close("error")
        raise
